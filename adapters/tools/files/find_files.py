"""The `find_files` tool, and the bounded tree walk it shares with `grep`; adapter layer."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import ClassVar

import anyio.to_thread
from pydantic import Field

from adapters.tools.contract import (
    Arguments,
    BoundTarget,
    CallAssessment,
    ToolOutput,
    ToolRun,
    activity,
    one_path,
)
from adapters.tools.files.cancel import stop_if_cancelled
from adapters.tools.files.globbing import compile_glob, glob_problem, printable
from domain.authorization.path_access import PathAccessDecision, PathAllowed
from domain.tools.definition import Concurrency, Loading, ToolDefinition, ToolEffects
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory

MAX_ENTRIES = 100_000
"""One search visits at most this many directory entries."""

PathCheck = Callable[[str, FileOperation], PathAccessDecision]
"""The dispatcher's allow/deny decision for a path a tool discovers."""


@dataclass
class WalkBudget:
    """How many entries a walk has visited, and whether it stopped at MAX_ENTRIES."""

    visited: int = 0
    exhausted: bool = False


def readable(check_path: PathCheck, path: str) -> str | None:
    """Where a discovered path really is if it may be read; None when it may not."""
    try:
        decision = check_path(path, FileOperation.READ)
    except ValueError:  # not valid UTF-8 or not canonical: it cannot be named, so not used
        return None
    return decision.real if isinstance(decision, PathAllowed) else None


def walk_tree(root: str, check_path: PathCheck, budget: WalkBudget) -> Iterator[tuple[str, str]]:
    """Yield `(relative path, full path)` of every non-directory entry below `root`.

    Names come in sorted order, a directory's own entries before its subdirectories. A link
    is yielded as an entry and never entered; a directory whose READ is denied is skipped
    with all it holds; unreadable directories are passed over. The walk ends once `budget`
    reaches MAX_ENTRIES.
    """
    pending = [""]
    while pending:
        relative_dir = pending.pop()
        full_dir = os.path.join(root, relative_dir) if relative_dir else root
        entries: list[tuple[str, bool]] = []
        try:
            with os.scandir(full_dir) as scan:
                for entry in scan:
                    stop_if_cancelled()
                    if budget.visited == MAX_ENTRIES:
                        budget.exhausted = True
                        break
                    budget.visited += 1
                    entries.append((entry.name, entry.is_dir(follow_symlinks=False)))
        except OSError:
            continue
        subdirectories: list[str] = []
        for name, is_directory in sorted(entries):
            relative = f"{relative_dir}/{name}" if relative_dir else name
            full = os.path.join(full_dir, name)
            if not is_directory:
                yield relative, full
            elif readable(check_path, full) is not None:
                subdirectories.append(relative)
        if budget.exhausted:
            return
        pending.extend(reversed(subdirectories))


def directory_refusal(path: str, real: str) -> ToolOutput | None:
    """NOT_FOUND or INVALID_INPUT when `real` is not an existing directory; else None."""
    try:
        mode = os.lstat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return ToolOutput(text=f"{path} does not exist", outcome=OutcomeCategory.NOT_FOUND)
    if not stat.S_ISDIR(mode):
        return ToolOutput(text=f"{path} is not a directory", outcome=OutcomeCategory.INVALID_INPUT)
    return None


class FindFilesArguments(Arguments):
    """The arguments of `find_files`."""

    pattern: str = Field(
        min_length=1,
        description=(
            "A glob matched against each path relative to `path`: `*` and `?` stay within one "
            "name, `[abc]` is a set, `**` spans directories (`**/*.py`, `src/**/test_*.py`)."
        ),
    )
    path: str = Field(default=".", min_length=1, description="The directory to search.")
    limit: int = Field(default=200, ge=1, le=2000, description="How many matches to return.")


class FindFiles:
    """Find files below a directory whose relative paths match a glob."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="find_files",
        title="Find files",
        description=(
            "Find files (and links) below a directory whose path relative to it matches a "
            "glob. Returns the matching relative paths, sorted, one per line. Directories are "
            "searched but not listed; linked directories are not entered; files you may not "
            f"read are left out. At most `limit` matches and {MAX_ENTRIES} visited entries."
        ),
        parameters=FindFilesArguments.model_json_schema(),
        loading=Loading.DEFERRED,
        concurrency=Concurrency.PARALLEL_SAFE,
        effects=ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = FindFilesArguments

    def assess(self, arguments: FindFilesArguments) -> CallAssessment:
        """The one directory the call searches."""
        return one_path(arguments.path, FileOperation.READ)

    async def run(self, arguments: FindFilesArguments, run: ToolRun) -> ToolOutput:
        """Walk the directory and collect the matches."""
        work = partial(_find, arguments, run.targets["path"], run.check_path)
        return await anyio.to_thread.run_sync(work)


def _find(arguments: FindFilesArguments, target: BoundTarget, check_path: PathCheck) -> ToolOutput:
    problem = glob_problem(arguments.pattern)
    if problem:
        return ToolOutput(text=f"pattern: {problem}", outcome=OutcomeCategory.INVALID_INPUT)
    refused = directory_refusal(target.path, target.real)
    if refused:
        return refused
    matches = compile_glob(arguments.pattern)
    budget = WalkBudget()
    found: list[str] = []
    for relative, full in walk_tree(target.real, check_path, budget):
        if matches(relative) and readable(check_path, full) is not None:
            found.append(printable(relative))
            if len(found) == arguments.limit:
                break
    found.sort()
    if len(found) == arguments.limit:
        found.append(f"... reached the limit of {arguments.limit} matches; there may be more")
    elif budget.exhausted:
        found.append(f"... stopped after visiting {MAX_ENTRIES} entries; the search is incomplete")
    elif not found:
        found.append(f"no files under {target.path} match {arguments.pattern}")
    return ToolOutput(text="\n".join(found), file_activity=(activity(target),))
