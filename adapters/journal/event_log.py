"""The journal's notification log read straight from its SQLite file; adapter layer.

This module holds every SQL statement over the events table: the log read in commit order
(positions are SQLite row ids, from 1), and streams read by id. Each call opens a read-only
connection and closes it, so a reader never holds the file beside a running writer (or reads
through a connection its owner holds open anyway: `through`). A file
without an events table yet reads as an empty log. Rows come back encoded (`LoggedEvent`);
decoding them is the reader's business.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from adapters.journal.failures import translated
from domain.logged import LoggedEvent, StreamSpan

EVENTS_TABLE = "stored_events"
"""The table the eventsourcing recorder keeps the events in."""
LAST_POSITION = 2**63 - 1
"""The largest row id SQLite can give; `upto` when none is given."""
_COLUMNS = "rowid, originator_id, originator_version, topic, state"
_NO_TABLE = "no such table"
Row = tuple[int, str, int, str, bytes]
"""A log row as SQLite returns it: position, stream id, version, topic, state (`LoggedEvent`'s
fields)."""
_logged = partial(tuple.__new__, LoggedEvent)
"""A fetched row as a `LoggedEvent`, built without a Python call per row."""


class SqliteEventLog:
    """The stored events of one journal file, read-only."""

    def __init__(
        self,
        path: Path,
        *,
        busy_timeout: float = 5.0,
        connection: sqlite3.Connection | None = None,
    ) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self.connection = connection
        """An open connection to `path` to read through, opened and closed by its owner;
        None opens one per call."""

    def through(self, connection: sqlite3.Connection) -> SqliteEventLog:
        """This log read through `connection`, an open connection to the same file.

        Whoever holds a connection to the file anyway (the projection runner) reads a run of
        batches through it, instead of opening, reading the schema and closing per batch.
        """
        return SqliteEventLog(self.path, busy_timeout=self.busy_timeout, connection=connection)

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        if self.connection is not None:
            with translated(self.path, "reading its events"):
                yield self.connection
            return
        uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
        with (
            translated(self.path, "reading its events"),
            closing(sqlite3.connect(uri, uri=True, timeout=self.busy_timeout)) as conn,
        ):
            yield conn

    def _rows(self, sql: str, params: Sequence[object]) -> list[Any]:
        with self._reading() as conn:
            try:
                return conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.OperationalError as error:
                if _NO_TABLE in str(error):
                    return []
                raise

    def head(self) -> int:
        """The position of the last event; 0 when the log holds none or cannot be read yet."""
        try:
            with self._reading() as conn:
                row = conn.execute(f"SELECT MAX(rowid) FROM {EVENTS_TABLE}").fetchone()  # noqa: S608 - fixed table name
        except sqlite3.OperationalError:
            return 0
        return int(row[0] or 0)

    def count(self) -> int:
        """How many events the log holds."""
        rows = self._rows(f"SELECT count(*) FROM {EVENTS_TABLE}", ())  # noqa: S608 - fixed table name
        return int(rows[0][0]) if rows else 0

    def batch(self, after: int, limit: int, *, upto: int | None = None) -> list[LoggedEvent]:
        """At most `limit` events after position `after` (up to `upto`), in one query."""
        return list(map(_logged, self.batch_rows(after, limit, upto=upto)))

    def batch_rows(self, after: int, limit: int, *, upto: int | None = None) -> list[Row]:
        """The events `batch` gives, as the plain tuples SQLite returns (same fields, in order).

        For a reader of many rows that reads them by place, such as the projection runner:
        it spares a `LoggedEvent` per row.
        """
        rows: list[Row] = self._rows(
            f"SELECT {_COLUMNS} FROM {EVENTS_TABLE}"  # noqa: S608 - fixed table name
            " WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?",
            (after, LAST_POSITION if upto is None else upto, limit),
        )
        return rows

    def stream(
        self,
        stream_id: str,
        *,
        topic: str | None = None,
        after: int = 0,
        upto: int | None = None,
        limit: int | None = None,
    ) -> list[LoggedEvent]:
        """The stream's events in order: of `topic`, after `after`, up to `upto`, `limit` first."""
        conditions: list[str] = ["originator_id = ?"]
        params: list[object] = [stream_id]
        if topic is not None:
            conditions.append("topic = ?")
            params.append(topic)
        if after:
            conditions.append("originator_version > ?")
            params.append(after)
        if upto is not None:
            conditions.append("originator_version <= ?")
            params.append(upto)
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM {EVENTS_TABLE} WHERE {' AND '.join(conditions)}"  # noqa: S608 - fixed columns
            " ORDER BY originator_version LIMIT ?",
            [*params, -1 if limit is None else limit],
        )
        return [LoggedEvent(*row) for row in rows]

    def stream_heads(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """How many events each stream holds, in one query; a stream without any is left out."""
        if not stream_ids:
            return {}
        rows = self._rows(
            f"SELECT originator_id, max(originator_version) FROM {EVENTS_TABLE}"  # noqa: S608 - fixed table name
            " WHERE originator_id IN (SELECT value FROM json_each(?)) GROUP BY originator_id",
            (orjson.dumps(list(stream_ids)).decode(),),
        )
        return {str(stream): int(head) for stream, head in rows}

    def opened(self, topic: str) -> list[StreamSpan]:
        """Every stream whose first event has `topic`, with its last event, in log order."""
        first = ", ".join(f"o.{column.strip()}" for column in _COLUMNS.split(","))
        last = ", ".join(f"l.{column.strip()}" for column in _COLUMNS.split(","))
        rows = self._rows(
            f"SELECT {first}, {last} FROM {EVENTS_TABLE} o"  # noqa: S608 - fixed columns
            f" JOIN {EVENTS_TABLE} l ON l.originator_id = o.originator_id"
            " AND l.originator_version = (SELECT max(m.originator_version)"
            f" FROM {EVENTS_TABLE} m WHERE m.originator_id = o.originator_id)"
            " WHERE o.originator_version = 1 AND o.topic = ? ORDER BY o.rowid",
            (topic,),
        )
        return [StreamSpan(LoggedEvent(*row[:5]), LoggedEvent(*row[5:])) for row in rows]

    def opened_with_prefix(self, topic: str, prefix: str, limit: int) -> list[str]:
        """At most `limit` ids of streams opened by `topic` whose id starts with `prefix`.

        Ids are lower-case hex digits, so every id starting with `prefix` sorts at or after
        it and before `prefix` followed by `g`: the primary key's index finds them.
        """
        rows = self._rows(
            f"SELECT originator_id FROM {EVENTS_TABLE} WHERE originator_version = 1"  # noqa: S608 - fixed table name
            " AND topic = ? AND originator_id >= ? AND originator_id < ?"
            " ORDER BY originator_id LIMIT ?",
            (topic, prefix, prefix + "g", limit),
        )
        return [str(row[0]) for row in rows]
