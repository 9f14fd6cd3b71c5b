"""The Session aggregate: one stream per main session or subagent run; domain layer.

Commands check invariants, raise a typed error or trigger events, and state changes only in
`apply_event`. A command that triggers several events triggers them together, so the journal
stores all of them in one transaction or none. The commands and appliers live in one part
per concept (`domain.session.runs`, `.attempts`, `.approvals`, `.outcomes`, `.conversation`,
`.context`, `.agent` and `.attachments`); this class combines them into the one aggregate
the journal stores.
"""

from __future__ import annotations

from functools import singledispatchmethod

from domain.base import Aggregate, DomainEvent
from domain.ids import AttemptId, CallId, RunId, SessionId, SpillId
from domain.session import errors
from domain.session.agent import AgentPart
from domain.session.approvals import ApprovalsPart
from domain.session.attachments import AttachmentsPart
from domain.session.attempts import AttemptsPart
from domain.session.context import ContextPart
from domain.session.conversation import ConversationPart
from domain.session.events import (
    SessionOpened,
)
from domain.session.opening import SessionOpening
from domain.session.outcomes import OutcomesPart
from domain.session.part import register_appliers
from domain.session.runs import RunsPart
from domain.session.state import SessionSnapshot, SessionState
from domain.values.attempts import AttemptState
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalGrant
from domain.values.runs import RunState, SessionCloseReason
from domain.values.storage import StorageBinding, WorkingContext

_PARTS = (
    RunsPart,
    AttemptsPart,
    ApprovalsPart,
    OutcomesPart,
    ConversationPart,
    ContextPart,
    AgentPart,
    AttachmentsPart,
)


class Session(
    RunsPart,
    AttemptsPart,
    ApprovalsPart,
    OutcomesPart,
    ConversationPart,
    ContextPart,
    AgentPart,
    AttachmentsPart,
    Aggregate,
):
    """One conversation or one subagent run, with its runs, writer, transcript and attempts."""

    JOURNAL_NAME = "ledgerclaw.session"
    Snapshot = SessionSnapshot

    def __init__(  # noqa: PLR0913, PLR0917 - the opening event's fields, as eventsourcing passes them
        self,
        session_key: str,
        kind: SessionKind,
        audience: Audience,
        parent_session_id: SessionId | None,
        client_name: str | None = None,
        client_version: str | None = None,
    ) -> None:
        self.session_key = session_key
        self.client_name = client_name
        self.client_version = client_version
        self.closed: SessionCloseReason | None = None
        self.kind = kind
        self.audience = audience
        self.parent_session_id = parent_session_id
        self.storage: StorageBinding | None = None
        self.writer: RunId | None = None
        self.runs: dict[RunId, RunState] = {}
        self.attempts: dict[AttemptId, AttemptState] = {}
        self.message_count = 0
        self.working_context = WorkingContext()
        self.approval_grants: tuple[ApprovalGrant, ...] = ()
        self.loaded_tools: frozenset[str] = frozenset()
        self.ended_attempts = 0
        self.spills: dict[CallId, SpillId] = {}
        self.agent_turn: int | None = None
        self.prompt_digest: str | None = None
        self.pending_calls: tuple[tuple[int, CallId], ...] = ()

    # -- creation --------------------------------------------------------------------------

    @classmethod
    def open(cls, opening: SessionOpening) -> Session:
        """Open a new session stream; a subagent names its parent, a main session does not."""
        session_id, parent_session_id = opening.session_id, opening.parent_session_id
        if (opening.kind is SessionKind.SUBAGENT) != (parent_session_id is not None):
            msg = "a subagent session needs a parent session; a main session has none"
            raise errors.InvalidSessionLinkError(msg)
        if parent_session_id == session_id:
            msg = "a session cannot be its own parent"
            raise errors.InvalidSessionLinkError(msg)
        return cls._create(
            SessionOpened,
            id=session_id.as_uuid(),
            session_key=opening.session_key,
            kind=opening.kind,
            audience=opening.audience,
            parent_session_id=parent_session_id,
            client_name=opening.client_name,
            client_version=opening.client_version,
        )

    # -- queries ---------------------------------------------------------------------------

    def state(self) -> SessionState:
        """An immutable copy of the whole state."""
        return SessionState(
            session_id=self.session_id,
            session_key=self.session_key,
            kind=self.kind,
            audience=self.audience,
            parent_session_id=self.parent_session_id,
            storage=self.storage,
            writer=self.writer,
            runs=dict(self.runs),
            attempts=dict(self.attempts),
            message_count=self.message_count,
            working_context=self.working_context,
            approval_grants=self.approval_grants,
            loaded_tools=self.loaded_tools,
            ended_attempts=self.ended_attempts,
            spills=dict(self.spills),
            agent_turn=self.agent_turn,
            prompt_digest=self.prompt_digest,
            pending_calls=self.pending_calls,
            client_name=self.client_name,
            client_version=self.client_version,
            closed=self.closed,
        )

    # -- state changes ---------------------------------------------------------------------

    @singledispatchmethod
    def apply_event(self, event: DomainEvent) -> None:
        """Change state for `event` through the applier a part registered for its type."""
        msg = f"Session cannot apply {type(event).__name__}"
        raise TypeError(msg)

    register_appliers(apply_event, *_PARTS)
