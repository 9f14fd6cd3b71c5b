"""The session catalog: one row per session, kept current from its events; projection layer."""

from __future__ import annotations

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
from projections.contract import Batch, Position, Table

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


class SessionCatalog:
    """Which sessions exist, who opened them, whether a run is live, and their counts."""

    name = "sessions"
    version = 3
    tables: tuple[Table, ...] = (SESSIONS,)

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Sessions' other events only move the last activity."""
        if isinstance(event, SessionEvent):
            self._touch(position, batch)

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
    def _(self, _event: ModelRequested, position: Position, batch: Batch) -> None:
        self._touch(position, batch, "model_requests = model_requests + 1")

    @apply.register
    def _(self, event: SessionClosed, position: Position, batch: Batch) -> None:
        self._touch(
            position,
            batch,
            "status = 'closed', closed_at = ?, close_reason = ?",
            position.at.isoformat(),
            str(event.reason),
        )

    @apply.register
    def _(self, _event: MessageAppended, position: Position, batch: Batch) -> None:
        self._touch(position, batch, "messages = messages + 1")

    @apply.register
    def _(self, _event: AuthorizationAttemptStarted, position: Position, batch: Batch) -> None:
        self._touch(position, batch, "tool_calls = tool_calls + 1")

    @apply.register
    def _(self, _event: AttemptDenied, position: Position, batch: Batch) -> None:
        self._touch(position, batch, "denials = denials + 1")

    def finish(self, batch: Batch) -> None:
        """Nothing is recomputed at the end of a batch."""

    @staticmethod
    def _touch(position: Position, batch: Batch, change: str = "", *params: object) -> None:
        assignments = "last_activity_at = ?" + (f", {change}" if change else "")
        batch.add(
            f"UPDATE sessions SET {assignments} WHERE session_id = ?",  # noqa: S608 - fixed columns
            position.at.isoformat(),
            *params,
            session_of(position),
        )
