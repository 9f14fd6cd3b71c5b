"""Turning a call's raw paths into checked targets against the session's roots; adapter layer.

The roots a call may use are rebuilt for every call from the filesystem as it is now:
the session's envelope, the configured roots for its audience, and the declared project
directory if it still passes DeclareProjectScope under those roots. Reading the filesystem
(`gather_targets`, `adapters/fs/facts.py`) and deciding from what was read (`scope_of`,
`decide_targets`) are separate steps, so a decision can be made where nothing may block.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from adapters.fs.envelope import Envelope
from adapters.fs.facts import expand_user, gather_path, gather_scope, real_directory
from adapters.settings.tools import RootSetting
from adapters.tools.contract import BoundTarget, PathTarget
from domain.authorization.facts import canonical, is_within
from domain.authorization.gathered import GatheredPath, decide_gathered
from domain.authorization.path_access import PathAccessDecision, PathDenied
from domain.authorization.relative_base import join_base
from domain.authorization.roots import (
    ALL_OPERATIONS,
    ProtectedPaths,
    RootKind,
    TrustedRoot,
)
from domain.authorization.scope import ScopeFacts, scope_roots
from domain.values.audience import Audience
from domain.values.authorization import FileOperation


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
        return self.decide_gathered(gather_path(absolute), operation)

    def decide_gathered(
        self, gathered: GatheredPath, operation: FileOperation
    ) -> PathAccessDecision:
        """The path access decision for a path whose facts were already gathered."""
        return decide_gathered(gathered, operation, self.roots, self.protected)


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
    """The envelope, its artifacts directory and the configured roots, resolved once for a run.

    The envelope grants every operation but Attach, which only its artifacts directory (and a
    configured root that lists it) grants: the agent attaches what it made to keep, not any
    file of the session. A root's real location is taken when the run starts. If a root's
    path is later pointed elsewhere, paths through it no longer lead under the remembered
    location and are denied, so remembering it can only make decisions stricter.
    """
    envelope_path = canonical(str(envelope.root))
    envelope_root = TrustedRoot(
        path=envelope_path,
        real=real_directory(envelope_path),
        kind=RootKind.ENVELOPE,
        operations=ALL_OPERATIONS - {FileOperation.ATTACH},
    )
    artifacts_path = canonical(str(envelope.artifacts))
    artifacts_real = real_directory(artifacts_path)
    if not is_within(artifacts_real, envelope_root.real):
        # The session itself may have made artifacts/ a link: it leads nowhere it can attach.
        artifacts_real = canonical(f"{envelope_root.real}/artifacts")
    artifacts_root = TrustedRoot(
        path=artifacts_path,
        real=artifacts_real,
        kind=RootKind.ENVELOPE,
        operations=frozenset({FileOperation.ATTACH}),
    )
    return (envelope_root, artifacts_root, *configured_roots(settings))


def scope_of(
    audience: Audience,
    base_roots: Sequence[TrustedRoot],
    protected: ProtectedPaths,
    facts: ScopeFacts,
) -> PathScope:
    """The scope of one call, decided from gathered facts alone."""
    roots = scope_roots(audience, base_roots, protected, facts)
    return PathScope(roots=roots, protected=protected, base=facts.base)


def build_scope(
    audience: Audience,
    base_roots: Sequence[TrustedRoot],
    workspace: Path,
    project: str | None,
    protected: ProtectedPaths,
) -> PathScope:
    """The scope of one call: roots for the audience, project root if still valid, base."""
    return scope_of(audience, base_roots, protected, gather_scope(workspace, project))


@dataclass(frozen=True)
class TargetFacts:
    """One target of a call and its gathered path; None when it is relative and has no base."""

    target: PathTarget
    gathered: GatheredPath | None


@dataclass(frozen=True)
class Resolution:
    """The outcome of resolving a call's targets: bound targets, a denial, or no base."""

    bound: tuple[BoundTarget, ...] = ()
    denied: PathDenied | None = None
    no_base: bool = False


def gather_targets(targets: Sequence[PathTarget], base: str | None) -> tuple[TargetFacts, ...]:
    """The facts of every target, read from the filesystem now; up to the first with no base."""
    found: list[TargetFacts] = []
    for target in targets:
        absolute = join_base(expand_user(target.raw), base)
        found.append(TargetFacts(target, None if absolute is None else gather_path(absolute)))
        if absolute is None:
            break
    return tuple(found)


def decide_targets(targets: Sequence[TargetFacts], scope: PathScope) -> Resolution:
    """Check every gathered target; the first denial decides, and no other base is tried."""
    bound: list[BoundTarget] = []
    for found in targets:
        target = found.target
        if found.gathered is None:
            return Resolution(no_base=True)
        decision = scope.decide_gathered(found.gathered, target.operation)
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


def resolve_targets(targets: Sequence[PathTarget], scope: PathScope) -> Resolution:
    """Gather and check every target against `scope`, reading the filesystem now."""
    return decide_targets(gather_targets(targets, scope.base), scope)
