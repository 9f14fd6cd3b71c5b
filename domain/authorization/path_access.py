"""The path access decision: allow or deny one path for one file operation; domain layer.

Rules, in order:
1. a path that cannot be resolved (a link loop) is denied at the link boundary;
2. a protected path is denied, looked up by its lexical and real location, by every place a
   link on the way leads to, and by file identity;
3. the path must lie, lexically or really, under a trusted root that allows the operation;
4. every link below that root must lead inside the root's real location, no link may be met
   outside the root (other than the root's own link or its ancestors), and the path itself
   must really be inside the root (the link boundary).
Approval never changes this decision; a denial is terminal.
"""

from __future__ import annotations

from collections.abc import Iterable

from domain.authorization.facts import PathFacts, is_within
from domain.authorization.roots import ProtectedPaths, TrustedRoot
from domain.base import Value
from domain.paths import CanonicalPath
from domain.values.authorization import DenialCategory, FileOperation


class PathAllowed(Value):
    """The path may be used for the operation; `real` is the location that was checked."""

    path: CanonicalPath
    real: CanonicalPath
    operation: FileOperation
    root: TrustedRoot

    @property
    def allowed(self) -> bool:
        """Always True; lets callers branch on either decision type."""
        return True


class PathDenied(Value):
    """The path may not be used for the operation, with a category and a readable detail."""

    path: str
    operation: FileOperation
    category: DenialCategory
    detail: str

    @property
    def allowed(self) -> bool:
        """Always False."""
        return False


PathAccessDecision = PathAllowed | PathDenied


def decide_path(
    facts: PathFacts,
    operation: FileOperation,
    roots: Iterable[TrustedRoot],
    protected: ProtectedPaths,
) -> PathAccessDecision:
    """Decide one canonical path for one operation against the session's roots."""
    path = facts.canonical

    def deny(category: DenialCategory, detail: str) -> PathDenied:
        return PathDenied(path=path, operation=operation, category=category, detail=detail)

    if facts.real is None or any(link.resolves_to is None for link in facts.links):
        return deny(DenialCategory.LINK_BOUNDARY, f"{path} cannot be resolved (a link loop)")
    how = _protected_because(facts, protected)
    if how is not None:
        return deny(DenialCategory.PROTECTED_PATH, f"{path} is protected{how}")
    holding = [r for r in roots if is_within(path, r.path) or is_within(path, r.real)]
    granting = [r for r in holding if operation in r.operations]
    if not granting:
        if holding:
            return deny(
                DenialCategory.OUTSIDE_ROOTS,
                f"{path} is under {holding[0].describe()}, which does not allow {operation}",
            )
        return deny(DenialCategory.OUTSIDE_ROOTS, f"{path} is outside every trusted root")
    # The most specific root first; any root whose boundary holds grants the operation.
    granting.sort(key=lambda r: len(r.path), reverse=True)
    problems = []
    for root in granting:
        problem = _link_boundary_problem(facts, root)
        if not problem:
            return PathAllowed(path=path, real=facts.real, operation=operation, root=root)
        problems.append(problem)
    return deny(DenialCategory.LINK_BOUNDARY, problems[0])


def _protected_because(facts: PathFacts, protected: ProtectedPaths) -> str | None:
    """How the path is protected, as the end of `… is protected`; None when it is not.

    The path itself needs no explanation; a link, the real path, a protected tree or a hard
    link each say how the path reaches something protected, once.
    """
    places = [facts.canonical, facts.real or facts.canonical]
    places += [link.resolves_to for link in facts.links if link.resolves_to]
    for place in places:
        if place in protected.files:
            return "" if place == facts.canonical else f": it leads to {place}"
        for tree in protected.trees:
            if is_within(place, tree):
                if place == facts.canonical:
                    return f": it is inside {tree}"
                return f": it leads to {place}, inside {tree}"
    if facts.identity is not None and facts.identity in protected.identities:
        return ": it is the same file as a protected file (a hard link)"
    return None


def _link_boundary_problem(facts: PathFacts, root: TrustedRoot) -> str:
    for link in facts.links:
        inside = (is_within(link.at, root.path) and link.at != root.path) or (
            is_within(link.at, root.real) and link.at != root.real
        )
        if inside and link.resolves_to and not is_within(link.resolves_to, root.real):
            return f"{link.at} is a link that leaves {root.describe()} (to {link.resolves_to})"
        on_the_way = is_within(root.path, link.at) or is_within(root.real, link.at)
        if not inside and not on_the_way:
            # A link met outside the root: the walk left the root somewhere, even if it
            # came back in.
            return f"{facts.canonical} passes through {link.at}, outside {root.describe()}"
    if facts.real is not None and not is_within(facts.real, root.real):
        return f"{facts.canonical} really is {facts.real}, outside {root.describe()}"
    return ""
