"""The `grep` tool: lines matching a regular expression in a file or a tree; adapter layer."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import ClassVar

import anyio.to_thread
import regex
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
from adapters.tools.files.atomic import read_bounded
from adapters.tools.files.cancel import stop_if_cancelled
from adapters.tools.files.find_files import (
    MAX_ENTRIES,
    PathCheck,
    WalkBudget,
    readable,
    walk_tree,
)
from adapters.tools.files.globbing import compile_glob, glob_problem, printable
from adapters.tools.files.patterns import PatternError, compile_regex
from domain.tools.definition import Concurrency, ToolDefinition, ToolEffects
from domain.tools.output import redact_cut
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory

SEARCH_SECONDS = 10.0
"""Matching time one search may spend; a pattern that backtracks without end is stopped."""
MAX_FILE_BYTES = 5 * 1024 * 1024
"""Larger files are skipped."""
MAX_TOTAL_BYTES = 100 * 1024 * 1024
"""One search reads at most about this much."""
MAX_LINE_CHARS = 500
"""A matching line is shown up to this many characters."""
BINARY_SNIFF_BYTES = 8192
"""A NUL among the first this many bytes marks a file as binary; it is skipped."""


class GrepArguments(Arguments):
    """The arguments of `grep`."""

    pattern: str = Field(min_length=1, description="A Python regular expression.")
    path: str = Field(default=".", min_length=1, description="The file or directory to search.")
    glob: str | None = Field(
        default=None,
        description=(
            "In a directory, search only files whose name matches this glob (`*.py`); a glob "
            "with a `/` is matched against the path relative to `path` (`src/**/*.py`)."
        ),
    )
    ignore_case: bool = Field(default=False, description="Match letters in either case.")
    limit: int = Field(default=100, ge=1, le=1000, description="How many matching lines to show.")


@dataclass
class _Tally:
    """What one search saw."""

    lines: list[str] = field(default_factory=list)
    files: int = 0
    files_matching: int = 0
    binary: int = 0
    large: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    timed_out: bool = False
    budget: float = SEARCH_SECONDS


class Grep:
    """Search the lines of a file, or of every readable text file in a tree."""

    def __init__(self, search_seconds: float = SEARCH_SECONDS) -> None:
        self.search_seconds = search_seconds

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="grep",
        title="Search file contents",
        description=(
            "Search for a Python regular expression, line by line, in a file or in every file "
            "below a directory. Returns `relative/path:line: text` per matching line (text cut "
            f"at {MAX_LINE_CHARS} characters), then a count. Skips binary files, files over "
            f"{MAX_FILE_BYTES // (1024 * 1024)} MiB, files you may not read and linked "
            "directories. Use glob to narrow a directory search by file name."
        ),
        parameters=GrepArguments.model_json_schema(),
        concurrency=Concurrency.PARALLEL_SAFE,
        effects=ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = GrepArguments

    def assess(self, arguments: GrepArguments) -> CallAssessment:
        """The one file or directory the call searches."""
        return one_path(arguments.path, FileOperation.READ)

    async def run(self, arguments: GrepArguments, run: ToolRun) -> ToolOutput:
        """Search the file or the tree."""
        work = partial(
            _grep,
            arguments,
            run.targets["path"],
            run.check_path,
            run.secrets,
            self.search_seconds,
        )
        return await anyio.to_thread.run_sync(work)


def _invalid(text: str) -> ToolOutput:
    return ToolOutput(text=text, outcome=OutcomeCategory.INVALID_INPUT)


def _grep(
    arguments: GrepArguments,
    target: BoundTarget,
    check_path: PathCheck,
    secrets: frozenset[str] = frozenset(),
    search_seconds: float = SEARCH_SECONDS,
) -> ToolOutput:
    try:
        pattern = compile_regex(arguments.pattern, regex.IGNORECASE if arguments.ignore_case else 0)
    except PatternError as error:
        return _invalid(f"pattern: {error}")
    if arguments.glob is not None and (problem := glob_problem(arguments.glob)):
        return _invalid(f"glob: {problem}")
    try:
        mode = os.lstat(target.real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return ToolOutput(text=f"{target.path} does not exist", outcome=OutcomeCategory.NOT_FOUND)
    budget = WalkBudget()
    if stat.S_ISDIR(mode):
        files = _tree(target.real, arguments.glob, check_path, budget)
    elif stat.S_ISREG(mode):
        files = iter([(os.path.basename(target.path), target.real)])
    else:
        text = f"{target.path} is not a regular file or a directory"
        return ToolOutput(text=text, outcome=OutcomeCategory.ACCESS_DENIED)
    tally = _Tally(budget=search_seconds)
    for relative, real in files:
        _search(pattern, printable(relative), real, tally, arguments.limit, secrets)
        if tally.timed_out:
            break
        if len(tally.lines) >= arguments.limit or tally.bytes_read > MAX_TOTAL_BYTES:
            break
    return ToolOutput(
        text="\n".join([*tally.lines, _summary(tally, arguments.limit, budget)]),
        file_activity=(activity(target),),
    )


def _tree(
    root: str, glob: str | None, check_path: PathCheck, budget: WalkBudget
) -> Iterable[tuple[str, str]]:
    """The readable files below `root` that pass the glob, with their real locations."""
    matches: Callable[[str], bool] = compile_glob(glob) if glob else lambda _: True
    whole_path = glob is not None and "/" in glob
    for relative, full in walk_tree(root, check_path, budget):
        if matches(relative if whole_path else os.path.basename(relative)):
            real = readable(check_path, full)
            if real is not None:
                yield relative, real


def _search(  # noqa: PLR0913, PLR0917 - the search's inputs and its running tally
    pattern: regex.Pattern[str],
    shown: str,
    real: str,
    tally: _Tally,
    limit: int,
    secrets: frozenset[str] = frozenset(),
) -> None:
    """Add the matching lines of one file to `tally`; skip what cannot be searched."""
    try:
        data = read_bounded(real, MAX_FILE_BYTES)
    except OSError:  # a linked directory, a special file, or gone since the walk
        return
    if data is None:
        tally.large += 1
        return
    tally.bytes_read += len(data)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        tally.binary += 1
        return
    tally.files += 1
    lines = data.decode("utf-8", "replace").split("\n")
    if lines[-1] == "":
        lines.pop()
    before = len(tally.lines)
    for number, line in enumerate(lines, 1):
        if number % 4096 == 0:
            stop_if_cancelled()
        left = tally.budget - tally.seconds
        began = time.monotonic()
        try:
            found = pattern.search(line, timeout=max(left, 0.001))
        except TimeoutError:
            tally.timed_out = True
            break
        finally:
            tally.seconds += time.monotonic() - began
        if found:
            shown_line, was_cut = redact_cut(line, MAX_LINE_CHARS, secrets)
            cut = shown_line + (" [...]" if was_cut else "")
            tally.lines.append(f"{shown}:{number}: {cut}")
            if len(tally.lines) >= limit:
                break
    tally.files_matching += len(tally.lines) > before


def _summary(tally: _Tally, limit: int, budget: WalkBudget) -> str:
    """The closing count line, with every reason the search may be incomplete."""
    count = len(tally.lines)
    text = f"{count} matching lines in {tally.files_matching} of {tally.files} files searched"
    notes = []
    if count >= limit:
        notes.append(f"stopped at the limit of {limit} lines")
    if budget.exhausted:
        notes.append(f"stopped after visiting {MAX_ENTRIES} entries")
    if tally.bytes_read > MAX_TOTAL_BYTES:
        notes.append(f"stopped after reading {MAX_TOTAL_BYTES} bytes")
    if tally.timed_out:
        notes.append(f"stopped after {tally.budget:g} s of matching: simplify the pattern")
    if tally.binary:
        notes.append(f"binary files skipped: {tally.binary}")
    if tally.large:
        notes.append(f"files over {MAX_FILE_BYTES} bytes skipped: {tally.large}")
    return f"{text}; {'; '.join(notes)}" if notes else text
