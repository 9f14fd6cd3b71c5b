"""Gathering the filesystem facts a path access decision needs; adapter layer.

The resolver walks a path one component at a time with `lstat`, as the kernel does, so a
`..` after a link climbs from where the link leads. Every link met is recorded with the
real location it leads to, and a loop ends the walk with an unresolvable result.
"""

from __future__ import annotations

import os
import stat
from collections import deque
from pathlib import Path

from domain.authorization.facts import LinkFact, PathFacts, canonical
from domain.authorization.gathered import GatheredPath
from domain.authorization.scope import ScopeFacts
from domain.paths import MAX_PATH_LENGTH

MAX_LINK_HOPS = 40
"""As Linux does: more links than this on one walk is treated as a loop."""


class _LinkLoopError(Exception):
    """Resolution met more links than MAX_LINK_HOPS."""


def expand_user(raw: str) -> str:
    """Expand a leading `~` or `~user` the way a shell would; other text is unchanged."""
    return os.path.expanduser(raw) if raw.startswith("~") else raw


def gather_facts(absolute: str) -> PathFacts:
    """The facts about one absolute path, read from the filesystem now.

    Raises ValueError for a path no filesystem call could use (a NUL, or longer than
    MAX_PATH_LENGTH once normalized), before walking it: a walk costs a system call per
    component, and a path of a million characters would take seconds to be refused.
    """
    lexical = canonical(absolute)
    if "\x00" in lexical:
        msg = "the path contains a NUL character"
        raise ValueError(msg)
    if len(lexical) > MAX_PATH_LENGTH:
        msg = f"the path is longer than {MAX_PATH_LENGTH} characters"
        raise ValueError(msg)
    links: list[LinkFact] = []
    try:
        real = _resolve(absolute, links, [0])
    except _LinkLoopError:
        return PathFacts(canonical=lexical, real=None, links=tuple(links))
    try:
        info = os.stat(real)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return PathFacts(canonical=lexical, real=real, links=tuple(links))
    except OSError:
        return PathFacts(canonical=lexical, real=real, links=tuple(links))
    return PathFacts(
        canonical=lexical,
        real=real,
        links=tuple(links),
        exists=True,
        is_dir=stat.S_ISDIR(info.st_mode),
        identity=f"{info.st_dev}:{info.st_ino}",
    )


def gather_path(absolute: str) -> GatheredPath:
    """The facts about one absolute path, or why no filesystem call could use it."""
    try:
        return GatheredPath(absolute=absolute, facts=gather_facts(absolute))
    except ValueError as error:
        return GatheredPath(absolute=absolute, facts=None, unusable=str(error))


def gather_scope(workspace: Path, project: str | None) -> ScopeFacts:
    """The facts about a call's project directory and workspace, read from the filesystem now."""
    project_facts = None
    if project is not None and os.path.isdir(project):
        project_facts = gather_facts(project)
    return ScopeFacts(
        project=project,
        project_facts=project_facts,
        workspace=canonical(str(workspace)),
        workspace_available=workspace.is_dir(),
    )


def file_identity(path: Path) -> str | None:
    """`device:inode` of an existing file, else None."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return f"{info.st_dev}:{info.st_ino}"


def real_directory(path: str) -> str:
    """Where a root directory really is (its links followed); itself when it cannot be read."""
    links: list[LinkFact] = []
    try:
        return _resolve(path, links, [0])
    except _LinkLoopError:
        return canonical(path)


def _resolve(path: str, links: list[LinkFact], hops: list[int]) -> str:
    """The real location of `path`, appending every link met to `links`."""
    parts = deque(part for part in path.split("/") if part not in ("", "."))
    current = "/"
    while parts:
        name = parts.popleft()
        if name == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, name)
        try:
            mode = os.lstat(candidate).st_mode
        except OSError:
            # Missing (or unreadable): keep walking, as the kernel would once it exists, so
            # a later `..` climbs back and a link after it is still met and recorded.
            current = candidate
            continue
        if not stat.S_ISLNK(mode):
            current = candidate
            continue
        hops[0] += 1
        if hops[0] > MAX_LINK_HOPS:
            links.append(LinkFact(at=candidate, resolves_to=None))
            raise _LinkLoopError
        target = os.readlink(candidate)
        start = target if target.startswith("/") else os.path.join(current, target)
        resolved = _resolve(start, links, hops)
        links.append(LinkFact(at=candidate, resolves_to=resolved))
        current = resolved
    return current
