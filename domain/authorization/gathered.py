"""One requested path as gathered, and its decision; domain layer.

The adapter that walks a path either finds its facts or finds that no filesystem call could
use it (a NUL, too long, not text the journal can hold). Both are decided here without
reading anything: the facts by the path access rules, an unusable path as invalid input.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from domain.authorization.facts import PathFacts
from domain.authorization.path_access import PathAccessDecision, PathDenied, decide_path
from domain.authorization.roots import ProtectedPaths, TrustedRoot
from domain.paths import MAX_PATH_LENGTH
from domain.values.authorization import DenialCategory, FileOperation

DETAIL_LIMIT = 2000
"""The journal's limit for a denial's detail."""


@dataclass(frozen=True)
class GatheredPath:
    """An absolute path and its facts, or, when it could not be walked, why not."""

    absolute: str
    facts: PathFacts | None
    unusable: str = ""
    """Why no filesystem call could use the path; set exactly when `facts` is None."""


def decide_gathered(
    gathered: GatheredPath,
    operation: FileOperation,
    roots: Iterable[TrustedRoot],
    protected: ProtectedPaths,
) -> PathAccessDecision:
    """The path access decision for a gathered path; an unusable one is denied, not raised."""
    if gathered.facts is None:
        shown = gathered.absolute.encode("utf-8", "backslashreplace").decode("utf-8")
        return PathDenied(
            path=shown[:MAX_PATH_LENGTH],
            operation=operation,
            category=DenialCategory.INVALID_INPUT,
            detail=f"unusable path: {gathered.unusable}"[:DETAIL_LIMIT],
        )
    return decide_path(gathered.facts, operation, roots, protected)
