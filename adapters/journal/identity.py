"""Recognising, creating and version-checking the journal database file; adapter layer.

The SQLite header carries an application id and a user version. A file whose id is not
ledgerclaw's is refused before anything writes to it, and so is a file written by a newer
schema. A missing or empty file becomes a fresh journal.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from adapters.errors import JournalBusyError, NewerSchemaError, NotAJournalError

APPLICATION_ID = 0x4C434C57
"""'LCLW' in the SQLite header: marks the file as a ledgerclaw journal."""
SCHEMA_VERSION = 1
"""The journal layout this code writes and reads; kept in PRAGMA user_version."""


def _read_header(path: Path) -> tuple[int, int, int]:
    uri = f"{path.as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            user_version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.OperationalError as error:
        if "locked" in str(error):
            msg = f"journal {path} is locked by another process"
            raise JournalBusyError(msg) from None
        msg = f"{path} cannot be opened as a ledgerclaw journal: {error}"
        raise NotAJournalError(msg) from None
    except sqlite3.DatabaseError as error:
        msg = f"{path} is not a ledgerclaw journal: {error}"
        raise NotAJournalError(msg) from None
    return app_id, user_version, tables


def _stamp_new(path: Path) -> None:
    with closing(sqlite3.connect(path, timeout=5)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.commit()


def prepare_journal_file(path: Path) -> bool:
    """Check that `path` is a ledgerclaw journal this code can use, creating it if absent.

    Returns True when a fresh journal was created. Raises NotAJournalError or
    NewerSchemaError without writing anything to a file that is refused.
    """
    if path.exists() and not path.is_file():
        msg = f"{path} is not a regular file"
        raise NotAJournalError(msg)
    if not path.exists() or path.stat().st_size == 0:
        _stamp_new(path)
        return True
    app_id, user_version, tables = _read_header(path)
    if app_id == 0 and tables == 0:
        _stamp_new(path)
        return True
    if app_id != APPLICATION_ID:
        msg = (
            f"{path} is an SQLite database but not a ledgerclaw journal "
            f"(application id {app_id:#x}); it was left untouched"
        )
        raise NotAJournalError(msg)
    if user_version > SCHEMA_VERSION:
        msg = (
            f"journal {path} has schema version {user_version}, newer than this ledgerclaw "
            f"understands ({SCHEMA_VERSION}); upgrade ledgerclaw. The journal was left untouched."
        )
        raise NewerSchemaError(msg)
    return False


def read_schema_version(path: Path) -> tuple[int, int]:
    """The application id and schema version in `path`'s header."""
    app_id, user_version, _ = _read_header(path)
    return app_id, user_version


def check_journal_file(path: Path) -> bool:
    """Read-only check of `path`: True if it is a usable journal, False if it does not exist.

    Raises NotAJournalError or NewerSchemaError like `prepare_journal_file`, but never
    creates or stamps anything.
    """
    if not path.exists():
        return False
    if not path.is_file():
        msg = f"{path} is not a regular file"
        raise NotAJournalError(msg)
    if path.stat().st_size == 0:
        return False
    app_id, user_version, tables = _read_header(path)
    if app_id == 0 and tables == 0:
        return False
    if app_id != APPLICATION_ID:
        msg = f"{path} is an SQLite database but not a ledgerclaw journal (id {app_id:#x})"
        raise NotAJournalError(msg)
    if user_version > SCHEMA_VERSION:
        msg = (
            f"journal {path} has schema version {user_version}, newer than this ledgerclaw "
            f"understands ({SCHEMA_VERSION}); upgrade ledgerclaw"
        )
        raise NewerSchemaError(msg)
    return True
