"""What every part of the Session aggregate shares: its state and its guards; domain layer.

Session is one aggregate and one stream, written in parts by concept (runs and the writer,
attempts, approvals, outcomes, the conversation, storage and working context). Each part is a mixin
holding its commands and its appliers; `Session` combines them and is the only class the
event-sourcing machinery sees. At run time a part is a plain class. The type checker sees
it as an `Aggregate`, so `trigger_event` and `id` are typed in every part.

A part lists its appliers in `APPLIERS`; `register_appliers` adds them to Session's one
`apply_event`, which dispatches on the event's type.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import singledispatchmethod
from typing import TYPE_CHECKING, ClassVar

from domain.ids import AttemptId, CallId, RunId, SessionId, SpillId
from domain.session import errors
from domain.values.attempts import AttemptState, AttemptStatus
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalGrant
from domain.values.receipts import ToolReceipt
from domain.values.runs import RunEndReason, RunState, SessionCloseReason
from domain.values.storage import StorageBinding, WorkingContext

if TYPE_CHECKING:
    from domain.base import Aggregate as _Base
    from domain.session.events import MessageAppended
else:
    _Base = object

Appliers = tuple[Callable[..., None], ...]
"""A part's state-changing methods, one per event type it applies."""


class SessionPart(_Base):
    """The attributes `Session.__init__` sets, and the checks its commands share."""

    APPLIERS: ClassVar[Appliers] = ()
    """The part's state-changing methods, one per event type it applies."""

    session_key: str
    client_name: str | None
    client_version: str | None
    closed: SessionCloseReason | None
    kind: SessionKind
    audience: Audience
    parent_session_id: SessionId | None
    storage: StorageBinding | None
    writer: RunId | None
    runs: dict[RunId, RunState]
    attempts: dict[AttemptId, AttemptState]
    message_count: int
    working_context: WorkingContext
    approval_grants: tuple[ApprovalGrant, ...]
    loaded_tools: frozenset[str]
    ended_attempts: int
    spills: dict[CallId, SpillId]
    agent_turn: int | None
    prompt_digest: str | None
    pending_calls: tuple[tuple[int, CallId], ...]

    if TYPE_CHECKING:
        # Offered by one part to the others; Session has them all.

        def _end_run(self, run_id: RunId, reason: RunEndReason, detail: str = "") -> None:
            """End a run, its open calls and attempts first (the runs part)."""

        def _end_run_attempts(self, run_id: RunId, reason: RunEndReason) -> None:
            """End the open attempts of a run that ends (the outcomes part)."""

        def _update_attempt(self, attempt_id: AttemptId, **changes: object) -> None:
            """Change an attempt's state (the attempts part)."""

        def _follow_receipt(self, run_id: RunId, receipt: ToolReceipt) -> None:
            """Move the working context after a receipt (the context part)."""

        def _follow_agent_message(self, event: MessageAppended) -> None:
            """Note the calls an agent reply opens (the agent part)."""

        def _close_pending_calls(self, run_id: RunId, reason: RunEndReason) -> None:
            """Give the open calls of the agent's reply their synthetic results (the agent part)."""

    @property
    def session_id(self) -> SessionId:
        """The session's opaque id."""
        return SessionId.from_uuid(self.id)

    def open_attempts(self) -> list[AttemptState]:
        """Attempts that have no terminal outcome yet."""
        return [a for a in self.attempts.values() if a.status is not AttemptStatus.ENDED]

    # -- checks ----------------------------------------------------------------------------

    def _require_open(self) -> None:
        if self.closed is not None:
            msg = f"session {self.session_id} was closed ({self.closed})"
            raise errors.SessionClosedError(msg)

    def _require_live_run(self, run_id: RunId) -> RunState:
        run = self.runs.get(run_id)
        if run is None:
            msg = f"run {run_id} was never started in this session"
            raise errors.UnknownRunError(msg)
        if run.ended is not None:
            msg = f"run {run_id} has ended ({run.ended})"
            raise errors.RunEndedError(msg)
        return run

    def _require_writer(self, run_id: RunId) -> None:
        run = self.runs.get(run_id)
        if run is not None and run.ended is RunEndReason.SUPERSEDED:
            msg = f"run {run_id} was superseded by another writer (writer: {self.writer})"
            raise errors.StaleWriterError(msg)
        self._require_live_run(run_id)
        if self.writer != run_id:
            msg = f"run {run_id} is not the session's writer (writer: {self.writer})"
            raise errors.StaleWriterError(msg)

    def _open_attempt(self, run_id: RunId, attempt_id: AttemptId) -> AttemptState:
        self._require_writer(run_id)
        attempt = self.attempts.get(attempt_id)
        if attempt is None:
            msg = f"no attempt {attempt_id} is open or recently ended in this session"
            raise errors.UnknownAttemptError(msg)
        if attempt.run_id != run_id:
            msg = f"attempt {attempt_id} belongs to run {attempt.run_id}"
            raise errors.AttemptRunMismatchError(msg)
        if attempt.status is AttemptStatus.ENDED:
            msg = f"attempt {attempt_id} already ended ({attempt.end})"
            raise errors.AttemptAlreadyEndedError(msg)
        return attempt


def register_appliers(apply_event: singledispatchmethod[None], *parts: type[SessionPart]) -> None:
    """Let `apply_event` dispatch to every applier of `parts`, by the type it is annotated with."""
    for part in parts:
        for applier in part.APPLIERS:
            apply_event.register(applier)
