"""Each port's fixture, once on its fake and once on its real adapter; contract tests.

The real adapters work on real SQLite files in `tmp_path`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from adapters.clock import SystemClock
from adapters.journal.event_log import SqliteEventLog
from adapters.journal.journal import EventJournal, SqliteJournal
from domain.ports import Clock, EventLog
from tests.fakes import FakeClock, InMemoryEventLog, InMemoryJournal


@pytest.fixture(params=["memory", "sqlite"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[EventJournal]:
    """The journal port, once on the in-memory fake and once on real SQLite."""
    made: EventJournal
    made = InMemoryJournal() if request.param == "memory" else SqliteJournal(tmp_path / "j.db")
    yield made
    made.close()


class Logged(NamedTuple):
    """A journal that writes, and the event log that reads what it stored."""

    journal: EventJournal
    log: EventLog


@pytest.fixture(params=["memory", "sqlite"])
def logged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Logged]:
    """The event log port over what a journal stored: in memory, and in a real SQLite file."""
    if request.param == "memory":
        memory = InMemoryJournal()
        pair = Logged(memory, InMemoryEventLog(memory.app.recorder))
    else:
        path = tmp_path / "j.db"
        pair = Logged(SqliteJournal(path), SqliteEventLog(path))
    yield pair
    pair.journal.close()


@pytest.fixture(params=["fake", "system"])
def clock(request: pytest.FixtureRequest) -> Clock:
    """The clock port, once on the fake and once on the system's clocks."""
    return FakeClock() if request.param == "fake" else SystemClock()
