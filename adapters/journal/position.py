"""The journal's position read through one kept connection, for a process that asks often.

`SqliteEventLog` opens a connection per read so that a reader never holds the file. The
daemon holds it anyway (it is the writer) and stamps every event it pushes to a gateway
client with the journal's position, many times a second while a run streams: opening a
connection each time would cost more than the push itself. This reader keeps one
read-only connection for the process's life; each call is a fresh read, so it sees every
commit, this process's and any other's. Adapter layer.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from adapters.journal.event_log import EVENTS_TABLE

_HEAD = f"SELECT MAX(rowid) FROM {EVENTS_TABLE}"  # noqa: S608 - fixed table name


class KeptPosition:
    """A callable giving the journal's last position (0 when it holds no events yet)."""

    def __init__(self, path: Path) -> None:
        self._uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def __call__(self) -> int:
        """The position of the last committed event."""
        with self._lock:
            try:
                if self._connection is None:
                    self._connection = sqlite3.connect(
                        self._uri, uri=True, check_same_thread=False, isolation_level=None
                    )
                row = self._connection.execute(_HEAD).fetchone()
            except sqlite3.Error:
                # No file or no table yet: nothing journaled; the next call tries afresh.
                self.close()
                return 0
        return int(row[0] or 0)

    def close(self) -> None:
        """Close the kept connection; a later call opens another."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
