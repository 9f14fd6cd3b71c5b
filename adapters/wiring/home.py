"""The one place that picks concrete classes for a home; adapter layer."""

from __future__ import annotations

from adapters.config.loading import checked_roots, load_config
from adapters.home import Home, check_home, ensure_home, resolve_home
from adapters.journal.event_log import SqliteEventLog
from adapters.journal.reader import JournalReader
from adapters.settings.config_file import Config
from domain.ports import EventLog, Journal


def current_home() -> Home:
    """The home this process works on (`LEDGERCLAW_HOME`, else `~/.ledgerclaw`)."""
    return resolve_home()


def home_config(home: Home) -> Config:
    """The validated configuration of `home`; refuses a `persistence` section.

    A configured root that is a file (not a directory) is refused here too, so every command
    says so, not only `config check` and a start.
    """
    config = load_config(home.config)
    checked_roots(config, home.config)
    return config


def open_reader(home: Home) -> JournalReader:
    """A read-only view of the journal; creates nothing, not even the home."""
    check_home(home)
    home_config(home)
    return JournalReader(home.database)


def open_event_log(home: Home) -> EventLog:
    """The journal's stored events, read-only; creates nothing."""
    return SqliteEventLog(home.database)


def open_journal(home: Home) -> Journal:
    """The writable journal of `home`, creating the home and journal if missing."""
    config = home_config(home)
    ensure_home(home)
    from adapters.journal.journal import SqliteJournal  # noqa: PLC0415 - writers only

    return SqliteJournal(home.database, config.journal)
