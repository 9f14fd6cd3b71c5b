"""Projections that turn each event of the topics they handle into statements; projection layer.

A read model whose events are few, or whose statements depend on the rows as earlier events
left them, handles one event at a time with a `singledispatchmethod` named `apply`, and
recomputes what the batch left dirty in `finish`. `EventByEvent` gives it the batch contract:
it decodes only the events of the topics `apply` has a handler for, in log
order; projection layer.
"""

from __future__ import annotations

import inspect
from functools import cache

from domain.base import DomainEvent
from domain.topics import EVENT_TYPES
from projections.contract import Batch, Events, Position


def handled_topics(owner: type) -> frozenset[str]:
    """The topics of the event types `owner.apply` handles by a handler of their own."""
    return _handled_topics(owner)


@cache
def _handled_topics(owner: type) -> frozenset[str]:
    dispatcher = getattr(inspect.getattr_static(owner, "apply"), "dispatcher", None)
    if dispatcher is None:
        return frozenset(event_type.TOPIC for event_type in EVENT_TYPES)
    # The classes registered with handlers of their own; a subclass of one is dispatched to
    # its handler. (Asking `dispatch` for each event type gives the same, but walks each
    # type's MRO against every registered class: a tenth of a small catch-up.)
    fallback = dispatcher.dispatch(DomainEvent)
    own = tuple(cls for cls, handler in dispatcher.registry.items() if handler is not fallback)
    return frozenset(
        event_type.TOPIC for event_type in EVENT_TYPES if own and issubclass(event_type, own)
    )


class EventByEvent:
    """The batch contract for a projection with per-event handlers (`apply`) and `finish`."""

    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Add the statements `event` turns into."""
        raise NotImplementedError

    def finish(self, batch: Batch) -> None:
        """Add statements that recompute what the batch's events left dirty."""

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """Apply each event of a handled topic in log order, then `finish` the batch."""
        for stored in events.of(handled_topics(type(self))):
            self.apply(stored.event(), stored.position(), batch)
        self.finish(batch)
