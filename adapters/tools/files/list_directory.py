"""The `list_directory` tool: the entries of one directory, sorted by name; adapter layer."""

from __future__ import annotations

import errno
import os
import stat
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
from adapters.tools.files.find_files import PathCheck
from adapters.tools.files.globbing import printable
from domain.tools.definition import Concurrency, ToolDefinition, ToolEffects
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory

MAX_NAMES = 100_000
"""At most this many names are read from one directory; the sort covers only those."""
_OPEN_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = {
    stat.S_IFIFO: "fifo",
    stat.S_IFSOCK: "socket",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
}


class ListDirectoryArguments(Arguments):
    """The arguments of `list_directory`."""

    path: str = Field(
        default=".", min_length=1, description="The directory to list: relative, absolute or ~/."
    )
    limit: int = Field(default=500, ge=1, le=5000, description="How many entries to show.")


class ListDirectory:
    """List one directory: subdirectories, files with sizes, and links with their targets."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="list_directory",
        title="List directory",
        description=(
            "List the entries of a directory, sorted by name, one per line: a subdirectory "
            "ends with `/`, a file shows its size in bytes, a symbolic link shows as "
            "`name@ -> target`. Entries past the limit are counted in a final `... N more` "
            "line. Not recursive; use find_files to search a tree."
        ),
        parameters=ListDirectoryArguments.model_json_schema(),
        concurrency=Concurrency.PARALLEL_SAFE,
        effects=ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = ListDirectoryArguments

    def assess(self, arguments: ListDirectoryArguments) -> CallAssessment:
        """The one directory the call reads."""
        return one_path(arguments.path, FileOperation.READ)

    async def run(self, arguments: ListDirectoryArguments, run: ToolRun) -> ToolOutput:
        """List the directory."""
        work = partial(_list, arguments, run.targets["path"], run.check_path)
        return await anyio.to_thread.run_sync(work)


def _list(
    arguments: ListDirectoryArguments, target: BoundTarget, check_path: PathCheck
) -> ToolOutput:
    try:
        dir_fd = os.open(target.real, _OPEN_FLAGS)
    except OSError as error:
        return _refusal(target.path, error)
    try:
        names: list[str] = []
        with os.scandir(dir_fd) as entries:
            for entry in entries:
                if len(names) == MAX_NAMES:
                    break
                names.append(entry.name)
            truncated = len(names) == MAX_NAMES and next(entries, None) is not None
        names.sort()
        shown = [_describe(name, dir_fd, target, check_path) for name in names[: arguments.limit]]
    finally:
        os.close(dir_fd)
    lines = [f"directory: {target.path}  entries: {len(names)}{'+' if truncated else ''}"]
    lines += shown
    rest = len(names) - len(shown)
    if truncated:
        lines.append(f"... {rest}+ more (only the first {MAX_NAMES} names read were sorted)")
    elif rest:
        lines.append(f"... {rest} more")
    return ToolOutput(text="\n".join(lines), file_activity=(activity(target),))


def _readable(check_path: PathCheck, path: str) -> bool:
    try:
        return check_path(path, FileOperation.READ).allowed
    except ValueError:
        return False


def _refusal(path: str, error: OSError) -> ToolOutput:
    if isinstance(error, FileNotFoundError):
        return ToolOutput(text=f"{path} does not exist", outcome=OutcomeCategory.NOT_FOUND)
    if isinstance(error, NotADirectoryError):
        return ToolOutput(
            text=f"{path} is not a directory; use read_file", outcome=OutcomeCategory.INVALID_INPUT
        )
    if error.errno == errno.ELOOP:
        return ToolOutput(text=f"{path} is a symbolic link", outcome=OutcomeCategory.ACCESS_DENIED)
    raise error


def _describe(name: str, dir_fd: int, directory: BoundTarget, check_path: PathCheck) -> str:
    """One entry's line: `name/`, `name  N bytes`, `name@ -> target` or `name  (kind)`.

    A link's target is shown only when reading through the link would be allowed, so a
    listing does not reveal places outside the roots.
    """
    shown = printable(name)
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return f"{shown}  (removed while listing)"
    if stat.S_ISLNK(info.st_mode):
        through = os.path.join(directory.path, name)
        if not _readable(check_path, through):
            return f"{shown}@ -> (a place this session may not read)"
        return f"{shown}@ -> {printable(os.readlink(name, dir_fd=dir_fd))}"
    if stat.S_ISDIR(info.st_mode):
        return f"{shown}/"
    if stat.S_ISREG(info.st_mode):
        return f"{shown}  {info.st_size} bytes"
    return f"{shown}  ({_KINDS.get(stat.S_IFMT(info.st_mode), 'special file')})"
