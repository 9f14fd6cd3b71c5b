"""Value objects and closed vocabularies of the Session aggregate; domain layer."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import Field, model_validator

from domain.base import Value
from domain.ids import AttemptId, CallId, RunId, SpillId
from domain.paths import CanonicalPath
from domain.shell.confinement import Confinement
from domain.text import Detail, GrantKey, JsonArguments, ShortText, Text

LAYOUT_VERSION_MAX = 1_000_000
"""Storage layout versions are small integers; anything larger is a mistake."""
RECENT_FILES_LIMIT = 20
"""How many recently used files the working context keeps."""
RECENT_ATTEMPTS_LIMIT = 64
"""How many ended attempts a session's state keeps beside its open ones; the journal keeps all."""
INPUT_PROBLEMS_LIMIT = 20
"""How many problems an invalid-input receipt lists; the rest are left out."""
SHELL_COMMAND_LIMIT = 262_144
"""The longest command text a shell receipt holds (a redacted command may grow a little)."""
SHELL_CANDIDATES_LIMIT = 256
"""How many candidate paths a shell receipt lists."""

ToolName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-/]{1,128}$")]


class SessionKind(StrEnum):
    """Whether a stream is the user's conversation or one delegated child run."""

    MAIN = "main"
    SUBAGENT = "subagent"


class Audience(StrEnum):
    """Who the session serves; it selects exposure and trusted roots."""

    PERSONAL = "personal"
    TEAM = "team"
    PUBLIC = "public"


class MessageRole(StrEnum):
    """The author of one transcript message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ToolCallRequest(Value):
    """A model-authored tool call: a request, not proof that anything ran."""

    call_id: CallId
    name: ToolName
    arguments: JsonArguments = Field(default_factory=dict)


class ChatMessage(Value):
    """One durable transcript message."""

    role: MessageRole
    content: Text = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    call_id: CallId | None = None
    """For a tool message: the call it answers."""

    @model_validator(mode="after")
    def _check_shape(self) -> Self:
        if self.tool_calls and self.role is not MessageRole.ASSISTANT:
            msg = "only an assistant message carries tool calls"
            raise ValueError(msg)
        if (self.role is MessageRole.TOOL) != (self.call_id is not None):
            msg = "a tool message, and only a tool message, names the call it answers"
            raise ValueError(msg)
        return self


class PolicyDecision(StrEnum):
    """What one policy evaluation concluded for an attempt."""

    ALLOW = "allow"
    DENY = "deny"
    APPROVAL_REQUIRED = "approval_required"


class ApprovalMode(StrEnum):
    """How a call that needs consent is handled."""

    REQUEST = "request"
    DEFER = "defer"
    REPORT = "report"
    DENY = "deny"


class ApprovalVerdict(StrEnum):
    """The operator's answer to an approval request."""

    APPROVED = "approved"
    REJECTED = "rejected"
    EXPIRED = "expired"


class ApprovalScope(StrEnum):
    """How far an approval reaches beyond this one call."""

    ONCE = "once"
    SESSION = "session"
    DIRECTORY = "directory"


class DenialCategory(StrEnum):
    """Why an attempt was denied; a denial is terminal."""

    POLICY = "policy"
    NOT_EXPOSED = "not_exposed"
    OUTSIDE_ROOTS = "outside_roots"
    PROTECTED_PATH = "protected_path"
    LINK_BOUNDARY = "link_boundary"
    SHELL_POLICY = "shell_policy"
    APPROVAL_REJECTED = "approval_rejected"
    APPROVAL_EXPIRED = "approval_expired"
    TARGET_CHANGED = "target_changed"
    INVALID_INPUT = "invalid_input"
    RUN_ENDED = "run_ended"
    NO_APPROVER = "no_approver"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"


class OutcomeCategory(StrEnum):
    """The closed status of a tool receipt."""

    SUCCESS = "success"
    INVALID_INPUT = "invalid_input"
    ACCESS_DENIED = "access_denied"
    NOT_FOUND = "not_found"
    TRANSIENT_FAILURE = "transient_failure"
    RECOVERABLE_CORRECTION = "recoverable_correction"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"


class CancelReason(StrEnum):
    """Why a call that had started was cancelled; its receipt's outcome is `cancelled`.

    Receipts written before this vocabulary existed carry none, and neither does a call
    cancelled from the command line (an interrupt), which also aborts its run.
    """

    CLIENT_CANCELLED = "client_cancelled"
    """The client cancelled the request, timed out waiting for it, or hung up."""
    SESSION_CLOSED = "session_closed"
    """The call's session was closed (its client left, it was idle, its device revoked)."""
    SHUTDOWN = "shutdown"
    """The daemon or stdio server stopped before the call finished."""


class FileOperation(StrEnum):
    """The authorization category requested for a path."""

    READ = "read"
    WRITE = "write"
    ATTACH = "attach"
    DECLARE_PROJECT_SCOPE = "declare_project_scope"


class RemediationCode(StrEnum):
    """A closed selector of one fixed instruction; it carries no path and grants nothing."""

    SET_WORKING_DIRECTORY = "set_working_directory"
    USE_MANAGED_TEMP_DIR = "use_managed_temp_dir"
    READ_SPILLED_OUTPUT = "read_spilled_output"
    LOAD_TOOL = "load_tool"
    USE_FILE_TOOL = "use_file_tool"
    REFRESH_FILE_REVISION = "refresh_file_revision"


class RunEndReason(StrEnum):
    """Why a run stopped; classify before troubleshooting."""

    NATURAL = "natural"
    ABORT = "abort"
    PROVIDER_ERROR = "provider_error"
    TOOL_LOOP_TERMINATED = "tool_loop_terminated"
    STRATEGY_STOP = "strategy_stop"
    SUPERSEDED = "superseded"
    CRASHED = "crashed"
    SHUTDOWN = "shutdown"
    """The daemon stopped; calls still running after its grace period were cancelled."""


class SessionCloseReason(StrEnum):
    """Why a session was closed; a closed session starts no more runs."""

    CLIENT_CLOSED = "client_closed"
    IDLE = "idle"
    DAEMON_STOPPED = "daemon_stopped"
    CRASHED = "crashed"
    REVOKED = "revoked"


CLOSE_RUN_REASONS = {
    SessionCloseReason.CLIENT_CLOSED: RunEndReason.NATURAL,
    SessionCloseReason.IDLE: RunEndReason.NATURAL,
    SessionCloseReason.DAEMON_STOPPED: RunEndReason.SHUTDOWN,
    SessionCloseReason.CRASHED: RunEndReason.CRASHED,
    SessionCloseReason.REVOKED: RunEndReason.ABORT,
}
"""How the runs still live when a session closes end, for each close reason."""


NOT_RUN_OUTCOMES = frozenset({OutcomeCategory.INVALID_INPUT, OutcomeCategory.CANCELLED})
"""Outcomes a receipt may carry before an allow decision: the tool did not run."""


class RecordedArguments(Value):
    """A call's arguments as the journal keeps them: redacted of exact secrets, and bounded.

    A value too large to keep whole is replaced by `{"sha256", "size", "head"}` (the digest
    and UTF-8 size of its redacted text, and its first bytes); `bounded` lists the JSON
    pointers of the values replaced that way, `""` when the whole arguments object was. The
    whole redacted arguments then go to the spill named by `spill_id`, if it could be kept.
    """

    arguments: JsonArguments = Field(default_factory=dict)
    bounded: tuple[Text, ...] = ()
    spill_id: SpillId | None = None


class ApprovalGrant(Value):
    """A standing approval: calls with this grant key skip the prompt.

    A grant with a directory covers only calls whose every target lies under it. A grant
    never widens a path access decision; it only answers the approval question.
    """

    key: GrantKey = Field(min_length=1)
    directory: CanonicalPath | None = None


class FileActivity(Value):
    """A canonical path and the operation a successful call performed on it."""

    path: CanonicalPath
    operation: FileOperation


class InputProblem(Value):
    """Why one part of a call's input was invalid: the field (a dotted path) and the message."""

    field: ShortText
    message: Detail


class ShellRun(Value):
    """What one shell command was and how it ran, as its receipt records it.

    `candidates` are the paths the shell policy checked as writes before the command ran (its
    working directory first): what it may have changed, not proof that it changed anything.
    """

    command: Annotated[str, Field(max_length=SHELL_COMMAND_LIMIT)]
    """The whole command text, redacted of exact secret values."""
    cwd: CanonicalPath
    exit_code: int | None
    """None when the command did not exit by itself (it timed out); negative for a signal."""
    timed_out: bool = False
    duration_ms: int = Field(default=0, ge=0)
    output_bytes: int = Field(default=0, ge=0)
    """Bytes the command wrote to stdout and stderr, including any that were not kept."""
    candidates: tuple[CanonicalPath, ...] = Field(default=(), max_length=SHELL_CANDIDATES_LIMIT)

    @model_validator(mode="after")
    def _check_exit(self) -> Self:
        if self.timed_out != (self.exit_code is None):
            msg = "a command that timed out, and only one, has no exit code"
            raise ValueError(msg)
        return self


RAN_OUTCOMES = frozenset({OutcomeCategory.SUCCESS, OutcomeCategory.TRANSIENT_FAILURE})
"""Outcomes of a shell command that started: it exited (success) or timed out."""


class ToolReceipt(Value):
    """Trusted internal facts about one completed invocation attempt."""

    outcome: OutcomeCategory
    file_activity: tuple[FileActivity, ...] = ()
    project_declaration: CanonicalPath | None = None
    remediation: RemediationCode | None = None
    spill_id: SpillId | None = None
    confinement: Confinement | None = None
    """The sandbox a shell command ran under; None for tools that start no process."""
    cancel_reason: CancelReason | None = None
    """For a cancelled call: who or what cancelled it, when that is known."""
    problems: tuple[InputProblem, ...] = Field(default=(), max_length=INPUT_PROBLEMS_LIMIT)
    """For invalid input: which fields were wrong and why."""
    shell: ShellRun | None = None
    """For a shell command that started: the command, where and how it ran."""

    @model_validator(mode="after")
    def _check_payload(self) -> Self:
        success = self.outcome is OutcomeCategory.SUCCESS
        if not success and (self.file_activity or self.project_declaration):
            msg = "only a successful receipt carries file activity or a project declaration"
            raise ValueError(msg)
        correction = self.outcome is OutcomeCategory.RECOVERABLE_CORRECTION
        if correction != (self.remediation is not None):
            msg = "a recoverable correction, and only it, carries a remediation code"
            raise ValueError(msg)
        if self.cancel_reason is not None and self.outcome is not OutcomeCategory.CANCELLED:
            msg = "only a cancelled receipt carries a cancel reason"
            raise ValueError(msg)
        if self.problems and self.outcome is not OutcomeCategory.INVALID_INPUT:
            msg = "only an invalid-input receipt lists input problems"
            raise ValueError(msg)
        if self.shell is not None and self.outcome not in RAN_OUTCOMES:
            msg = "only a receipt of a command that ran (success, or a timeout) has shell facts"
            raise ValueError(msg)
        return self

    @property
    def has_state_effect(self) -> bool:
        """Whether the working context must follow this receipt."""
        success = self.outcome is OutcomeCategory.SUCCESS
        return success and bool(self.file_activity or self.project_declaration)


class StorageBinding(Value):
    """The durable layout version and envelope root of a session; bound at most once."""

    layout_version: int = Field(ge=1, le=LAYOUT_VERSION_MAX)
    envelope_root: CanonicalPath


class WorkingContext(Value):
    """The declared project directory and a bounded list of recently used files."""

    project_directory: CanonicalPath | None = None
    recent_files: tuple[CanonicalPath, ...] = Field(default=(), max_length=RECENT_FILES_LIMIT)

    def after(self, receipt: ToolReceipt) -> WorkingContext:
        """Return the context that follows a successful receipt with a state effect."""
        recent = list(self.recent_files)
        for activity in receipt.file_activity:
            if activity.path in recent:
                recent.remove(activity.path)
            recent.insert(0, activity.path)
        project = receipt.project_declaration or self.project_directory
        return WorkingContext(
            project_directory=project, recent_files=tuple(recent[:RECENT_FILES_LIMIT])
        )


class RunState(Value):
    """One run of a session and, once it stopped, why."""

    run_id: RunId
    client_run_id: ShortText | None = None
    ended: RunEndReason | None = None


class AttemptStatus(StrEnum):
    """Where an authorization attempt stands."""

    STARTED = "started"
    ALLOWED = "allowed"
    NEEDS_APPROVAL = "needs_approval"
    APPROVAL_PENDING = "approval_pending"
    ENDED = "ended"


class AttemptEnd(StrEnum):
    """The one terminal outcome an attempt received."""

    RECEIPT = "receipt"
    DENIED = "denied"
    CORRECTED = "corrected"
    UNKNOWN = "unknown"


class AttemptState(Value):
    """The lifecycle of one authorization attempt."""

    attempt_id: AttemptId
    run_id: RunId
    call_id: CallId
    tool_name: ToolName
    status: AttemptStatus = AttemptStatus.STARTED
    decision: PolicyDecision | None = None
    end: AttemptEnd | None = None
    outcome: OutcomeCategory | None = None
    grant_key: GrantKey = ""
    spill_id: SpillId | None = None
