"""The device registry's version, read without ever waiting, for checks on the loop; adapter layer.

The daemon keeps a copy of the device registry in memory and must notice, on the very next
request, that another process (`ledgerclaw devices revoke`) or the daemon itself changed it.
Every change of the registry (a pairing, a revocation, a sighting) appends one event to its
stream, and stored events are never updated or deleted, so the highest version in the
stream changes exactly when the registry does. This module reads that version with one
indexed statement on a kept read-only connection.

Why that is correct across processes: the journal is in WAL mode, and a statement outside
any transaction reads the latest committed state of the file as of its start. A `devices
revoke` that has returned has committed, so every request that begins after it sees the
new version and reloads the registry before it is answered.

Why it may run on the event loop: a WAL reader takes no lock a writer holds, and the
connection's busy timeout is zero, so in the rare case SQLite cannot answer at once (a
recovery or an exclusive lock in another process) the read fails at once instead of
waiting; the caller then checks the token the slow way, in a worker thread.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from adapters.journal.event_log import EVENTS_TABLE
from domain.devices.aggregate import REGISTRY_ID

_HEAD = f"SELECT max(originator_version) FROM {EVENTS_TABLE} WHERE originator_id = ?"  # noqa: S608 - fixed table name


class RegistryHead:
    """The registry stream's version on one kept connection; for one thread (the loop)."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self._db: sqlite3.Connection | None = None
        self._stream = (REGISTRY_ID.hex,)

    def version(self) -> int | None:
        """The registry's version now (0 before any pairing); None if it cannot say at once."""
        try:
            db = self._db or self._connect()
            rows = db.execute(_HEAD, self._stream).fetchall()
        except sqlite3.Error:
            # Busy, locked, not a journal yet, damaged: whoever asked reads the slow way,
            # which waits as long as the journal allows and raises a typed error.
            self.close()
            return None
        return int(rows[0][0] or 0) if rows else 0

    def close(self) -> None:
        """Release the connection (the next `version` opens another)."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def _connect(self) -> sqlite3.Connection:
        uri = f"{Path(self.database).resolve().as_uri()}?mode=ro"
        # isolation_level None: no statement opens a transaction, so none pins an old
        # snapshot between requests. timeout 0: never wait for a lock on the event loop.
        db = sqlite3.connect(
            uri, uri=True, timeout=0, isolation_level=None, check_same_thread=False
        )
        self._db = db
        return db
