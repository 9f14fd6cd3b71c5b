"""A session's stored events read back as domain events, in stream order; adapter layer."""

from __future__ import annotations

from eventsourcing.persistence import StoredEvent

from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from domain.base import DomainEvent
from domain.ids import SessionId
from domain.ports import EventLog


def decoded_stream(
    log: EventLog, session_id: SessionId, *, after: int = 0, limit: int | None = None
) -> list[DomainEvent]:
    """The session's events after version `after` (the first `limit`), decoded in order."""
    mapper = CatalogMapper(transcoder=OrjsonTranscoder())
    return [
        mapper.to_domain_event(
            StoredEvent(
                originator_id=session_id.as_uuid(),
                originator_version=logged.version,
                topic=logged.topic,
                state=logged.state,
            )
        )
        for logged in log.stream(session_id.hex, after=after, limit=limit)
    ]
