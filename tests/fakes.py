"""Fakes that implement the ports without touching the disk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from adapters.journal.application import JournalApplication
from adapters.journal.journal import EventJournal


class InMemoryJournal(EventJournal):
    """The journal on eventsourcing's in-memory store: same mapper, same application."""

    def __init__(self) -> None:
        super().__init__(JournalApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}))


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        """The fixed current time."""
        return self.current

    def advance(self, seconds: float) -> None:
        """Move the clock forward."""
        self.current += timedelta(seconds=seconds)
