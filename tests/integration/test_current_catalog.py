"""The session list from current read models: the same rows as the caught-up path, or none.

`current_sessions` answers only when it is sure; every other case must come back as None, so
that the ordinary path checks, catches up and reports. Real journals in `tmp_path`.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from adapters.api.current_catalog import current_sessions
from adapters.api.filters import Filters
from adapters.api.queries import open_audit
from adapters.errors import ConfigError
from adapters.home import Home
from adapters.journal.journal import SqliteJournal
from adapters.projections.runner import ProjectionRunner
from projections.registry import ALL_PROJECTIONS
from tests.builders import write_sample_session
from tests.integration.sqlite_helpers import companions


def catch_up(home: Home) -> None:
    """Bring every read model of `home` to the head of its journal."""
    ProjectionRunner(home.database, ALL_PROJECTIONS).catch_up()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    """A home with three sample sessions and its read models current."""
    home = Home(tmp_path / "home")
    home.root.mkdir()
    journal = SqliteJournal(home.database)
    for n in range(3):
        write_sample_session(journal, f"main:{n}")
    journal.close()
    catch_up(home)
    return home


def execute(home: Home, sql: str) -> None:
    """Run one statement on the journal file, as another program would."""
    with closing(sqlite3.connect(home.database)) as db:
        db.execute(sql)
        db.commit()


@pytest.mark.parametrize(
    "filters",
    [
        Filters(),
        Filters(limit=0),
        Filters(limit=1),
        Filters(since="1d"),
        Filters(until="2000-01-01"),
    ],
    ids=["default", "no-limit", "limit-1", "since", "until"],
)
@pytest.mark.parametrize("oldest_first", [True, False])
def test_current_read_models_give_the_rows_of_the_caught_up_path(
    home: Home, filters: Filters, oldest_first: bool
) -> None:
    """Every filter gives the rows, columns and event counts `Audit.sessions` gives."""
    expected = open_audit(home).sessions(filters, oldest_first=oldest_first)

    found = current_sessions(home, filters, oldest_first=oldest_first)

    assert found is not None
    assert (expected, expected.columns) == (found, found.columns)


def test_a_journal_ahead_of_its_read_models_is_left_to_the_ordinary_path(home: Home) -> None:
    """One event more than the read models applied, and the answer is None."""
    journal = SqliteJournal(home.database)
    write_sample_session(journal, "main:late")
    journal.close()

    assert current_sessions(home, Filters()) is None
    catch_up(home)
    assert current_sessions(home, Filters()) is not None


def test_a_read_model_of_another_version_is_left_to_the_ordinary_path(home: Home) -> None:
    """A stored version this code does not write means a rebuild: the answer is None."""
    execute(home, "UPDATE projection_positions SET version = version + 1 WHERE name = 'devices'")

    assert current_sessions(home, Filters()) is None


def test_a_session_filter_is_left_to_the_ordinary_path(home: Home) -> None:
    """Resolving a session prefix is the journal reader's work: the answer is None."""
    assert current_sessions(home, Filters(session="ses_0123")) is None


def test_a_home_without_a_journal_or_a_directory_is_left_to_the_ordinary_path(
    tmp_path: Path,
) -> None:
    """No home, an empty home, and a home that is a file all answer None, creating nothing."""
    missing, empty, file = Home(tmp_path / "missing"), Home(tmp_path / "empty"), tmp_path / "f"
    empty.root.mkdir()
    file.write_text("")

    for home in (missing, empty, Home(file)):
        assert current_sessions(home, Filters()) is None
    assert [] == list(empty.root.iterdir())
    assert not missing.root.exists()


@pytest.mark.parametrize(
    "spoil",
    [
        "PRAGMA user_version = 2",
        "PRAGMA application_id = 7",
    ],
    ids=["newer-schema", "foreign-database"],
)
def test_a_journal_this_path_does_not_know_is_left_alone(home: Home, spoil: str) -> None:
    """A newer schema or another program's mark answers None and leaves nothing beside it."""
    execute(home, spoil)
    execute(home, "PRAGMA wal_checkpoint(TRUNCATE)")
    with closing(sqlite3.connect(home.database)) as db:
        db.execute("PRAGMA journal_mode = DELETE")
    before = home.database.read_bytes()

    assert current_sessions(home, Filters()) is None
    assert before == home.database.read_bytes()
    assert [] == companions(home.database)


def test_a_journal_held_open_by_a_writer_is_read_from_its_wal(home: Home) -> None:
    """Commits still in the `-wal` file count: the rows match those of the caught-up path."""
    journal = SqliteJournal(home.database)
    try:
        write_sample_session(journal, "main:in-wal")
        catch_up(home)
        expected = open_audit(home).sessions(Filters(), oldest_first=True)

        found = current_sessions(home, Filters(), oldest_first=True)
    finally:
        journal.close()

    assert found is not None
    assert "main:in-wal" == found[-1]["session_key"]
    assert expected == found


def test_the_config_file_is_checked_first(home: Home) -> None:
    """A valid config changes nothing; a broken one raises the error every command raises."""
    home.config.write_text('[journal]\ndurability = "normal"\n')
    assert current_sessions(home, Filters()) is not None

    home.config.write_text('[journal]\ndurability = "sometimes"\n')
    with pytest.raises(ConfigError, match=r"journal\.durability"):
        current_sessions(home, Filters())
