"""Given-when-then story helpers for any ledgerclaw aggregate.

A story starts from events (made by `history` or by hand), replays them into a fresh
aggregate, runs one command and returns only the events that command triggered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import pytest

from domain.base import Aggregate

A = TypeVar("A", bound=Aggregate)
E = TypeVar("E", bound=Exception)


class Story(Generic[A]):
    """Story helpers bound to one aggregate type and the way a new one is created."""

    def __init__(self, kind: type[A], create: Callable[[], A]) -> None:
        self.kind = kind
        self.create = create

    @staticmethod
    def drain(aggregate: A) -> list[Any]:
        """The events `aggregate` triggered since it was built or last drained."""
        return list(aggregate.collect_events())

    def history(self, *commands: Callable[[A], object]) -> list[Any]:
        """The events of a new aggregate given `commands`."""
        aggregate = self.create()
        for command in commands:
            command(aggregate)
        return self.drain(aggregate)

    def replay(self, events: Sequence[Any]) -> A:
        """The aggregate rebuilt from `events` alone."""
        aggregate = None
        for event in events:
            aggregate = event.mutate(aggregate)
        assert isinstance(aggregate, self.kind)
        return aggregate

    def when(self, given: Sequence[Any], command: Callable[[A], object]) -> list[Any]:
        """The events `command` triggers on the aggregate rebuilt from `given`."""
        aggregate = self.replay(given)
        command(aggregate)
        return self.drain(aggregate)

    def refused(self, given: Sequence[Any], command: Callable[[A], object], error: type[E]) -> E:
        """The typed error `command` raises on the aggregate rebuilt from `given`; no events."""
        aggregate = self.replay(given)
        with pytest.raises(error) as info:
            command(aggregate)
        assert [] == self.drain(aggregate)
        return info.value
