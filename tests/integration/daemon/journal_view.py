"""Reading a home's journal back in daemon tests: timelines by event name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.journal.reader import JournalReader, TimelineEntry
from domain.ids import SessionId


def timeline(home: Path, session_id: str) -> list[TimelineEntry]:
    """Every event of one session, in order."""
    return JournalReader(home / "ledgerclaw.db").timeline(SessionId(session_id))


def events(home: Path, session_id: str, name: str) -> list[dict[str, Any]]:
    """The stored fields of each `name` event of one session."""
    return [entry.data for entry in timeline(home, session_id) if entry.event == name]


def session_ids(home: Path) -> list[str]:
    """Every session in the journal, oldest first."""
    return [str(s.session_id) for s in JournalReader(home / "ledgerclaw.db").sessions()]
