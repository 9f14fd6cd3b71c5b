"""Replaying one session for debugging: its timeline, or its state at one event; adapter layer.

`session replay` wraps these. A session is named by its id or a unique prefix of it; the
state at event N is rebuilt by the session aggregate itself from the first N events of its
stream, exactly as a session actor rebuilds it, and shown beside its transcript up to there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from adapters.errors import PositionOutOfRangeError
from adapters.home import Home
from adapters.journal.reader import TimelineEntry
from adapters.wiring.home import open_journal, open_reader
from domain.ids import SessionId
from domain.session.state import SessionState


@dataclass(frozen=True)
class Timeline:
    """A session's events, one entry each, in stream order."""

    session_id: SessionId
    entries: list[TimelineEntry]


@dataclass(frozen=True)
class StateAt:
    """A session rebuilt from the first `position` of its `head` events."""

    session_id: SessionId
    position: int
    head: int
    state: SessionState
    transcript: list[dict[str, Any]]


def timeline(home: Home, session: str) -> Timeline:
    """The timeline of the session `session` names."""
    reader = open_reader(home)
    session_id = reader.resolve_session(session)
    return Timeline(session_id, reader.timeline(session_id))


def state_at(home: Home, session: str, position: int) -> StateAt:
    """The state of the session `session` names after its first `position` events.

    A position past the stream's end is refused (PositionOutOfRangeError), naming the head.
    """
    reader = open_reader(home)
    session_id = reader.resolve_session(session)
    head = reader.head(session_id)
    if position > head:
        msg = f"--at {position} is past the end of {session_id}, which has {head} events"
        raise PositionOutOfRangeError(msg)
    journal = open_journal(home)
    try:
        state = journal.session(session_id, version=position).state()
    finally:
        journal.close()
    return StateAt(session_id, position, head, state, reader.transcript(session_id, upto=position))
