"""Filesystem facts about one requested path, gathered by an adapter; domain layer.

The path access decision is pure given these facts: where the path is lexically, where it
really leads, and every symbolic link met on the way with the place that link leads to.
"""

from __future__ import annotations

import posixpath

from domain.base import Value
from domain.paths import CanonicalPath


class LinkFact(Value):
    """A symbolic link met while resolving a path, and the real location it leads to.

    `resolves_to` is None when the link cannot be resolved (a loop or too many hops).
    """

    at: CanonicalPath
    resolves_to: CanonicalPath | None


class PathFacts(Value):
    """What the filesystem says about one absolute path at one moment."""

    canonical: CanonicalPath
    """The path made absolute and normalized lexically, with no dot segments."""
    real: CanonicalPath | None
    """Where the path really leads with every link followed; None if it cannot be resolved."""
    links: tuple[LinkFact, ...] = ()
    exists: bool = False
    is_dir: bool = False
    identity: str | None = None
    """`device:inode` of an existing target, so a hard link to a protected file is known."""


def canonical(path: str) -> str:
    """Normalize an absolute path lexically: no dot, empty or trailing segments."""
    normal = posixpath.normpath(path)
    return "/" + normal.lstrip("/") if normal.startswith("//") else normal


def is_within(path: str, root: str) -> bool:
    """Whether `path` is `root` or lies below it, comparing whole segments."""
    return root in (path, "/") or path.startswith(root + "/")
