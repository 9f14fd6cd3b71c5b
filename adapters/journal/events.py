"""A session's stored events read back as domain events, in stream order; adapter layer."""

from __future__ import annotations

import uuid

from eventsourcing.persistence import StoredEvent

from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from domain.base import DomainEvent
from domain.ids import SessionId
from domain.logged import LoggedEvent
from domain.ports import EventLog


def decoded_stream(
    log: EventLog, session_id: SessionId, *, after: int = 0, limit: int | None = None
) -> list[DomainEvent]:
    """The session's events after version `after` (the first `limit`), decoded in order."""
    mapper = event_mapper()
    return [
        decoded(logged, mapper) for logged in log.stream(session_id.hex, after=after, limit=limit)
    ]


def decoded(logged: LoggedEvent, mapper: CatalogMapper | None = None) -> DomainEvent:
    """One stored event as its domain event."""
    return (mapper or event_mapper()).to_domain_event(
        StoredEvent(
            originator_id=uuid.UUID(hex=logged.stream_id),
            originator_version=logged.version,
            topic=logged.topic,
            state=logged.state,
        )
    )


def event_mapper() -> CatalogMapper:
    """The mapper that decodes stored events; one per batch of reads."""
    return CatalogMapper(transcoder=OrjsonTranscoder())
