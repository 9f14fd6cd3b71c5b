"""Fakes that implement the ports without touching the disk: journal, event log, clock."""

from __future__ import annotations

from tests.fakes.clock import FakeClock
from tests.fakes.event_log import InMemoryEventLog
from tests.fakes.journal import InMemoryJournal

__all__ = ["FakeClock", "InMemoryEventLog", "InMemoryJournal"]
