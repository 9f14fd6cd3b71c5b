"""The session catalog: one row per session, kept current from its events; projection layer.

Most of a session's events only move its last activity and one of its counts (messages,
model requests, tool calls, denials): a batch counts them per session and writes one update
per session. The few that change what a session is (opened, storage bound, a run started or
ended, closed) are decoded and applied one by one, in log order, before the
counts; projection layer.
"""

from __future__ import annotations

from collections import Counter
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
from projections.contract import Batch, Events, Position, Table
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
COUNTED = (
    MessageAppended.TOPIC,
    ModelRequested.TOPIC,
    AuthorizationAttemptStarted.TOPIC,
    AttemptDenied.TOPIC,
)
"""The topics a session's counts follow, in the order of `_COUNTS`."""
_COUNTS = (
    "UPDATE sessions SET last_activity_at = ?, messages = messages + ?,"
    " model_requests = model_requests + ?, tool_calls = tool_calls + ?,"
    " denials = denials + ? WHERE session_id = ?"
)


class SessionCatalog(EventByEvent):
    """Which sessions exist, who opened them, whether a run is live, and their counts."""

    name = "sessions"
    version = 3
    tables: tuple[Table, ...] = (SESSIONS,)

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """Apply the batch's defining events in order, then one count update per session.

        The counts come from the batch's topic and stream columns alone: only each session's
        last event of the batch is read, for its time.
        """
        for stored in events.of(handled_topics(type(self))):
            self.apply(stored.event(), stored.position(), batch)
        streams, topics = events.streams, events.topics
        # Each stream's last place. A session's events after its opening are all session
        # events: only a stream that ends the batch on another topic (a session just opened,
        # the device registry, an upstream server) needs the places of session events alone.
        last = dict(zip(streams, range(len(streams)), strict=True))
        if any(topics[place] not in SESSION_TOPICS for place in last.values()):
            places = events.indices(SESSION_TOPICS)
            last = dict(zip(map(streams.__getitem__, places), places, strict=True))
        counted = [Counter(map(streams.__getitem__, events.indices((t,)))) for t in COUNTED]
        batch.add_rows(
            _COUNTS,
            [
                (
                    events[place].at_text(),
                    *(counts[stream] for counts in counted),
                    session_id_of(stream),
                )
                for stream, place in last.items()
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
