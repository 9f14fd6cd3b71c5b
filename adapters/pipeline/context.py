"""What the pipeline knows about one run and its configuration; adapter layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from adapters.fs.envelope import Envelope
from adapters.settings.tools import RootSetting
from domain.authorization.roots import ProtectedPaths, TrustedRoot
from domain.authorization.scope import ScopeFacts
from domain.ids import RunId, SessionId
from domain.tools.exposure import ExposurePolicy
from domain.tools.output import INLINE_LIMIT
from domain.values.audience import Audience, SessionKind
from domain.values.storage import WorkingContext

TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")


@dataclass
class RunScope:
    """One run of one session as the dispatcher serves it.

    A subagent's working context lives here for the run only; a main session's lives in
    its journal and is read from the session on every call.
    """

    session_id: SessionId
    run_id: RunId
    kind: SessionKind
    audience: Audience
    envelope: Envelope
    working_context: WorkingContext = field(default_factory=WorkingContext)
    roots: tuple[TrustedRoot, ...] | None = None
    """The envelope and configured roots, resolved on the run's first call."""
    protected: ProtectedPaths | None = None
    """The protected paths as they were at the run's first call (file identities included)."""

    scope: ScopeFacts | None = None
    """The project and workspace facts a call that stays inside gathered; kept until a call
    that may change the filesystem runs, and only for the same declared project."""
    tmp_made: bool = False
    """Whether the temporary directory was made in this run (and no call since may remove it)."""

    @cached_property
    def tmp_dir(self) -> Path:
        """The run's managed temporary directory."""
        return self.envelope.tmp_dir(self.kind, self.run_id)

    @cached_property
    def tmp_environment(self) -> dict[str, str]:
        """The temporary-directory variables a tool of this run gets."""
        return dict.fromkeys(TEMP_VARIABLES, str(self.tmp_dir))


@dataclass(frozen=True)
class PipelinePolicy:
    """The configured inputs of every decision: exposure, roots, protection, secrets, bounds."""

    exposure: ExposurePolicy = field(default_factory=ExposurePolicy)
    roots: tuple[RootSetting, ...] = ()
    protection: Callable[[], ProtectedPaths] = ProtectedPaths
    """Gathers the protected paths afresh for each run, so a run sees key files created since."""
    secrets: frozenset[str] = frozenset()
    inline_limit: int = INLINE_LIMIT
    approval_timeout_seconds: float = 300.0
