"""Recognising, creating and version-checking the journal database file; adapter layer.

The SQLite header carries an application id and a user version. The header bytes are read
directly first, so a file that is not SQLite, belongs to another program, is truncated or has
a newer schema is never opened by SQLite and gains no `-wal` or `-shm` companion. A journal
that passes is probed (adapters/journal/integrity.py) before anyone reads or writes it. A
missing or empty file becomes a fresh journal, created owner-only; a journal without tables
yet reads as one with no events.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from adapters.errors import JournalBusyError, NewerSchemaError, NotAJournalError
from adapters.journal.event_log import EVENTS_TABLE
from adapters.journal.failures import corrupt_error, translated
from adapters.journal.header import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    Header,
    read_header,
    truncation,
    wal_has_content,
)
from adapters.journal.integrity import probe, read_only

JOURNAL_MODE = 0o600
"""The journal holds everything a session did: it is readable by its owner only."""
OPENING = "opening it"


def _is_blank(path: Path, header: Header) -> bool:
    """Whether an unmarked database holds nothing yet (at most one page, no WAL content)."""
    return header.pages <= 1 and not wal_has_content(path)


def _current_user_version(path: Path, header: Header) -> int:
    """The schema version as SQLite sees it, including commits still in the WAL."""
    if not wal_has_content(path):
        return header.user_version  # everything is in the main file, header included
    with translated(path, "reading its schema version"), read_only(path) as conn:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _stamp_new(path: Path) -> None:
    # Created (or narrowed) owner-only before SQLite opens it, whatever the umask; SQLite
    # gives the `-wal` and `-shm` files the same mode.
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, JOURNAL_MODE)
        try:
            os.fchmod(descriptor, JOURNAL_MODE)
        finally:
            os.close(descriptor)
    except OSError as error:
        msg = f"cannot create journal {path}: {error.strerror or error}"
        raise JournalBusyError(msg) from None
    try:
        with closing(sqlite3.connect(path, timeout=5)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.commit()
    except sqlite3.OperationalError as error:
        msg = f"cannot create journal {path}: {error}"
        raise JournalBusyError(msg) from None


def _tables(path: Path) -> frozenset[str]:
    """The tables of the journal, after reading the root of every table and index."""
    with translated(path, OPENING), read_only(path) as db:
        failure = probe(db)
        if failure is not None:
            raise corrupt_error(path, OPENING, failure)
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return frozenset(name for (name,) in rows)


def _classify(path: Path) -> frozenset[str] | None:
    """Refuse `path` unless it is absent, empty or a journal this code can use; its tables."""
    if not path.exists():
        return None
    if not path.is_file():
        msg = f"{path} is not a regular file"
        raise NotAJournalError(msg)
    header = read_header(path)
    if header is None:
        return None
    if header.application_id == 0 and _is_blank(path, header):
        return None
    if header.application_id != APPLICATION_ID:
        msg = (
            f"{path} is an SQLite database but not a ledgerclaw journal "
            f"(application id {header.application_id:#x}); it was left untouched"
        )
        raise NotAJournalError(msg)
    if not wal_has_content(path) and (cut := truncation(path, header)):
        raise corrupt_error(path, OPENING, cut)
    header = header._replace(user_version=_current_user_version(path, header))
    if header.user_version > SCHEMA_VERSION:
        msg = (
            f"journal {path} has schema version {header.user_version}, newer than this "
            f"ledgerclaw understands ({SCHEMA_VERSION}); upgrade ledgerclaw. "
            "The journal was left untouched."
        )
        raise NewerSchemaError(msg)
    return _tables(path)


def prepare_journal_file(path: Path) -> bool:
    """Check that `path` is a ledgerclaw journal this code can use, creating it if absent.

    Returns True when a fresh journal was created. Raises NotAJournalError,
    NewerSchemaError or JournalCorruptError without writing anything to a file that is
    refused, and without leaving anything beside it.
    """
    if _classify(path) is None:
        _stamp_new(path)
        return True
    return False


def check_journal_file(path: Path) -> bool:
    """Read-only check of `path`: True if it is a journal with events to read.

    False when there is none yet, or only an empty one (stamped, without tables): both are
    read as a journal with no events. Raises like `prepare_journal_file`, but never creates
    or stamps anything.
    """
    tables = _classify(path)
    return tables is not None and EVENTS_TABLE in tables


def read_schema_version(path: Path) -> tuple[int, int]:
    """The application id and schema version recorded in `path`."""
    header = read_header(path)
    if header is None:
        return 0, 0
    return header.application_id, _current_user_version(path, header)
