"""The roots and relative base of one call, decided from gathered facts; domain layer.

A call is checked against the roots its audience receives, plus the declared project
directory while it still passes DeclareProjectScope under those roots, with the operations
of the root it was declared under (no more: a project under a read-only root is read-only).
Relative paths use the project whenever it is a directory, else the session's workspace.
An adapter gathers the facts first; deciding from them reads nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from domain.authorization.facts import PathFacts
from domain.authorization.path_access import PathAllowed, decide_path
from domain.authorization.relative_base import BaseCandidate, select_base
from domain.authorization.roots import ProtectedPaths, RootKind, TrustedRoot, roots_for
from domain.values.audience import Audience
from domain.values.authorization import FileOperation


@dataclass(frozen=True)
class ScopeFacts:
    """What the filesystem said about a call's project and workspace at one moment."""

    project: str | None
    """The declared project directory the facts are about, if any."""
    project_facts: PathFacts | None
    """The project's path facts while it is a directory; None when it is not, or unset."""
    workspace: str
    """The session's workspace directory, canonical."""
    workspace_available: bool

    @property
    def project_available(self) -> bool:
        """Whether the project is a directory, and so the base of relative paths."""
        return self.project is not None and self.project_facts is not None

    @cached_property
    def base(self) -> str | None:
        """The base relative paths use: the project when available, else the workspace."""
        return select_base(
            BaseCandidate(path=self.project, available=self.project_available),
            BaseCandidate(path=self.workspace, available=self.workspace_available),
        )


def scope_roots(
    audience: Audience,
    base_roots: Sequence[TrustedRoot],
    protected: ProtectedPaths,
    facts: ScopeFacts,
) -> tuple[TrustedRoot, ...]:
    """The roots one call is checked against: the audience's, and the project's if it holds.

    The project is the base whenever it is a directory; whether it still grants anything is
    a separate question, so a project that now leads outside denies its relative paths
    instead of silently falling back to the workspace.
    """
    roots = list(roots_for(audience, base_roots))
    if facts.project is not None and facts.project_facts is not None:
        declared = decide_path(
            facts.project_facts, FileOperation.DECLARE_PROJECT_SCOPE, roots, protected
        )
        if isinstance(declared, PathAllowed):
            roots.append(
                TrustedRoot(
                    path=facts.project,
                    real=declared.real,
                    kind=RootKind.PROJECT,
                    operations=declared.root.operations,
                )
            )
    return tuple(roots)
