"""Facts recorded in a Session stream; domain layer.

Every class carries a stable `TOPIC`. Renaming a class is free; changing a topic is not.
"""

from __future__ import annotations

from typing import ClassVar

from domain.attachments.records import Received, Sent
from domain.base import Aggregate
from domain.ids import AttemptId, CallId, RunId, SessionId, SpillId
from domain.paths import CanonicalPath
from domain.shell.confinement import Confinement
from domain.text import Detail, GrantKey, JsonArguments, ShortText, Text
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    PolicyDecision,
)
from domain.values.conversation import ChatMessage, ToolName
from domain.values.receipts import (
    CancelReason,
    FileActivity,
    InputProblem,
    OutcomeCategory,
    RemediationCode,
    ShellRun,
    UpstreamCall,
)
from domain.values.runs import RunEndReason, SessionCloseReason


class SessionEvent(Aggregate.Event):
    """Base of every event in a Session stream except the first."""


class SessionOpened(Aggregate.Created):
    """A main session or a subagent run was opened."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.opened"
    KEY_FIELDS = (
        "session_key",
        "kind",
        "audience",
        "parent_session_id",
        "client_name",
        "client_version",
    )

    session_key: ShortText
    kind: SessionKind
    audience: Audience
    parent_session_id: SessionId | None = None
    client_name: ShortText | None = None
    """The name the connecting client declared (self-declared: not an identity)."""
    client_version: ShortText | None = None


class StorageBound(SessionEvent):
    """The session's storage envelope was fixed; it is never recomputed."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.storage_bound"
    KEY_FIELDS = ("layout_version", "envelope_root")

    layout_version: int
    envelope_root: CanonicalPath


class RunStarted(SessionEvent):
    """A run began; a client run id makes a retried request land on the same run."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.run_started"
    KEY_FIELDS = ("run_id", "client_run_id")

    run_id: RunId
    client_run_id: ShortText | None = None


class WriterClaimed(SessionEvent):
    """A run became the session's only writer, superseding the previous one if any."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.writer_claimed"
    KEY_FIELDS = ("run_id", "superseded_run_id")

    run_id: RunId
    superseded_run_id: RunId | None = None


class MessageAppended(SessionEvent):
    """A message joined the durable transcript."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.message_appended"
    KEY_FIELDS = ("run_id", "message.role", "message.call_id")

    run_id: RunId
    message: ChatMessage


class AuthorizationAttemptStarted(SessionEvent):
    """Authorization of one tool call began."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.attempt_started"
    KEY_FIELDS = ("attempt_id", "call_id", "tool_name", "arguments", "bounded_arguments")

    run_id: RunId
    attempt_id: AttemptId
    call_id: CallId
    tool_name: ToolName
    arguments: JsonArguments | None = None
    """What the call asked, redacted and bounded (see `RecordedArguments`); None in journals
    written before arguments were recorded."""
    bounded_arguments: tuple[Text, ...] = ()
    """JSON pointers of the argument values kept only as digest, size and head."""
    arguments_spill_id: SpillId | None = None
    """Where the whole redacted arguments are kept when some were bounded."""


class PolicyEvaluated(SessionEvent):
    """Policy decided an attempt, naming the rule that decided it."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.policy_evaluated"
    KEY_FIELDS = ("attempt_id", "decision", "rule", "approval_mode", "detail", "targets")

    run_id: RunId
    attempt_id: AttemptId
    decision: PolicyDecision
    rule: ShortText
    detail: Detail = ""
    approval_mode: ApprovalMode | None = None
    targets: tuple[FileActivity, ...] = ()
    """The canonical paths the decision was about, each with its file operation."""


class ApprovalRequested(SessionEvent):
    """An operator was asked to consent to an attempt; the attempt stays open."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.approval_requested"
    KEY_FIELDS = ("attempt_id", "mode", "grant_key", "summary")

    run_id: RunId
    attempt_id: AttemptId
    summary: Detail
    mode: ApprovalMode
    grant_key: GrantKey = ""
    """What a session- or directory-scoped approval of this request would cover."""


class ApprovalDecided(SessionEvent):
    """An operator answered a pending approval request."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.approval_decided"
    KEY_FIELDS = ("attempt_id", "verdict", "scope", "decided_by", "directory")

    run_id: RunId
    attempt_id: AttemptId
    verdict: ApprovalVerdict
    scope: ApprovalScope
    decided_by: ShortText
    directory: CanonicalPath | None = None
    """For a directory-scoped approval: the directory it covers."""


class CorrectionIssued(SessionEvent):
    """An attempt ended with a remediation instead of running; terminal."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.correction_issued"
    KEY_FIELDS = ("attempt_id", "remediation", "detail")

    run_id: RunId
    attempt_id: AttemptId
    remediation: RemediationCode
    detail: Detail = ""


class AttemptDenied(SessionEvent):
    """An attempt was denied; terminal, and approval cannot undo it."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.attempt_denied"
    KEY_FIELDS = ("attempt_id", "category", "detail")

    run_id: RunId
    attempt_id: AttemptId
    category: DenialCategory
    detail: Detail = ""


class ToolReceiptRecorded(SessionEvent):
    """An allowed attempt completed; the receipt is its terminal outcome."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.receipt_recorded"
    KEY_FIELDS = (
        "attempt_id",
        "outcome",
        "remediation",
        "spill_id",
        "project_declaration",
        "file_activity",
        "cancel_reason",
        "problems",
        "shell.command",
        "shell.cwd",
        "shell.exit_code",
        "shell.timed_out",
        "shell.duration_ms",
        "shell.output_bytes",
        "confinement.confined",
        "confinement.mode",
        "upstream.server",
        "upstream.failure",
    )
    SPARSE_FIELDS: ClassVar[tuple[str, ...]] = ("upstream",)

    run_id: RunId
    attempt_id: AttemptId
    outcome: OutcomeCategory
    file_activity: tuple[FileActivity, ...] = ()
    project_declaration: CanonicalPath | None = None
    remediation: RemediationCode | None = None
    spill_id: SpillId | None = None
    confinement: Confinement | None = None
    """The sandbox a shell command ran under (absent for other tools and older journals)."""
    cancel_reason: CancelReason | None = None
    """Why a cancelled call was cancelled; absent in receipts written before it was kept."""
    problems: tuple[InputProblem, ...] = ()
    """For invalid input: each field that was wrong and why."""
    shell: ShellRun | None = None
    """For a shell command that ran: its command, working directory, exit, duration, output."""
    upstream: UpstreamCall | None = None
    """For a call of an upstream server's tool: the server, the tool, the failure's class."""


class AttemptOutcomeMarkedUnknown(SessionEvent):
    """An attempt's outcome cannot be known (a crash, a superseded run); never re-run."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.attempt_outcome_unknown"
    KEY_FIELDS = ("attempt_id", "reason")

    run_id: RunId
    attempt_id: AttemptId
    reason: ShortText


class WorkingContextChanged(SessionEvent):
    """The project directory or the recent files changed after a successful receipt."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.working_context_changed"
    KEY_FIELDS = ("project_directory", "recent_files")

    run_id: RunId
    project_directory: CanonicalPath | None
    recent_files: tuple[CanonicalPath, ...]


class ToolSchemaLoaded(SessionEvent):
    """A deferred tool's schema joins the tools later model requests can see."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.tool_schema_loaded"
    KEY_FIELDS = ("tool_name",)

    run_id: RunId
    tool_name: ToolName


class RunEnded(SessionEvent):
    """A run stopped, for a classified reason."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.run_ended"
    KEY_FIELDS = ("run_id", "reason", "detail")
    SPARSE_FIELDS: ClassVar[tuple[str, ...]] = ("detail",)

    run_id: RunId
    reason: RunEndReason
    detail: Detail = ""
    """The limit reached or the error that ended it, in words; empty for most ends."""


class AttachmentReceived(SessionEvent, Received):
    """A file sent with a user's message was admitted to the inbox, or refused, and why.

    Journaled with the run it came with, in the commit that starts that run; an admitted
    file is moved into the workspace only after this is durable.
    """

    TOPIC: ClassVar[str] = "ledgerclaw.session.attachment_received"
    KEY_FIELDS = ("attachment_id", "name", "sniffed_type", "size", "accepted", "reason", "path")

    run_id: RunId


class AttachmentSent(SessionEvent, Sent):
    """The agent attached a file to its reply; a client fetches the copy by its id."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.attachment_sent"
    KEY_FIELDS = ("attachment_id", "name", "media_type", "size", "source")

    run_id: RunId
    attempt_id: AttemptId


class SessionClosed(SessionEvent):
    """The session ended for good; it starts no more runs."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.closed"
    KEY_FIELDS = ("reason",)

    reason: SessionCloseReason


SESSION_EVENTS: tuple[type[Aggregate.Event], ...] = (
    SessionOpened,
    StorageBound,
    RunStarted,
    WriterClaimed,
    MessageAppended,
    AuthorizationAttemptStarted,
    PolicyEvaluated,
    ApprovalRequested,
    ApprovalDecided,
    CorrectionIssued,
    AttemptDenied,
    ToolReceiptRecorded,
    AttemptOutcomeMarkedUnknown,
    WorkingContextChanged,
    ToolSchemaLoaded,
    RunEnded,
    SessionClosed,
    AttachmentReceived,
    AttachmentSent,
)
