"""Turning a call's raw paths into checked targets against the session's roots; adapter layer.

The roots a call may use are rebuilt for every call from the filesystem as it is now:
the session's envelope, the configured roots for its audience, and the declared project
directory if it still passes DeclareProjectScope under those roots.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.fs.envelope import Envelope
from adapters.fs.facts import expand_user, gather_facts, real_directory
from adapters.settings.tools import RootSetting
from adapters.tools.contract import BoundTarget, PathTarget
from domain.authorization.facts import canonical
from domain.authorization.path_access import (
    PathAccessDecision,
    PathAllowed,
    PathDenied,
    decide_path,
)
from domain.authorization.relative_base import BaseCandidate, join_base, select_base
from domain.authorization.roots import (
    ALL_OPERATIONS,
    ProtectedPaths,
    RootKind,
    TrustedRoot,
    roots_for,
)
from domain.values.audience import Audience
from domain.values.authorization import DenialCategory, FileOperation


@dataclass(frozen=True)
class PathScope:
    """The roots, protected paths and relative base one call is checked against."""

    roots: tuple[TrustedRoot, ...]
    protected: ProtectedPaths
    base: str | None

    def decide(self, absolute: str, operation: FileOperation) -> PathAccessDecision:
        """The path access decision for one absolute path, from fresh filesystem facts.

        A path the journal could not record exactly (not valid UTF-8, a NUL, too long) is
        denied rather than raised.
        """
        try:
            facts = gather_facts(absolute)
        except ValueError as error:
            return PathDenied(
                path=absolute.encode("utf-8", "backslashreplace").decode("utf-8")[:4096],
                operation=operation,
                category=DenialCategory.INVALID_INPUT,
                detail=f"unusable path: {error}"[:2000],
            )
        return decide_path(facts, operation, self.roots, self.protected)


def configured_roots(settings: Sequence[RootSetting]) -> list[TrustedRoot]:
    """The configured roots as they are on disk now."""
    return [
        TrustedRoot(
            path=root.path,
            real=real_directory(root.path),
            kind=RootKind.CONFIGURED,
            operations=frozenset(root.operations),
            audiences=frozenset(root.audiences),
        )
        for root in settings
    ]


def run_roots(envelope: Envelope, settings: Sequence[RootSetting]) -> tuple[TrustedRoot, ...]:
    """The envelope and the configured roots, resolved once for a run.

    A root's real location is taken when the run starts. If a root's path is later pointed
    elsewhere, paths through it no longer lead under the remembered location and are denied,
    so remembering it can only make decisions stricter.
    """
    envelope_path = canonical(str(envelope.root))
    envelope_root = TrustedRoot(
        path=envelope_path,
        real=real_directory(envelope_path),
        kind=RootKind.ENVELOPE,
        operations=ALL_OPERATIONS,
    )
    return (envelope_root, *configured_roots(settings))


def build_scope(
    audience: Audience,
    base_roots: Sequence[TrustedRoot],
    workspace: Path,
    project: str | None,
    protected: ProtectedPaths,
) -> PathScope:
    """The scope of one call: roots for the audience, project root if still valid, base."""
    roots = base_roots
    roots = list(roots_for(audience, roots))
    # The project is the base whenever it is a directory; whether it still grants anything
    # is a separate question, so a project that now leads outside denies its relative paths
    # instead of silently falling back to the workspace.
    project_available = project is not None and os.path.isdir(project)
    if project is not None and project_available:
        declared = decide_path(
            gather_facts(project), FileOperation.DECLARE_PROJECT_SCOPE, roots, protected
        )
        if isinstance(declared, PathAllowed):
            # The project grants what the root it was declared under grants, no more:
            # declaring a project under a read-only root does not make it writable.
            roots.append(
                TrustedRoot(
                    path=project,
                    real=real_directory(project),
                    kind=RootKind.PROJECT,
                    operations=declared.root.operations,
                )
            )
    base = select_base(
        BaseCandidate(path=project, available=project_available),
        BaseCandidate(path=canonical(str(workspace)), available=workspace.is_dir()),
    )
    return PathScope(roots=tuple(roots), protected=protected, base=base)


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving a call's targets: bound targets, a denial, or no base."""

    bound: tuple[BoundTarget, ...] = ()
    denied: PathDenied | None = None
    no_base: bool = False


def resolve_targets(targets: Sequence[PathTarget], scope: PathScope) -> Resolution:
    """Check every target; the first denial decides, and no other base is ever tried."""
    bound: list[BoundTarget] = []
    for target in targets:
        absolute = join_base(expand_user(target.raw), scope.base)
        if absolute is None:
            return Resolution(no_base=True)
        decision = scope.decide(absolute, target.operation)
        if isinstance(decision, PathDenied):
            return Resolution(denied=decision)
        bound.append(
            BoundTarget(
                argument=target.argument,
                raw=target.raw,
                path=decision.path,
                real=decision.real,
                operation=target.operation,
            )
        )
    return Resolution(bound=tuple(bound))
