"""The Session aggregate; domain layer.

Commands check invariants, raise a typed error or trigger events, and state changes only in
`apply_event`. A command that triggers several events triggers them together, so the journal
stores all of them in one transaction or none.
"""

from __future__ import annotations

from functools import singledispatchmethod

from domain.base import Aggregate, DomainEvent
from domain.ids import AttemptId, CallId, RunId, SessionId, SpillId
from domain.session import errors
from domain.session.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    MessageAppended,
    PolicyEvaluated,
    RunEnded,
    RunStarted,
    SessionClosed,
    SessionOpened,
    StorageBound,
    ToolReceiptRecorded,
    ToolSchemaLoaded,
    WorkingContextChanged,
    WriterClaimed,
)
from domain.session.state import SessionSnapshot, SessionState
from domain.values.attempts import RECENT_ATTEMPTS_LIMIT, AttemptEnd, AttemptState, AttemptStatus
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalGrant,
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    PolicyDecision,
    denial_for_verdict,
)
from domain.values.conversation import ChatMessage
from domain.values.receipts import (
    NOT_RUN_OUTCOMES,
    FileActivity,
    RecordedArguments,
    RemediationCode,
    ToolReceipt,
)
from domain.values.runs import CLOSE_RUN_REASONS, RunEndReason, RunState, SessionCloseReason
from domain.values.storage import StorageBinding, WorkingContext


class Session(Aggregate):
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

    # -- creation --------------------------------------------------------------------------

    @classmethod
    def open(  # noqa: PLR0913 - one argument per fact of the opening event
        cls,
        session_id: SessionId,
        session_key: str,
        kind: SessionKind,
        audience: Audience,
        parent_session_id: SessionId | None = None,
        *,
        client_name: str | None = None,
        client_version: str | None = None,
    ) -> Session:
        """Open a new session stream; a subagent names its parent, a main session does not."""
        if (kind is SessionKind.SUBAGENT) != (parent_session_id is not None):
            msg = "a subagent session needs a parent session; a main session has none"
            raise errors.InvalidSessionLinkError(msg)
        if parent_session_id == session_id:
            msg = "a session cannot be its own parent"
            raise errors.InvalidSessionLinkError(msg)
        return cls._create(
            SessionOpened,
            id=session_id.as_uuid(),
            session_key=session_key,
            kind=kind,
            audience=audience,
            parent_session_id=parent_session_id,
            client_name=client_name,
            client_version=client_version,
        )

    @property
    def session_id(self) -> SessionId:
        """The session's opaque id."""
        return SessionId.from_uuid(self.id)

    # -- storage and runs ------------------------------------------------------------------

    def bind_storage(self, layout_version: int, envelope_root: str) -> None:
        """Fix the storage envelope; a second binding is refused, even an identical one."""
        if self.storage is not None:
            msg = f"storage is already bound at {self.storage.envelope_root}"
            raise errors.StorageAlreadyBoundError(msg)
        binding = StorageBinding(layout_version=layout_version, envelope_root=envelope_root)
        self.trigger_event(StorageBound, **binding.model_dump())

    def start_run(self, run_id: RunId, client_run_id: str | None = None) -> None:
        """Start a run; a reused client run id names the run it already started."""
        self._require_open()
        if run_id in self.runs:
            msg = f"run {run_id} already started"
            raise errors.RunAlreadyStartedError(msg)
        existing = self.run_for_client(client_run_id) if client_run_id else None
        if client_run_id and existing is not None:
            raise errors.ClientRunAlreadyStartedError(client_run_id, existing)
        self.trigger_event(RunStarted, run_id=run_id, client_run_id=client_run_id)

    def run_for_client(self, client_run_id: str) -> RunId | None:
        """The run started for `client_run_id`, if any."""
        for run in self.runs.values():
            if run.client_run_id == client_run_id:
                return run.run_id
        return None

    def claim_writer(self, run_id: RunId) -> None:
        """Make `run_id` the only writer; the previous writer's run ends as superseded."""
        self._require_live_run(run_id)
        if self.writer == run_id:
            return
        superseded = self.writer
        self.trigger_event(WriterClaimed, run_id=run_id, superseded_run_id=superseded)
        if superseded is not None:
            self._end_run(superseded, RunEndReason.SUPERSEDED)

    def end_run(self, run_id: RunId, reason: RunEndReason) -> None:
        """End a run; its open attempts end too, allowed ones with an unknown outcome."""
        self._require_live_run(run_id)
        self._end_run(run_id, reason)

    def recover(self) -> list[RunId]:
        """After a crash: end every live run as crashed; return the runs that were ended."""
        live = [run.run_id for run in self.runs.values() if run.ended is None]
        for run_id in live:
            self._end_run(run_id, RunEndReason.CRASHED)
        return live

    def close(self, reason: SessionCloseReason) -> None:
        """Close the session for good; runs still live end first, for the matching reason."""
        self._require_open()
        for run in list(self.runs.values()):
            if run.ended is None:
                self._end_run(run.run_id, CLOSE_RUN_REASONS[reason])
        self.trigger_event(SessionClosed, reason=reason)

    def _require_open(self) -> None:
        if self.closed is not None:
            msg = f"session {self.session_id} was closed ({self.closed})"
            raise errors.SessionClosedError(msg)

    def append_message(self, run_id: RunId, message: ChatMessage) -> None:
        """Append a message to the transcript on behalf of the current writer."""
        self._require_writer(run_id)
        self.trigger_event(MessageAppended, run_id=run_id, message=message)

    # -- authorization attempts ------------------------------------------------------------

    def start_attempt(
        self,
        run_id: RunId,
        attempt_id: AttemptId,
        call_id: CallId,
        tool_name: str,
        arguments: RecordedArguments | None = None,
    ) -> None:
        """Open the authorization attempt of one tool call, with what it asked.

        The arguments are recorded as given: redacting and bounding them is the caller's
        part (`domain.tools.arguments.record_arguments`), since only it knows the secrets.
        """
        self._require_writer(run_id)
        if attempt_id in self.attempts:
            msg = f"attempt {attempt_id} already started"
            raise errors.AttemptAlreadyStartedError(msg)
        recorded = arguments or RecordedArguments()
        # Without arguments given, the event says nothing about them rather than "none".
        self.trigger_event(
            AuthorizationAttemptStarted,
            run_id=run_id,
            attempt_id=attempt_id,
            call_id=call_id,
            tool_name=tool_name,
            arguments=None if arguments is None else recorded.arguments,
            bounded_arguments=recorded.bounded,
            arguments_spill_id=recorded.spill_id,
        )

    def evaluate_policy(  # noqa: PLR0913 - one argument per recorded fact
        self,
        run_id: RunId,
        attempt_id: AttemptId,
        decision: PolicyDecision,
        *,
        rule: str,
        detail: str = "",
        approval_mode: ApprovalMode | None = None,
        denial: DenialCategory | None = None,
        targets: tuple[FileActivity, ...] = (),
    ) -> None:
        """Record the policy decision; a deny also ends the attempt in the same save."""
        attempt = self._open_attempt(run_id, attempt_id)
        if attempt.status is not AttemptStatus.STARTED:
            msg = f"attempt {attempt_id} was already evaluated"
            raise errors.PolicyAlreadyEvaluatedError(msg)
        if decision is PolicyDecision.DENY and denial is None:
            msg = "a deny decision needs a denial category"
            raise errors.DenialCategoryMissingError(msg)
        self.trigger_event(
            PolicyEvaluated,
            run_id=run_id,
            attempt_id=attempt_id,
            decision=decision,
            rule=rule,
            detail=detail,
            approval_mode=approval_mode,
            targets=targets,
        )
        if decision is PolicyDecision.DENY:
            self.trigger_event(
                AttemptDenied,
                run_id=run_id,
                attempt_id=attempt_id,
                category=denial,
                detail=detail,
            )

    def request_approval(
        self,
        run_id: RunId,
        attempt_id: AttemptId,
        summary: str,
        mode: ApprovalMode,
        grant_key: str = "",
    ) -> None:
        """Ask an operator; the attempt stays open until the decision."""
        attempt = self._open_attempt(run_id, attempt_id)
        if attempt.status is not AttemptStatus.NEEDS_APPROVAL:
            msg = f"attempt {attempt_id} does not need approval (status {attempt.status})"
            raise errors.ApprovalNotRequiredError(msg)
        self.trigger_event(
            ApprovalRequested,
            run_id=run_id,
            attempt_id=attempt_id,
            summary=summary,
            mode=mode,
            grant_key=grant_key,
        )

    def decide_approval(
        self,
        attempt_id: AttemptId,
        verdict: ApprovalVerdict,
        decided_by: str,
        scope: ApprovalScope = ApprovalScope.ONCE,
        directory: str | None = None,
    ) -> None:
        """Record the operator's answer; a rejection or expiry also denies the attempt.

        A directory-scoped answer names its directory, and only a request with a grant key
        can be approved beyond this one call.
        """
        attempt = self.attempts.get(attempt_id)
        if attempt is None or attempt.status is not AttemptStatus.APPROVAL_PENDING:
            msg = f"attempt {attempt_id} has no pending approval request"
            raise errors.ApprovalNotPendingError(msg)
        if (scope is ApprovalScope.DIRECTORY) != (directory is not None):
            msg = "a directory-scoped approval, and only it, names a directory"
            raise errors.InvalidApprovalScopeError(msg)
        if scope is not ApprovalScope.ONCE and not attempt.grant_key:
            msg = f"attempt {attempt_id} can only be approved once"
            raise errors.InvalidApprovalScopeError(msg)
        self.trigger_event(
            ApprovalDecided,
            run_id=attempt.run_id,
            attempt_id=attempt_id,
            verdict=verdict,
            scope=scope,
            decided_by=decided_by,
            directory=directory,
        )
        if verdict is not ApprovalVerdict.APPROVED:
            self.trigger_event(
                AttemptDenied,
                run_id=attempt.run_id,
                attempt_id=attempt_id,
                category=denial_for_verdict(verdict),
                detail=f"approval {verdict} by {decided_by}",
            )

    def issue_correction(
        self, run_id: RunId, attempt_id: AttemptId, remediation: RemediationCode, detail: str
    ) -> None:
        """End an attempt with a remediation instead of running it."""
        self._open_attempt(run_id, attempt_id)
        self.trigger_event(
            CorrectionIssued,
            run_id=run_id,
            attempt_id=attempt_id,
            remediation=remediation,
            detail=detail,
        )

    def deny_attempt(
        self, run_id: RunId, attempt_id: AttemptId, category: DenialCategory, detail: str
    ) -> None:
        """Deny an attempt, for example when its target changed after approval."""
        self._open_attempt(run_id, attempt_id)
        self.trigger_event(
            AttemptDenied, run_id=run_id, attempt_id=attempt_id, category=category, detail=detail
        )

    def record_receipt(self, run_id: RunId, attempt_id: AttemptId, receipt: ToolReceipt) -> None:
        """Record an attempt's receipt and, if it has a state effect, the new context.

        Only an allowed attempt can have run its tool; before the allow decision a receipt
        says the tool did not run (invalid input, cancelled). A subagent keeps its working
        context for the run only, so its stream records no context change.
        """
        attempt = self._open_attempt(run_id, attempt_id)
        ran = attempt.status is AttemptStatus.ALLOWED
        if not ran and receipt.outcome not in NOT_RUN_OUTCOMES:
            msg = f"attempt {attempt_id} has no allow decision (status {attempt.status})"
            raise errors.ReceiptWithoutAllowError(msg)
        self.trigger_event(
            ToolReceiptRecorded, run_id=run_id, attempt_id=attempt_id, **dict(receipt)
        )
        if receipt.has_state_effect and self.kind is SessionKind.MAIN:
            context = self.working_context.after(receipt)
            if context != self.working_context:
                self.trigger_event(WorkingContextChanged, run_id=run_id, **dict(context))

    def mark_attempt_unknown(self, attempt_id: AttemptId, reason: str) -> None:
        """Give an open attempt the outcome `unknown`; it is never executed again."""
        attempt = self.attempts.get(attempt_id)
        if attempt is None:
            msg = f"no attempt {attempt_id} in this session"
            raise errors.UnknownAttemptError(msg)
        if attempt.status is AttemptStatus.ENDED:
            msg = f"attempt {attempt_id} already ended ({attempt.end})"
            raise errors.AttemptAlreadyEndedError(msg)
        self.trigger_event(
            AttemptOutcomeMarkedUnknown, run_id=attempt.run_id, attempt_id=attempt_id, reason=reason
        )

    def load_tool_schema(self, run_id: RunId, tool_name: str) -> None:
        """Make a deferred tool's schema visible to later requests; it grants no authority."""
        self._require_writer(run_id)
        if tool_name not in self.loaded_tools:
            self.trigger_event(ToolSchemaLoaded, run_id=run_id, tool_name=tool_name)

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
            client_name=self.client_name,
            client_version=self.client_version,
            closed=self.closed,
        )

    def open_attempts(self) -> list[AttemptState]:
        """Attempts that have no terminal outcome yet."""
        return [a for a in self.attempts.values() if a.status is not AttemptStatus.ENDED]

    # -- checks ----------------------------------------------------------------------------

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

    def _end_run(self, run_id: RunId, reason: RunEndReason) -> None:
        for attempt in self.open_attempts():
            if attempt.run_id != run_id:
                continue
            if attempt.status is AttemptStatus.ALLOWED:
                self.trigger_event(
                    AttemptOutcomeMarkedUnknown,
                    run_id=run_id,
                    attempt_id=attempt.attempt_id,
                    reason=f"run ended: {reason}",
                )
            else:
                self.trigger_event(
                    AttemptDenied,
                    run_id=run_id,
                    attempt_id=attempt.attempt_id,
                    category=DenialCategory.RUN_ENDED,
                    detail=f"run ended ({reason}) before the attempt was allowed",
                )
        self.trigger_event(RunEnded, run_id=run_id, reason=reason)

    # -- state changes ---------------------------------------------------------------------

    @singledispatchmethod
    def apply_event(self, event: DomainEvent) -> None:
        """Change state for `event`; every state change of a Session happens here."""
        msg = f"Session cannot apply {type(event).__name__}"
        raise TypeError(msg)

    @apply_event.register
    def _(self, event: StorageBound) -> None:
        self.storage = StorageBinding(
            layout_version=event.layout_version, envelope_root=event.envelope_root
        )

    @apply_event.register
    def _(self, event: RunStarted) -> None:
        self.runs[event.run_id] = RunState(run_id=event.run_id, client_run_id=event.client_run_id)

    @apply_event.register
    def _(self, event: WriterClaimed) -> None:
        self.writer = event.run_id

    @apply_event.register
    def _(self, _event: MessageAppended) -> None:
        self.message_count += 1

    @apply_event.register
    def _(self, event: AuthorizationAttemptStarted) -> None:
        self.attempts[event.attempt_id] = AttemptState(
            attempt_id=event.attempt_id,
            run_id=event.run_id,
            call_id=event.call_id,
            tool_name=event.tool_name,
        )

    @apply_event.register
    def _(self, event: PolicyEvaluated) -> None:
        status = {
            PolicyDecision.ALLOW: AttemptStatus.ALLOWED,
            PolicyDecision.DENY: AttemptStatus.STARTED,
            PolicyDecision.APPROVAL_REQUIRED: AttemptStatus.NEEDS_APPROVAL,
        }[event.decision]
        self._update_attempt(event.attempt_id, status=status, decision=event.decision)

    @apply_event.register
    def _(self, event: ApprovalRequested) -> None:
        self._update_attempt(
            event.attempt_id, status=AttemptStatus.APPROVAL_PENDING, grant_key=event.grant_key
        )

    @apply_event.register
    def _(self, event: ApprovalDecided) -> None:
        approved = event.verdict is ApprovalVerdict.APPROVED
        status = AttemptStatus.ALLOWED if approved else AttemptStatus.APPROVAL_PENDING
        self._update_attempt(event.attempt_id, status=status)
        if approved and event.scope is not ApprovalScope.ONCE:
            key = self.attempts[event.attempt_id].grant_key
            grant = ApprovalGrant(key=key, directory=event.directory)
            if grant not in self.approval_grants:
                self.approval_grants = (*self.approval_grants, grant)

    @apply_event.register
    def _(self, event: CorrectionIssued) -> None:
        self._end_attempt(event.attempt_id, AttemptEnd.CORRECTED)

    @apply_event.register
    def _(self, event: AttemptDenied) -> None:
        self._end_attempt(event.attempt_id, AttemptEnd.DENIED)

    @apply_event.register
    def _(self, event: ToolReceiptRecorded) -> None:
        self._end_attempt(
            event.attempt_id, AttemptEnd.RECEIPT, outcome=event.outcome, spill_id=event.spill_id
        )

    @apply_event.register
    def _(self, event: AttemptOutcomeMarkedUnknown) -> None:
        self._end_attempt(event.attempt_id, AttemptEnd.UNKNOWN)

    @apply_event.register
    def _(self, event: WorkingContextChanged) -> None:
        self.working_context = WorkingContext(
            project_directory=event.project_directory, recent_files=event.recent_files
        )

    @apply_event.register
    def _(self, event: ToolSchemaLoaded) -> None:
        self.loaded_tools = self.loaded_tools | {event.tool_name}

    @apply_event.register
    def _(self, event: RunEnded) -> None:
        run = self.runs[event.run_id]
        self.runs[event.run_id] = run.model_copy(update={"ended": event.reason})
        if self.writer == event.run_id:
            self.writer = None

    @apply_event.register
    def _(self, event: SessionClosed) -> None:
        self.closed = event.reason

    def _update_attempt(self, attempt_id: AttemptId, **changes: object) -> None:
        self.attempts[attempt_id] = self.attempts[attempt_id].model_copy(update=changes)

    def _end_attempt(self, attempt_id: AttemptId, end: AttemptEnd, **changes: object) -> None:
        ended = self.attempts.pop(attempt_id).model_copy(
            update={"status": AttemptStatus.ENDED, "end": end, **changes}
        )
        # Ended attempts move to the end, so the first ended one is the longest ended; only
        # the latest few are kept, so state and snapshots stay small in long sessions.
        self.attempts[attempt_id] = ended
        if ended.spill_id is not None:
            self.spills = {**self.spills, ended.call_id: ended.spill_id}
        self.ended_attempts += 1
        if self.ended_attempts > RECENT_ATTEMPTS_LIMIT:
            oldest = next(a for a, state in self.attempts.items() if state.end is not None)
            del self.attempts[oldest]
