"""Gathering the filesystem facts one call's authorization decides from; adapter layer.

The authorization command runs inside the journal's lock on the session's stream, and in
the writer's commit, which for a session kept in memory runs on the event loop. So nothing
it decides from may be read while it runs: the tool's assessment, the run's roots and
protected paths, the project and workspace directories and every target's facts are
gathered here first, in a worker thread, and the command decides from them alone.

The facts name the project directory they were gathered for. A command that finds the
session declaring another project (a call that ran meanwhile moved it) stores nothing and
has them gathered again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from adapters.fs.facts import gather_scope
from adapters.pipeline.context import PipelinePolicy, RunScope
from adapters.pipeline.decoding import DecodedCall
from adapters.pipeline.resolution import TargetFacts, gather_targets, run_roots
from adapters.tools.contract import CallAssessment
from domain.authorization.roots import ProtectedPaths, TrustedRoot
from domain.authorization.scope import ScopeFacts


@dataclass(frozen=True)
class CallPaths:
    """The path facts of one call: its run's roots, its scope's facts and its targets'."""

    project: str | None
    """The declared project directory these facts were gathered for."""
    roots: tuple[TrustedRoot, ...]
    protected: ProtectedPaths
    scope: ScopeFacts
    targets: tuple[TargetFacts, ...]


@dataclass(frozen=True)
class CallFacts:
    """What one call's authorization decides from, besides the session's own state.

    `failure` is what the tool's assessment raised: the command raises it where it would
    have assessed the call. `paths` is None when the assessment already denies the call.
    """

    assessment: CallAssessment | None = None
    failure: Exception | None = None
    paths: CallPaths | None = None

    def holds_for(self, project: str | None) -> bool:
        """Whether these facts decide a call whose session declares `project` now."""
        return self.paths is None or self.paths.project == project


def needs_facts(decoded: DecodedCall) -> bool:
    """Whether a call gets as far as its tool's assessment (a known tool, decoded arguments)."""
    return decoded.tool is not None and not decoded.decode_error


def gather_call(
    run: RunScope,
    policy: PipelinePolicy,
    decoded: DecodedCall,
    project: Callable[[], str | None],
) -> CallFacts:
    """Assess the call and read every path fact its decision needs; blocking, for a thread.

    `project` reads the project directory the session declares now. A run's roots and
    protected paths are read until a call has checked paths with them (`keep_run_facts`);
    later calls reuse the run's, and its kept project and workspace facts while they hold.
    """
    tool = decoded.tool
    assert tool is not None  # noqa: S101 - gathered only when needs_facts
    try:
        assessment = tool.assess(decoded.arguments)
    except Exception as error:  # noqa: BLE001 - raised again by the command, in its place
        return CallFacts(failure=error)
    if assessment.deny is not None:
        return CallFacts(assessment=assessment)
    roots, protected = run.roots, run.protected
    if roots is None or protected is None:
        roots = run_roots(run.envelope, policy.roots)
        protected = policy.protection()
    declared = project()
    scope = run.scope
    if scope is None or scope.project != declared:
        scope = gather_scope(run.envelope.workspace, declared)
    targets = gather_targets(assessment.targets, scope.base)
    paths = CallPaths(declared, roots, protected, scope, targets)
    return CallFacts(assessment=assessment, paths=paths)


def keep_run_facts(run: RunScope, facts: CallFacts, *, stays_inside: bool = False) -> None:
    """Keep the roots and protected paths a call checked its paths with, for the run's rest.

    The project and workspace facts of a call that stays inside are kept too, until a call
    that may change the filesystem runs (`RunScope.scope`). Each target's facts are never
    kept: they are read for every call.
    """
    if facts.paths is None:
        return
    if run.roots is None or run.protected is None:
        run.roots, run.protected = facts.paths.roots, facts.paths.protected
    if stays_inside:
        run.scope = facts.paths.scope
