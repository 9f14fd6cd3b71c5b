"""Recognising, creating and version-checking the journal database file; adapter layer.

The SQLite header carries an application id and a user version. The header bytes are read
directly first, so a file that is not SQLite or belongs to another program is never opened
by SQLite and gains no `-wal` or `-shm` companion. A missing or
empty file becomes a fresh journal.
"""

from __future__ import annotations

import sqlite3
import struct
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

from adapters.errors import JournalBusyError, NewerSchemaError, NotAJournalError

APPLICATION_ID = 0x4C434C57
"""'LCLW' in the SQLite header: marks the file as a ledgerclaw journal."""
SCHEMA_VERSION = 1
"""The journal layout this code writes and reads; kept in PRAGMA user_version."""

_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100


class Header(NamedTuple):
    """The identifying fields of an SQLite database header."""

    application_id: int
    user_version: int
    pages: int


def _read_header(path: Path) -> Header | None:
    """The header of `path`, or None when the file is empty."""
    try:
        with path.open("rb") as file:
            raw = file.read(_HEADER_SIZE)
    except OSError as error:
        msg = f"cannot read {path}: {error.strerror or error}"
        raise NotAJournalError(msg) from None
    if not raw:
        return None
    if len(raw) < _HEADER_SIZE or not raw.startswith(_MAGIC):
        msg = f"{path} is not a ledgerclaw journal (not an SQLite database); it was left untouched"
        raise NotAJournalError(msg)
    pages, user_version, application_id = (
        struct.unpack(">I", raw[28:32])[0],
        struct.unpack(">I", raw[60:64])[0],
        struct.unpack(">I", raw[68:72])[0],
    )
    return Header(application_id, user_version, pages)


def _is_blank(path: Path, header: Header) -> bool:
    """Whether an unmarked database holds nothing yet (at most one page, no WAL content)."""
    wal = path.with_name(path.name + "-wal")
    return header.pages <= 1 and not (wal.exists() and wal.stat().st_size > 0)


def _current_user_version(path: Path) -> int:
    """The schema version as SQLite sees it, including commits still in the WAL."""
    uri = f"{path.as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.OperationalError as error:
        msg = f"cannot read journal {path}: {error}"
        raise JournalBusyError(msg) from None
    except sqlite3.DatabaseError as error:
        msg = f"{path} is not a ledgerclaw journal: {error}"
        raise NotAJournalError(msg) from None


def _stamp_new(path: Path) -> None:
    try:
        with closing(sqlite3.connect(path, timeout=5)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.commit()
    except sqlite3.OperationalError as error:
        msg = f"cannot create journal {path}: {error}"
        raise JournalBusyError(msg) from None


def _classify(path: Path) -> Header | None:
    """Refuse `path` unless it is absent, empty or a journal this code can use."""
    if not path.exists():
        return None
    if not path.is_file():
        msg = f"{path} is not a regular file"
        raise NotAJournalError(msg)
    header = _read_header(path)
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
    header = header._replace(user_version=_current_user_version(path))
    if header.user_version > SCHEMA_VERSION:
        msg = (
            f"journal {path} has schema version {header.user_version}, newer than this "
            f"ledgerclaw understands ({SCHEMA_VERSION}); upgrade ledgerclaw. "
            "The journal was left untouched."
        )
        raise NewerSchemaError(msg)
    return header


def prepare_journal_file(path: Path) -> bool:
    """Check that `path` is a ledgerclaw journal this code can use, creating it if absent.

    Returns True when a fresh journal was created. Raises NotAJournalError or
    NewerSchemaError without writing anything to a file that is refused.
    """
    if _classify(path) is None:
        _stamp_new(path)
        return True
    return False


def check_journal_file(path: Path) -> bool:
    """Read-only check of `path`: True if it is a usable journal, False if there is none yet.

    Raises like `prepare_journal_file`, but never creates or stamps anything.
    """
    return _classify(path) is not None


def read_schema_version(path: Path) -> tuple[int, int]:
    """The application id and schema version recorded in `path`."""
    header = _read_header(path)
    if header is None:
        return 0, 0
    return header.application_id, _current_user_version(path)
