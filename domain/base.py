"""Pydantic event and aggregate base classes on eventsourcing's domain module; domain layer.

Events are frozen pydantic models with a stable `TOPIC`, so the journal names them by a
string that never changes when a Python class is renamed or moved. Snapshots are pydantic
too, with a typed state per aggregate.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.domain import Aggregate as LibraryAggregate
from eventsourcing.domain import (
    CanInitAggregate,
    CanMutateAggregate,
    CanSnapshotAggregate,
)
from pydantic import BaseModel, ConfigDict, TypeAdapter

TOPIC_PREFIX = "ledgerclaw."


class DomainEvent(BaseModel):
    """A fact that happened to one aggregate; immutable once created."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    TOPIC: ClassVar[str]
    """The stable name stored with the event; never reused for another shape."""
    KEY_FIELDS: ClassVar[tuple[str, ...]] = ()
    """Fields a timeline shows beside the event's name."""
    class_version: ClassVar[int] = 1
    SPARSE_FIELDS: ClassVar[tuple[str, ...]] = ()
    """Fields added after rows were first stored (dotted for nested ones): kept in a stored
    row only when they differ from their default, so older rows stay byte-identical."""

    originator_id: UUID
    originator_version: int
    timestamp: datetime

    @classmethod
    def short_name(cls) -> str:
        """The topic without the `ledgerclaw.` prefix, as timelines print it."""
        return cls.TOPIC.removeprefix(TOPIC_PREFIX)


class Value(BaseModel):
    """An immutable value object nested in events and aggregate state."""

    model_config = ConfigDict(frozen=True, extra="forbid")


_datetime = TypeAdapter(datetime)


class SnapshotState(BaseModel):
    """Typed aggregate state inside a snapshot; subclassed per aggregate."""

    model_config = ConfigDict(extra="allow")

    def __init__(self, **kwargs: Any) -> None:  # noqa: ANN401 - snapshot state is whatever the aggregate holds
        """Revive the library's private timestamps, which arrive as untyped extras."""
        for key in ("_created_on", "_modified_on"):
            if key in kwargs:
                kwargs[key] = _datetime.validate_python(kwargs[key])
        super().__init__(**kwargs)


class AggregateSnapshot(DomainEvent, CanSnapshotAggregate[UUID]):
    """A snapshot of an aggregate at one version; kept beside the journal, never in the log."""

    topic: str
    state: SnapshotState


_APPLIERS: dict[tuple[type, type], Callable[[Any, Any], None]] = {}


def _applier(aggregate_type: type, event_type: type) -> Callable[[Any, Any], None]:
    """The function `apply_event` dispatches `event_type` to, looked up once per pair.

    Reading a `singledispatchmethod` through an instance builds a new bound wrapper every
    time; replay applies every event, so the lookup is done once and remembered.
    """
    key = (aggregate_type, event_type)
    found = _APPLIERS.get(key)
    if found is None:
        method = inspect.getattr_static(aggregate_type, "apply_event")
        dispatcher = getattr(method, "dispatcher", None)
        found = _call_apply_event if dispatcher is None else dispatcher.dispatch(event_type)
        _APPLIERS[key] = found
    return found


def _call_apply_event(aggregate: Any, event: Any) -> None:  # noqa: ANN401 - any aggregate
    aggregate.apply_event(event)


class Aggregate(LibraryAggregate):
    """Base for ledgerclaw aggregates: pydantic events, typed snapshots, stable topics."""

    class Event(DomainEvent, CanMutateAggregate[UUID]):
        """An event that mutates its aggregate through the aggregate's `apply_event`."""

        def apply(self, aggregate: Any) -> None:  # noqa: ANN401 - the library's signature
            """Hand the event to the aggregate's single state-changing method."""
            _applier(type(aggregate), type(self))(aggregate, self)

    class Created(Event, CanInitAggregate[UUID]):
        """The first event of a stream; it names the aggregate class by topic."""

        originator_topic: str

        def apply(self, aggregate: Any) -> None:  # noqa: ANN401 - the library's signature
            """The aggregate's `__init__` already took this event's fields."""

    JOURNAL_NAME: ClassVar[str]
    """The stable name stored for the aggregate's class; never reused."""
    Snapshot = AggregateSnapshot  # type: ignore[assignment]  # pydantic snapshots replace the dataclass one

    def apply_event(self, event: DomainEvent) -> None:
        """Change state for `event`; every state change of an aggregate happens here."""
        msg = f"{type(self).__name__} cannot apply {type(event).__name__}"
        raise TypeError(msg)
