"""The closed list of event types and aggregates the journal may hold; domain layer.

The journal adapter resolves stored topics only through this closed list, so an unknown topic
is an error rather than an import of arbitrary code.
"""

from __future__ import annotations

from domain.base import Aggregate, DomainEvent
from domain.devices.aggregate import DeviceRegistry
from domain.devices.events import DEVICE_EVENTS
from domain.session.agent_events import AGENT_EVENTS
from domain.session.aggregate import Session
from domain.session.events import SESSION_EVENTS
from domain.upstream.aggregate import UpstreamServer
from domain.upstream.events import UPSTREAM_EVENTS

AGGREGATES: tuple[type[Aggregate], ...] = (Session, DeviceRegistry, UpstreamServer)
EVENT_TYPES: tuple[type[DomainEvent], ...] = (
    *SESSION_EVENTS,
    *AGENT_EVENTS,
    *DEVICE_EVENTS,
    *UPSTREAM_EVENTS,
)
SNAPSHOT_TYPES: tuple[type[DomainEvent], ...] = (
    Session.Snapshot,
    DeviceRegistry.Snapshot,
    UpstreamServer.Snapshot,
)


def events_by_topic() -> dict[str, type[DomainEvent]]:
    """Every event type keyed by its stable topic; a duplicate topic is a programming error."""
    found: dict[str, type[DomainEvent]] = {}
    for event_type in EVENT_TYPES:
        if event_type.TOPIC in found:
            msg = f"duplicate event topic {event_type.TOPIC}"
            raise ValueError(msg)
        found[event_type.TOPIC] = event_type
    return found
