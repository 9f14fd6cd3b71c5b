"""The events of a projection batch as the log holds them, decoded only as far as asked.

A catch-up hands every projection the same `StoredBatch`: the rows as the log read them,
with their topics and streams as plain columns, and their places by topic, indexed once.
A row becomes a `StoredRow` only when a projection asks for it, once for all of them: its
`fields` parse the state with orjson and bring it up to the current class version (the
journal's own `upcast`), without validating it; its `event` decodes it through the journal's
mapper. Each is computed at most once per row. A row that only counts (most messages) is
never wrapped nor parsed. Adapter layer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from itertools import chain
from operator import itemgetter
from typing import Any
from uuid import UUID

import orjson
from eventsourcing.persistence import StoredEvent

from adapters.errors import UndecodableEventError
from adapters.journal.event_log import Row
from adapters.journal.mapper import CatalogMapper, upcast
from domain.base import DomainEvent
from projections.contract import Position

_STREAM, _TOPIC = itemgetter(1), itemgetter(3)
_ZULU_WITH_FRACTION = len("2026-11-30T10:15:02.123456Z")
_ZULU_WHOLE = len("2026-11-30T10:15:02Z")


def utc_text_of(stamp: str) -> str:
    """A stored timestamp as `utc_text` writes it; pydantic's `Z` form needs no parsing."""
    if (
        stamp[-1:] == "Z"
        and stamp[10:11] == "T"
        and (
            (len(stamp) == _ZULU_WITH_FRACTION and stamp[19] == "." and stamp[20:26] != "000000")
            or len(stamp) == _ZULU_WHOLE
        )
    ):
        return stamp[:-1] + "+00:00"
    return datetime.fromisoformat(stamp).astimezone(UTC).isoformat()


class StoredRow:
    """One logged event; its parsed state, its time and its decoded event kept once computed."""

    __slots__ = ("_at", "_event", "_fields", "_mapper", "_row", "_text", "log", "stream", "topic")

    def __init__(self, row: Row, mapper: CatalogMapper) -> None:
        self.log, self.stream, _, self.topic, _ = row
        self._row = row
        self._mapper = mapper
        self._fields: dict[str, Any] | None = None
        self._event: DomainEvent | None = None
        self._at: datetime | None = None
        self._text: str | None = None

    def fields(self) -> Mapping[str, Any]:
        """The stored state as JSON values, at the current class version; not validated."""
        if self._fields is None:
            event_type = self._mapper.types_by_topic.get(self.topic)
            try:
                state = orjson.loads(self._row[4])
            except orjson.JSONDecodeError:
                state = None
            if event_type is None or not isinstance(state, dict):
                self.event()  # raises the mapper's own error for this row
                msg = f"event {self.stream} v{self._row[2]} ({self.topic}) does not decode"
                raise UndecodableEventError(msg)
            self._fields = upcast(event_type, state)
        return self._fields

    def event(self) -> DomainEvent:
        """The domain event, validated, through the journal's mapper."""
        if self._event is None:
            _, stream, version, topic, state = self._row
            self._event = self._mapper.to_domain_event(
                StoredEvent(
                    originator_id=stream,
                    originator_version=version,
                    topic=topic,
                    state=state,
                )
            )
        return self._event

    def at(self) -> datetime:
        """When the event happened, in UTC, as its decoded event would say."""
        if self._at is None:
            if self._event is not None:
                self._at = self._event.timestamp.astimezone(UTC)
            else:
                self._at = datetime.fromisoformat(self.at_text())
        return self._at

    def at_text(self) -> str:
        """When the event happened, as `utc_text` writes it."""
        if self._text is None:
            if self._event is not None:
                self._text = self._event.timestamp.astimezone(UTC).isoformat()
            else:
                self._text = utc_text_of(self.fields()["timestamp"])
        return self._text

    def position(self) -> Position:
        """The event's log position, stream and time."""
        return Position(log=self.log, stream=UUID(self.stream), at=self.at())


class StoredBatch:
    """The rows of one batch, for every projection of a group; rows wrapped on demand."""

    __slots__ = ("_by_topic", "_mapper", "_rows", "_wrapped", "streams", "topics")

    def __init__(self, rows: Sequence[Row], mapper: CatalogMapper) -> None:
        self._rows = rows
        self._mapper = mapper
        self.topics: Sequence[str] = list(map(_TOPIC, rows))
        self.streams: Sequence[str] = list(map(_STREAM, rows))
        self._wrapped: dict[int, StoredRow] = {}
        self._by_topic: dict[str, list[int]] | None = None

    def __len__(self) -> int:
        """How many events the batch holds."""
        return len(self._rows)

    def __getitem__(self, index: int) -> StoredRow:
        """The event at `index`, wrapped once."""
        row = self._wrapped.get(index)
        if row is None:
            row = self._wrapped[index] = StoredRow(self._rows[index], self._mapper)
        return row

    def __iter__(self) -> Iterator[StoredRow]:
        """Every event, in log order (each one wrapped)."""
        return (self[index] for index in range(len(self._rows)))

    def indices(self, topics: Collection[str]) -> list[int]:
        """The places of the events of `topics`, in log order."""
        by_topic = self._by_topic
        if by_topic is None:
            by_topic = self._by_topic = {}
            for index, topic in enumerate(self.topics):
                try:
                    by_topic[topic].append(index)
                except KeyError:
                    by_topic[topic] = [index]
        found = [places for topic, places in by_topic.items() if topic in topics]
        if len(found) == 1:
            return list(found[0])
        return sorted(chain.from_iterable(found))  # sorted runs: a cheap merge

    def of(self, topics: Collection[str]) -> list[StoredRow]:
        """The events of `topics`, in log order."""
        return [self[index] for index in self.indices(topics)]
