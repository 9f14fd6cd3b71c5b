"""The session list served straight from a session catalog that is already current.

`session list` is asked far more often than the journal changes. When every read model
stands at the head of the log in the version this code writes, nothing needs catching up,
so the listing is the catalog's query and the streams' lengths, read with sqlite3 alone:
neither the journal's code nor the projections' is loaded. Whenever that is not certain (no
journal yet, a header this path does not know, a read model behind or of another version, a
session filter to resolve, any SQLite error), `current_sessions` answers None and the caller
takes the ordinary path, which checks, catches up and reports exactly as before. A home with
a config file has it checked first, as every read command does. Adapter layer.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from adapters.api.catalog_queries import CatalogQueries
from adapters.api.filters import Filters
from adapters.api.read_models import Rows
from adapters.errors import NotAJournalError
from adapters.home import Home
from adapters.journal.event_log import SqliteEventLog
from adapters.journal.header import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    companions,
    read_header,
    truncation,
    wal_has_content,
)

PROJECTION_VERSIONS = {
    "sessions": 3,
    "working_context": 1,
    "authorization_audit": 4,
    "file_activity": 2,
    "daily_stats": 2,
    "devices": 2,
}
"""Each read model's name and code version, as projections/registry.py has them.

Kept here so that knowing whether the read models are current loads no projection; a test
keeps it equal to the registry, so a version bumped there fails the suite until it is here.
"""
_POSITIONS = "projection_positions"


class NotCurrentError(Exception):
    """The read models cannot answer alone: the ordinary path must (never shown to a user)."""


def _config_checked(home: Home) -> None:
    """Check the home's config file as every read command does, when there is one."""
    if not os.path.lexists(home.config):
        return  # no file means the defaults, which have nothing to check
    # Loaded only for a home that has a config file to check.
    from adapters.config.loading import checked_roots, load_config  # noqa: PLC0415

    checked_roots(load_config(home.config), home.config)


@contextmanager
def _reading(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection that leaves nothing beside a file without `-wal` or `-shm`.

    As adapters/journal/integrity.py reads: without companions nobody has the file open, and
    all it holds is in the main file.
    """
    mode = "ro" if companions(path) else "ro&immutable=1"
    uri = f"{path.absolute().as_uri()}?mode={mode}"
    with closing(sqlite3.connect(uri, uri=True, timeout=5, isolation_level=None)) as db:
        yield db


class _CurrentJournal:
    """The journal as far as a listing from current read models needs it."""

    exists = True

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.log = SqliteEventLog(path, connection=db)

    def resolve_session(self, text: str) -> object:
        """Never asked: a listing with a session filter takes the ordinary path."""
        raise NotCurrentError(text)


class _CurrentCatalog(CatalogQueries):
    """The catalog's queries on one connection, inside one read transaction."""

    def __init__(self, home: Home, db: sqlite3.Connection) -> None:
        super().__init__(home, _CurrentJournal(home.database, db), ())
        self.db = db

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.db.row_factory = sqlite3.Row
        try:
            yield self.db
        finally:
            self.db.row_factory = None


def _recognised(home: Home) -> bool:
    """Whether the journal's header is one this path reads without the journal's checks."""
    path = home.database
    if not path.is_file():
        return False
    try:
        header = read_header(path)
        if header is None or header.application_id != APPLICATION_ID:
            return False
        if wal_has_content(path):
            return True  # the schema version is read from SQLite below
        return header.user_version == SCHEMA_VERSION and truncation(path, header) is None
    except (NotAJournalError, OSError):
        return False  # the ordinary path says what is wrong with it


def _current(path: Path, db: sqlite3.Connection) -> bool:
    """Whether every read model stands at the head of the log in this code's version."""
    if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
        return False
    stored = {
        name: (version, position)
        for name, version, position in db.execute(
            f"SELECT name, version, position FROM {_POSITIONS}"  # noqa: S608 - fixed table name
        )
    }
    head = SqliteEventLog(path, connection=db).head()
    return all(stored.get(name) == (version, head) for name, version in PROJECTION_VERSIONS.items())


def current_sessions(home: Home, filters: Filters, *, oldest_first: bool = False) -> Rows | None:
    """The rows `Audit.sessions` would give, when the read models are current; else None.

    None says nothing about the journal: the ordinary path decides what it holds or why it
    is refused. The home's config file is checked first, and its errors are raised as usual.
    """
    if filters.session is not None or not home.root.is_dir():
        return None
    _config_checked(home)
    if not _recognised(home):
        return None
    try:
        with _reading(home.database) as db:
            db.execute("BEGIN")
            if not _current(home.database, db):
                return None
            return _CurrentCatalog(home, db).sessions(filters, oldest_first=oldest_first)
    except (sqlite3.Error, NotCurrentError):
        return None
