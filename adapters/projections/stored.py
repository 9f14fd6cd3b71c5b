"""The events of a projection batch as the log holds them, decoded only as far as asked.

A catch-up hands every projection the same `StoredRow`s: the position, stream and topic are
read straight from the log's row; `fields` parses the state with orjson and brings it up to
the current class version (the journal's own `upcast`), without validating it; `event`
decodes it through the journal's mapper. Each is computed at most once per row, whichever
projection asks first. A row no projection looks into is never parsed. Adapter layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from eventsourcing.persistence import StoredEvent

from adapters.errors import UndecodableEventError
from adapters.journal.mapper import CatalogMapper, upcast
from domain.base import DomainEvent
from domain.ports import LoggedEvent
from projections.contract import Position


class StoredRow:
    """One logged event, with its parsed state and its decoded event kept once computed."""

    __slots__ = ("_at", "_event", "_fields", "_mapper", "_row", "log", "stream", "topic")

    def __init__(self, row: LoggedEvent, mapper: CatalogMapper) -> None:
        self.log, self.stream, _, self.topic, _ = row
        self._row = row
        self._mapper = mapper
        self._fields: dict[str, Any] | None = None
        self._event: DomainEvent | None = None
        self._at: datetime | None = None

    def fields(self) -> Mapping[str, Any]:
        """The stored state as JSON values, at the current class version; not validated."""
        if self._fields is None:
            event_type = self._mapper.types_by_topic.get(self.topic)
            try:
                state = orjson.loads(self._row.state)
            except orjson.JSONDecodeError:
                state = None
            if event_type is None or not isinstance(state, dict):
                self.event()  # raises the mapper's own error for this row
                msg = f"event {self.stream} v{self._row.version} ({self.topic}) does not decode"
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
                moment = self._event.timestamp
            else:
                moment = datetime.fromisoformat(self.fields()["timestamp"])
            self._at = moment.astimezone(UTC)
        return self._at

    def position(self) -> Position:
        """The event's log position, stream and time."""
        return Position(log=self.log, stream=self.event().originator_id, at=self.at())


def stored_rows(rows: Sequence[LoggedEvent], mapper: CatalogMapper) -> list[StoredRow]:
    """The batch's rows, wrapped once for every projection of the group."""
    return [StoredRow(row, mapper) for row in rows]
