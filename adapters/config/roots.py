"""What each configured trusted root is on disk now: a directory, missing, or something else.

Adapter layer. A root that is a file (or a socket, a device) can never hold a path, so it is a
configuration error; a missing root may yet be created, so it is a warning, and so is having
no root at all, which leaves every path outside the session's own storage denied.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from adapters.settings.tools import RootSetting

_KINDS = {
    stat.S_IFREG: "a file",
    stat.S_IFSOCK: "a socket",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}


class RootState(StrEnum):
    """Whether a configured root can grant anything now."""

    DIRECTORY = "directory"
    MISSING = "missing"
    """Not there (yet); it grants nothing until it is created."""
    UNUSABLE = "unusable"
    """There, but not a directory (or under something that is not): it never can grant."""


@dataclass(frozen=True)
class RootCheck:
    """One configured root, by its place in the file, and what it is."""

    index: int
    path: str
    state: RootState
    problem: str = ""
    """Why it is missing or unusable, as the end of a sentence about the path."""

    @property
    def key(self) -> str:
        """The root's key in config.toml."""
        return f"tools.roots[{self.index}].path"


def check_roots(roots: Sequence[RootSetting]) -> tuple[RootCheck, ...]:
    """Look at every configured root as it is now; nothing is created."""
    return tuple(_check(index, root.path) for index, root in enumerate(roots))


def _check(index: int, path: str) -> RootCheck:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return RootCheck(index, path, RootState.MISSING, "does not exist")
    except NotADirectoryError:
        blocker = _first_non_directory(Path(path))
        return RootCheck(index, path, RootState.UNUSABLE, f"cannot be a directory: {blocker}")
    except OSError as error:
        reason = error.strerror or str(error)
        return RootCheck(index, path, RootState.MISSING, f"cannot be reached ({reason})")
    if stat.S_ISDIR(mode):
        return RootCheck(index, path, RootState.DIRECTORY)
    kind = _KINDS.get(stat.S_IFMT(mode), "not a directory")
    return RootCheck(index, path, RootState.UNUSABLE, f"is {kind}, not a directory")


def _first_non_directory(path: Path) -> str:
    """The nearest ancestor of `path` that exists and is not a directory, in words."""
    for parent in reversed(path.parents):
        if parent.exists() and not parent.is_dir():
            return f"{parent} is a file"
    return "a parent is not a directory"


def unusable_roots(checks: Sequence[RootCheck]) -> list[str]:
    """Each root that is not a directory: `tools.roots[0].path: /srv/notes is a file, ...`."""
    return [
        f"{check.key}: {check.path} {check.problem}"
        for check in checks
        if check.state is RootState.UNUSABLE
    ]


def root_warnings(checks: Sequence[RootCheck], config: Path) -> list[str]:
    """One line per missing root, or one line saying there is no root at all."""
    if not checks:
        none = (
            f"no trusted roots in {config}: tools can use only each session's own storage,"
            " and every other path is denied as outside_roots. Add [[tools.roots]]"
            " (see docs/tools.md)."
        )
        return [none]
    return [
        f"trusted root {check.path} ({check.key}) {check.problem}; it grants nothing until"
        " it is a directory"
        for check in checks
        if check.state is RootState.MISSING
    ]
