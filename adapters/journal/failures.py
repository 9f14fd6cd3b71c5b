"""The one place where SQLite's errors become typed journal errors; adapter layer.

SQLite reports a damaged file as `sqlite3.DatabaseError` ("database disk image is
malformed", "file is not a database", ...) and a held lock as `OperationalError`; the
eventsourcing library wraps both in its own classes. `translated` turns either into
`JournalCorruptError` or `JournalBusyError`, naming the file and the operation that failed,
and lets every other error (a conflict, a mistake in a query) pass unchanged. A file found
damaged is remembered, and `refuse_if_damaged` stops every later write to it.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from adapters.errors import JournalBusyError, JournalCorruptError, JournalError

CORRUPT_SIGNS = ("disk image is malformed", "malformed database schema", "is not a database")
"""Words of SQLite's messages for a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB)."""
BUSY_SIGNS = ("locked", "busy", "readonly", "unable to open", "disk I/O")
"""Words of SQLite's messages for a file held or refused by the system, not damaged."""
RECOVERY_HINT = "nothing was written to it; see Recovery in docs/journal.md"


def _sqlite_cause(error: BaseException) -> BaseException:
    """The sqlite3 error behind `error` (the library's wrappers keep it as their cause)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, sqlite3.Error):
            return seen
        seen = seen.__cause__
    return error


def sqlite_error_text(error: BaseException) -> str:
    """SQLite's own message for `error`, without the wrappers' decoration."""
    return str(_sqlite_cause(error))


_DAMAGED: dict[str, str] = {}
"""The files this process found damaged, each with the first message about it."""


def _key(path: Path) -> str:
    return os.path.realpath(path)


def corrupt_error(path: Path, doing: str, what: str) -> JournalCorruptError:
    """The error for a damaged journal: which file, which operation, what SQLite said.

    The file is remembered as damaged: from then on this process writes nothing to it.
    """
    message = f"journal {path} is damaged: {doing}: {what}; {RECOVERY_HINT}"
    _DAMAGED.setdefault(_key(path), message)
    return JournalCorruptError(message)


def refuse_if_damaged(path: Path) -> None:
    """Raise JournalCorruptError if this process already found `path` damaged.

    Every writer calls this before it writes, so a file that failed a check once is never
    written again by this process, whichever part of it met the damage.
    """
    if not _DAMAGED:
        return  # the common case, without resolving the path on every commit
    known = _DAMAGED.get(_key(path))
    if known is not None:
        raise JournalCorruptError(known)


def forget_damage(path: Path) -> None:
    """Let this process write to `path` again: for a file replaced by a whole copy."""
    _DAMAGED.pop(_key(path), None)


def is_damage(error: BaseException) -> bool:
    """Whether `error` says the file is damaged (rather than held, refused or misused)."""
    cause = _sqlite_cause(error)
    text = str(cause)
    return type(cause) is sqlite3.DatabaseError or any(sign in text for sign in CORRUPT_SIGNS)


def classify(error: BaseException, path: Path, doing: str) -> JournalError | None:
    """The typed error for a database failure of `path` while `doing`, or None if not one."""
    cause = _sqlite_cause(error)
    conflict: tuple[type[Exception], ...] = (
        sqlite3.IntegrityError,
        sqlite3.ProgrammingError,
        *_library("IntegrityError"),
    )
    if isinstance(cause, conflict):
        return None  # a conflict or a misuse: the caller's business, not the file's state
    text = str(cause)
    if is_damage(cause):
        return corrupt_error(path, doing, text)
    if any(sign in text for sign in BUSY_SIGNS):
        return JournalBusyError(f"journal {path} is busy or unwritable: {doing}: {text}")
    return None


def _library(name: str) -> tuple[type[Exception], ...]:
    """The event store library's error class `name`, once the library is loaded.

    Before it is loaded none of its errors can be raised, so a reader that never loads it
    (the session list on current read models) need not import it to catch them.
    """
    persistence = sys.modules.get("eventsourcing.persistence")
    return () if persistence is None else (getattr(persistence, name),)


@contextmanager
def translated(path: Path, doing: str) -> Iterator[None]:
    """Raise a damaged or held database file as a typed error naming `path` and `doing`."""
    try:
        yield
    except Exception as error:
        # The library's class is looked up as the error is caught: the block may load it.
        if not isinstance(error, (sqlite3.DatabaseError, *_library("DatabaseError"))):
            raise
        typed = classify(error, path, doing)
        if typed is None:
            raise
        raise typed from None
