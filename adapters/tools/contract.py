"""The contract between the dispatcher and each tool implementation; adapter layer.

A tool declares its definition and argument model, names the paths a call will touch
(each with its file operation) and runs with only what the dispatcher bound for it. It
never decides authority itself: the dispatcher has checked every target before `run`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from domain.attachments.records import Sent
from domain.authorization.path_access import PathAccessDecision
from domain.authorization.roots import ProtectedPaths, TrustedRoot
from domain.base import Value
from domain.ids import CallId, RunId, SessionId
from domain.shell.confinement import Confinement
from domain.tools.definition import ToolDefinition
from domain.tools.exposure import Visibility
from domain.values.audience import Audience
from domain.values.authorization import DenialCategory, FileOperation
from domain.values.receipts import (
    FileActivity,
    InputProblem,
    OutcomeCategory,
    RemediationCode,
    ShellRun,
    UpstreamCall,
)

MAX_ARGUMENT_TEXT = 1_000_000
"""No single argument string may be larger than this many characters."""


class Arguments(BaseModel):
    """Base of every tool's argument model: unknown fields are invalid input."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_max_length=MAX_ARGUMENT_TEXT)


class PathTarget(Value):
    """A path a call names, the argument it came from, and the operation it needs."""

    argument: str
    raw: str
    operation: FileOperation


class CallAssessment(Value):
    """What a tool says about one call before authorization.

    `deny` ends the attempt as a denial (for example a hard-denied shell command);
    `needs_approval` forces the approval question even for a tool that needs none;
    `reviewed_safe` lets a call that would need approval skip it, but only when every
    target is allowed; `grant_subject` keys a standing approval by exactly what was approved
    (for the shell: the command text and its working directory).
    """

    targets: tuple[PathTarget, ...] = ()
    deny: tuple[DenialCategory, str] | None = None
    needs_approval: str = ""
    reviewed_safe: str = ""
    grant_subject: str | None = None
    summary: str = ""


def one_path(raw: str, operation: FileOperation) -> CallAssessment:
    """The assessment of a call that touches one path, its `path` argument."""
    return CallAssessment(targets=(PathTarget(argument="path", raw=raw, operation=operation),))


@dataclass(frozen=True)
class BoundTarget:
    """A target after its allow decision: the checked lexical and real locations."""

    argument: str
    raw: str
    path: str
    real: str
    operation: FileOperation


@dataclass(frozen=True)
class ToolRun:
    """Everything one execution may use; built by the dispatcher after authorization."""

    call_id: CallId
    session_id: SessionId
    run_id: RunId
    targets: Mapping[str, BoundTarget]
    base: Path | None
    """The selected relative base (a shell's working directory), if any."""
    tmp_dir: Path
    environment: Mapping[str, str]
    """The environment for child processes, with TMPDIR, TMP and TEMP set."""
    check_path: Callable[[str, FileOperation], PathAccessDecision]
    """The same decision the dispatcher made, for paths a tool discovers (search results)."""
    visibility: Callable[[str], Visibility | None]
    """The visibility of a tool by name in this session, None if it is not registered."""
    read_spill: Callable[[str, int, int], tuple[str, int | None, int] | None]
    """A window of a spilled output by call id: (text, next offset, total), None if none."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    secrets: frozenset[str] = frozenset()
    """Exact values the result is redacted of; a tool that cuts text redacts it first."""
    audience: Audience = Audience.PERSONAL
    roots: tuple[TrustedRoot, ...] = ()
    """The roots this call was checked against (audience, envelope and project included)."""
    protected: ProtectedPaths = field(default_factory=ProtectedPaths)
    """The protected paths this call was checked against, which no sandbox rule may reach."""
    outbox: Path | None = None
    """Where a file the call attaches to the reply is copied for clients to fetch."""


class ToolOutput(Value):
    """The factual result of one execution and the receipt facts it supports."""

    text: str
    outcome: OutcomeCategory = OutcomeCategory.SUCCESS
    file_activity: tuple[FileActivity, ...] = ()
    project_declaration: str | None = None
    remediation: RemediationCode | None = None
    loaded_tool: str | None = None
    confinement: Confinement | None = None
    problems: tuple[InputProblem, ...] = ()
    """For invalid input: the fields that were wrong and why (else the text's first line)."""
    shell: ShellRun | None = None
    """For a shell command that ran: what its receipt records of it."""
    attachment: Sent | None = None
    """For a file attached to the reply: what its `attachment_sent` event records."""
    upstream: UpstreamCall | None = None
    """For a call of an upstream server's tool: its server and the class of its failure."""


class Tool(Protocol):
    """A first-party or imported tool the dispatcher can run."""

    @property
    def definition(self) -> ToolDefinition:
        """What the model and the pipeline read of the tool (a class attribute, first-party)."""
        ...

    @property
    def arguments(self) -> type[BaseModel]:
        """The model a call's arguments are decoded with."""
        ...

    def assess(self, arguments: Any) -> CallAssessment:  # noqa: ANN401 - each tool's own model
        """Name the targets of a call and any tool-specific policy facts."""
        ...

    async def run(self, arguments: Any, run: ToolRun) -> ToolOutput:  # noqa: ANN401 - as above
        """Execute the call; raise only for failures the dispatcher should classify."""
        ...


def activity(target: BoundTarget, operation: FileOperation | None = None) -> FileActivity:
    """The file activity of a target, at its real location."""
    return FileActivity(path=target.real, operation=operation or target.operation)
