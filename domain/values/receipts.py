"""What a tool call asked and how it ended, as its receipt records it; domain layer.

A receipt holds trusted internal facts about one completed invocation attempt: its closed
outcome, the files it touched, a remediation or cancel reason, the problems of invalid
input, and for a shell command what ran where.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import Field, model_validator

from domain.base import Value
from domain.ids import SpillId
from domain.paths import CanonicalPath
from domain.shell.confinement import Confinement
from domain.text import Detail, JsonArguments, ShortText, Text
from domain.values.authorization import FileOperation

INPUT_PROBLEMS_LIMIT = 20
"""How many problems an invalid-input receipt lists; the rest are left out."""
SHELL_COMMAND_LIMIT = 262_144
"""The longest command text a shell receipt holds (a redacted command may grow a little)."""
SHELL_CANDIDATES_LIMIT = 256
"""How many candidate paths a shell receipt lists."""


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


class RemediationCode(StrEnum):
    """A closed selector of one fixed instruction; it carries no path and grants nothing."""

    SET_WORKING_DIRECTORY = "set_working_directory"
    USE_MANAGED_TEMP_DIR = "use_managed_temp_dir"
    READ_SPILLED_OUTPUT = "read_spilled_output"
    LOAD_TOOL = "load_tool"
    USE_FILE_TOOL = "use_file_tool"
    REFRESH_FILE_REVISION = "refresh_file_revision"


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


class UpstreamCall(Value):
    """Which upstream MCP server a call went to, and how its answer was classified."""

    server: ShortText
    tool: ShortText
    """The tool's own name on the server."""
    failure: ShortText | None = None
    """`tool_error`, `transport_or_session` or `application_error`; None for a plain result."""
    status: int | None = None
    """The HTTP status of an application error, when the server answered with one."""
    delivered: bool | None = None
    """For a transport failure: False when the request cannot have reached the server."""


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
    upstream: UpstreamCall | None = None
    """For a call of an upstream server's tool: the server, and the class of its failure."""

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
