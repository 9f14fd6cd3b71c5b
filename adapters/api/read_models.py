"""The read-only connection and row shapes every audit query shares; adapter layer.

`ReadModels` opens the projection tables of one home's journal read-only and hands rows
back as dicts (`Rows`, with their column names), JSON columns decoded. A home without a
journal answers every query with no rows, and the columns the table would have.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from adapters.api.filters import Filters
from adapters.home import Home

if TYPE_CHECKING:
    from projections.contract import Projection

_JSON_COLUMNS = frozenset({"operations", "paths", "recent_files", "arguments", "bounded_arguments"})


def decoded(row: sqlite3.Row) -> dict[str, Any]:
    """The row as a dict, its JSON columns decoded (a column that is not JSON stays as is)."""
    result = dict(row)
    for name in _JSON_COLUMNS & result.keys():
        raw = result[name]
        if isinstance(raw, str | bytes) and raw:
            try:
                result[name] = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
    return result


class Rows(list[dict[str, Any]]):
    """Rows as dicts, with the column names in order (known even when there are no rows)."""

    def __init__(self, rows: Sequence[dict[str, Any]] = (), columns: Sequence[str] = ()) -> None:
        super().__init__(rows)
        self.columns = list(columns)


class StreamHeads(Protocol):
    """The one question the listings ask of the event log: how long each stream is."""

    def stream_heads(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """How many events each stream holds; a stream without any is left out."""
        ...


class JournalFacts(Protocol):
    """What the listings need of the journal: whether it exists, its streams, session ids.

    `JournalReader` is one; a listing served from current read models passes a leaner one.
    """

    @property
    def exists(self) -> bool:
        """Whether the home has a journal with events to read."""
        ...

    @property
    def log(self) -> StreamHeads:
        """The journal's event log."""
        ...

    def resolve_session(self, text: str) -> object:
        """The one session whose id is `text` or starts with it."""
        ...


class ReadModels:
    """The read-only connection and rows every query over one home's read models shares."""

    def __init__(self, home: Home, reader: JournalFacts, projections: Sequence[Projection]) -> None:
        self.home = home
        self.reader = reader
        self.projections = tuple(projections)

    @property
    def exists(self) -> bool:
        """Whether the home has a journal (without one every answer is empty)."""
        return self.reader.exists

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # Loaded here: a listing served from current read models opens its own connection.
        from adapters.journal.failures import translated  # noqa: PLC0415

        uri = f"{self.home.database.as_uri()}?mode=ro"
        with (
            translated(self.home.database, "reading its read models"),
            closing(sqlite3.connect(uri, uri=True, timeout=5)) as db,
        ):
            db.row_factory = sqlite3.Row
            yield db

    def _rows(self, sql: str, params: Sequence[Any], table: str, extra: Sequence[str] = ()) -> Rows:
        if not self.exists:
            columns = [
                c for p in self.projections for t in p.tables if t.name == table for c in t.columns
            ]
            return Rows([], [*columns, *extra])
        with self._connect() as db:
            cursor = db.execute(sql, tuple(params))
            found = Rows([decoded(row) for row in cursor.fetchall()])
            found.columns = [column[0] for column in cursor.description]
            return found

    def _session(self, filters: Filters) -> str | None:
        if filters.session is None:
            return None
        return str(self.reader.resolve_session(filters.session))
