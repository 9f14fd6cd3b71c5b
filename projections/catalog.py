"""The session catalog: one row per session, kept current from its events; projection layer.

Most of a session's events only move its last activity and one of its counts (messages,
model requests, tool calls, denials): a batch counts them per session and writes one update
per session. The few that change what a session is (opened, storage bound, a run started or
ended, closed) are decoded and applied one by one, in log order, before the
counts; projection layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import singledispatchmethod

from domain.base import DomainEvent
from domain.ids import SessionId
from domain.session.agent_events import ModelRequested
from domain.session.events import (
    AttemptDenied,
    AuthorizationAttemptStarted,
    MessageAppended,
    RunEnded,
    RunStarted,
    SessionClosed,
    SessionEvent,
    SessionOpened,
    StorageBound,
)
from domain.topics import EVENT_TYPES
from projections.contract import Batch, Position, Stored, Table
from projections.per_event import EventByEvent, handled_topics

SESSIONS = Table(
    name="sessions",
    columns={
        "session_id": str,
        "session_key": str,
        "kind": str,
        "parent_session_id": str,
        "audience": str,
        "client": str,
        "client_name": str,
        "client_version": str,
        "status": str,
        "created_at": str,
        "last_activity_at": str,
        "runs": int,
        "live_runs": int,
        "messages": int,
        "tool_calls": int,
        "denials": int,
        "storage_root": str,
        "closed_at": str,
        "close_reason": str,
        "last_run_end": str,
        "model_requests": int,
    },
    pk=("session_id",),
    indexes=(("last_activity_at",), ("parent_session_id",)),
    doc="One row per session: who opened it, its state and its counts.",
)


def session_of(position: Position) -> str:
    """The session id of the stream an event belongs to."""
    return str(SessionId.from_uuid(position.stream))


def session_id_of(stream: str) -> str:
    """The session id of a stream given by its 32 hex digits."""
    return f"{SessionId.prefix}{stream}"


SESSION_TOPICS = frozenset(t.TOPIC for t in EVENT_TYPES if issubclass(t, SessionEvent))
"""Every event of a session after its opening moves the session's last activity."""
COUNTED: dict[str, int] = {
    MessageAppended.TOPIC: 0,
    ModelRequested.TOPIC: 1,
    AuthorizationAttemptStarted.TOPIC: 2,
    AttemptDenied.TOPIC: 3,
}
"""The topics a session's counts follow, by the count's place in `_COUNTS`."""
_COUNTS = (
    "UPDATE sessions SET last_activity_at = ?, messages = messages + ?,"
    " model_requests = model_requests + ?, tool_calls = tool_calls + ?,"
    " denials = denials + ? WHERE session_id = ?"
)


@dataclass(slots=True)
class _Tally:
    """One session's events in a batch: the last of them, and its counts by `COUNTED` place."""

    last: Stored
    counts: list[int] = field(default_factory=lambda: [0, 0, 0, 0])


class SessionCatalog(EventByEvent):
    """Which sessions exist, who opened them, whether a run is live, and their counts."""

    name = "sessions"
    version = 3
    tables: tuple[Table, ...] = (SESSIONS,)

    def apply_batch(self, events: Sequence[Stored], batch: Batch) -> None:
        """Apply the batch's defining events in order, then one count update per session."""
        defining = handled_topics(type(self))
        tallies: dict[str, _Tally] = {}
        for stored in events:
            topic = stored.topic
            if topic in defining:
                self.apply(stored.event(), stored.position(), batch)
            if topic in SESSION_TOPICS:
                tally = tallies.get(stored.stream)
                if tally is None:
                    tally = tallies[stored.stream] = _Tally(stored)
                else:
                    tally.last = stored
                place = COUNTED.get(topic)
                if place is not None:
                    tally.counts[place] += 1
        batch.add_rows(
            _COUNTS,
            [
                (tally.last.at().isoformat(), *tally.counts, session_id_of(stream))
                for stream, tally in tallies.items()
            ],
        )

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events change only what `apply_batch` counts."""

    @apply.register
    def _(self, event: SessionOpened, position: Position, batch: Batch) -> None:
        at = position.at.isoformat()
        batch.add(
            "INSERT INTO sessions (session_id, session_key, kind, parent_session_id, audience,"
            " client, client_name, client_version, status, created_at, last_activity_at, runs,"
            " live_runs, messages, tool_calls, denials, model_requests)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'idle', ?, ?, 0, 0, 0, 0, 0, 0)",
            session_of(position),
            event.session_key,
            str(event.kind),
            event.parent_session_id,
            str(event.audience),
            event.session_key.split(":", 1)[0],
            event.client_name,
            event.client_version,
            at,
            at,
        )

    @apply.register
    def _(self, event: StorageBound, position: Position, batch: Batch) -> None:
        self._touch(position, batch, "storage_root = ?", event.envelope_root)

    @apply.register
    def _(self, _event: RunStarted, position: Position, batch: Batch) -> None:
        self._touch(
            position, batch, "runs = runs + 1, live_runs = live_runs + 1, status = 'running'"
        )

    @apply.register
    def _(self, event: RunEnded, position: Position, batch: Batch) -> None:
        reason = f"{event.reason}: {event.detail}" if event.detail else str(event.reason)
        self._touch(
            position,
            batch,
            "live_runs = live_runs - 1,"
            " status = CASE WHEN status = 'closed' THEN 'closed'"
            " WHEN live_runs - 1 > 0 THEN 'running' ELSE 'idle' END,"
            " last_run_end = ?",
            reason,
        )

    @apply.register
    def _(self, event: SessionClosed, position: Position, batch: Batch) -> None:
        self._touch(
            position,
            batch,
            "status = 'closed', closed_at = ?, close_reason = ?",
            position.at.isoformat(),
            str(event.reason),
        )

    @staticmethod
    def _touch(position: Position, batch: Batch, change: str = "", *params: object) -> None:
        assignments = "last_activity_at = ?" + (f", {change}" if change else "")
        batch.add(
            f"UPDATE sessions SET {assignments} WHERE session_id = ?",  # noqa: S608 - fixed columns
            position.at.isoformat(),
            *params,
            session_of(position),
        )
