"""Choosing the base a relative path resolves against; domain layer.

The declared project directory comes first when it is available, else the session's
workspace directory. Once a base is chosen its decision stands: a denial under the
project is never retried under the workspace.
"""

from __future__ import annotations

import posixpath

from domain.base import Value
from domain.paths import CanonicalPath


class BaseCandidate(Value):
    """One possible base and whether it is usable (exists and is a directory) right now."""

    path: CanonicalPath | None
    available: bool


def select_base(project: BaseCandidate, workspace: BaseCandidate) -> CanonicalPath | None:
    """The base relative paths use, or None when neither is available."""
    for candidate in (project, workspace):
        if candidate.path is not None and candidate.available:
            return candidate.path
    return None


def join_base(raw: str, base: str | None) -> str | None:
    """The absolute form of `raw`: itself if absolute, else joined to `base` (None if no base)."""
    if raw.startswith("/"):
        return raw
    if base is None:
        return None
    return posixpath.join(base, raw)
