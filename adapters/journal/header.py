"""The SQLite file header of the journal, read as bytes, and the files beside it; adapter layer.

Reading the first 100 bytes directly, not through SQLite, tells what a file is without
opening it: a file that is refused is never touched and gains no `-wal` or `-shm` companion.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

from adapters.errors import NotAJournalError

APPLICATION_ID = 0x4C434C57
"""'LCLW' in the SQLite header: marks the file as a ledgerclaw journal."""
SCHEMA_VERSION = 1
"""The journal layout this code writes and reads; kept in PRAGMA user_version."""

MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
COMPANION_SUFFIXES = ("-wal", "-shm")
"""The files SQLite keeps beside a database in WAL mode."""


class Header(NamedTuple):
    """The identifying fields of an SQLite database header."""

    application_id: int
    user_version: int
    pages: int
    """The database size in pages the header records (0 when it records none)."""
    page_size: int


def read_header(path: Path) -> Header | None:
    """The header of `path`, or None when the file is empty."""
    try:
        with path.open("rb") as file:
            raw = file.read(HEADER_SIZE)
    except OSError as error:
        msg = f"cannot read {path}: {error.strerror or error}"
        raise NotAJournalError(msg) from None
    if not raw:
        return None
    if len(raw) < HEADER_SIZE or not raw.startswith(MAGIC):
        msg = f"{path} is not a ledgerclaw journal (not an SQLite database); it was left untouched"
        raise NotAJournalError(msg)
    (page_size,) = struct.unpack(">H", raw[16:18])
    (change_counter,) = struct.unpack(">I", raw[24:28])
    (pages,) = struct.unpack(">I", raw[28:32])
    (valid_for,) = struct.unpack(">I", raw[92:96])
    (user_version,) = struct.unpack(">I", raw[60:64])
    (application_id,) = struct.unpack(">I", raw[68:72])
    # SQLite trusts the recorded size only while the change counter matches this field.
    recorded = pages if change_counter == valid_for else 0
    return Header(application_id, user_version, recorded, 65536 if page_size == 1 else page_size)


def companions(path: Path) -> list[Path]:
    """The `-wal` and `-shm` files that exist beside `path`."""
    beside = [path.with_name(path.name + suffix) for suffix in COMPANION_SUFFIXES]
    return [companion for companion in beside if companion.exists()]


def wal_has_content(path: Path) -> bool:
    """Whether a `-wal` file beside `path` may hold commits the main file lacks."""
    wal = path.with_name(path.name + "-wal")
    return wal.exists() and wal.stat().st_size > 0


def truncation(path: Path, header: Header) -> str | None:
    """What is missing when `path` is shorter than its header says, else None."""
    if header.pages == 0 or header.page_size == 0:
        return None
    expected = header.pages * header.page_size
    actual = path.stat().st_size
    if actual >= expected:
        return None
    return f"the file is truncated: {actual} bytes, its header records {expected}"
