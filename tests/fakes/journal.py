"""The Journal port in memory: the journal on eventsourcing's in-memory store."""

from __future__ import annotations

from adapters.journal.application import JournalApplication
from adapters.journal.journal import EventJournal


class InMemoryJournal(EventJournal):
    """The journal on eventsourcing's in-memory store: same mapper, same application."""

    def __init__(self) -> None:
        super().__init__(JournalApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"}))
