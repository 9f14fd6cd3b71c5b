"""The `read_file` tool: numbered lines of one text file with its revision; adapter layer."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
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
from adapters.tools.files.atomic import open_regular, read_chunks, refusal
from adapters.tools.files.revision import revision_of_chunks
from domain.tools.definition import Concurrency, ToolDefinition, ToolEffects
from domain.tools.output import redact_cut
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory

MAX_CONTENT_BYTES = 10 * 1024 * 1024
"""At most this much line content is kept for one answer, whatever the file's size."""
MAX_LINE_CHARS = 2000
"""Longer lines are cut here, with a marker."""
BINARY_SNIFF_BYTES = 8192
"""A NUL among the first this many bytes marks a file as binary."""
_LINE_BYTES = 4 * MAX_LINE_CHARS + 4  # enough UTF-8 for MAX_LINE_CHARS whole characters


class ReadFileArguments(Arguments):
    """The arguments of `read_file`."""

    path: str = Field(min_length=1, description="The file to read: relative, absolute or ~/.")
    start_line: int = Field(default=1, ge=1, description="The first line to show (1-based).")
    limit: int = Field(default=2000, ge=1, le=10_000, description="How many lines to show.")


class _Lines:
    """Counts every line of a stream and keeps the lines of one window, bounded in bytes."""

    def __init__(self, first: int, last: int, secrets: frozenset[str] = frozenset()) -> None:
        self.first, self.last = first, last
        self.secrets = secrets
        self.number = 1  # the line the next byte belongs to
        self.open = False  # the current line has bytes but no newline yet
        self.partial = bytearray()
        self.cut = False
        self.kept: list[str] = []
        self.kept_bytes = 0
        self.full = False

    def feed(self, chunk: bytes) -> None:
        newlines = chunk.count(b"\n")
        if self.full or self.number > self.last or self.number + newlines < self.first:
            self.number += newlines
            self.open = not chunk.endswith(b"\n")
            return
        if self._whole_lines(chunk, newlines):
            return
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._take(chunk[start:end])
            self._end_line()
            start = end + 1
        if start < len(chunk):
            self._take(chunk[start:])
            self.open = True

    def _whole_lines(self, chunk: bytes, newlines: int) -> bool:
        """Keep every line of `chunk` in one pass, if the common case allows; whether it did.

        The case: no line started before the chunk, every line of it falls in the window,
        none is long, nothing needs redacting and the window's byte bound is not reached.
        Then each line is kept exactly as the line-by-line path would keep it.
        """
        if (
            self.partial
            or self.secrets
            or self.number < self.first
            or self.number + newlines - 1 > self.last
            or self.kept_bytes + len(chunk) >= MAX_CONTENT_BYTES
        ):
            return False
        end = chunk.rfind(b"\n") + 1
        texts = chunk[:end].decode("utf-8", "replace").split("\n")
        texts.pop()  # what follows the last newline: nothing, or the line left open
        # A line of at most MAX_LINE_CHARS characters has at most 4 bytes for each (or 3 for
        # each replaced piece), so it fits _LINE_BYTES too: nothing of it would be cut.
        if any(len(text) > MAX_LINE_CHARS for text in texts):
            return False
        first = self.number
        self.kept.extend(f"{number:>6}\t{text}" for number, text in enumerate(texts, first))
        self.kept_bytes += end - newlines
        self.number = first + newlines
        self.open = False
        rest = chunk[end:]
        if rest:
            self._take(rest)
            self.open = True
        return True

    def finish(self) -> int:
        """End the stream; return how many lines it held."""
        if self.open:
            self._end_line()
        return self.number - 1

    def _take(self, piece: bytes) -> None:
        if self.first <= self.number <= self.last and not self.full:
            room = _LINE_BYTES - len(self.partial)
            self.partial += piece[:room]
            self.cut = self.cut or len(piece) > room

    def _end_line(self) -> None:
        if self.first <= self.number <= self.last and not self.full:
            text, cut = redact_cut(
                self.partial.decode("utf-8", "replace"), MAX_LINE_CHARS, self.secrets
            )
            if self.cut or cut:
                text += f" [... line cut at {MAX_LINE_CHARS} characters]"
            self.kept.append(f"{self.number:>6}\t{text}")
            self.kept_bytes += len(self.partial)
            self.full = self.kept_bytes >= MAX_CONTENT_BYTES
        self.partial.clear()
        self.cut = False
        self.open = False
        self.number += 1


class ReadFile:
    """Read a window of lines of a text file, numbered, with the file's revision."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="read_file",
        title="Read file",
        description=(
            "Read a text file. Returns a header `path: <path>  revision: <revision>  lines A-B "
            "of N`, then each line as its number, a tab and the text. Lines longer than "
            f"{MAX_LINE_CHARS} characters are cut. Use start_line and limit to page through a "
            "long file. Pass the revision to edit_file (required) or write_file (optional) so "
            "an edit never overwrites a change you have not seen. A binary file shows only its "
            "size and revision. For a directory use list_directory."
        ),
        parameters=ReadFileArguments.model_json_schema(),
        concurrency=Concurrency.PARALLEL_SAFE,
        effects=ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = ReadFileArguments

    def assess(self, arguments: ReadFileArguments) -> CallAssessment:
        """The one file the call reads."""
        return one_path(arguments.path, FileOperation.READ)

    async def run(self, arguments: ReadFileArguments, run: ToolRun) -> ToolOutput:
        """Read the window of lines the arguments ask for.

        A small regular file is read right away: that costs less than the round trip to a
        worker thread. Anything else is read in a worker thread.
        """
        read = partial(_read, arguments, run.targets["path"], run.secrets)
        if _small(run.targets["path"].real):
            return read()
        return await anyio.to_thread.run_sync(read)


MAX_HASHED_BYTES = 10 * 1024 * 1024
"""Larger files are read only up to the window asked for and get no revision."""
INLINE_BYTES = 64 * 1024
"""Regular files up to this size are read on the event loop."""


def _small(real: str) -> bool:
    try:
        info = os.stat(real)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size <= INLINE_BYTES


def _read(
    arguments: ReadFileArguments, target: BoundTarget, secrets: frozenset[str] = frozenset()
) -> ToolOutput:
    last = arguments.start_line + arguments.limit - 1
    lines = _Lines(arguments.start_line, last, secrets)
    try:
        fd = open_regular(target.real)
    except OSError as error:
        output = refusal(target.path, error, "use list_directory")
        if output is None:
            raise
        return output
    try:
        size = os.fstat(fd).st_size
        revision, binary, complete = _scan(fd, lines, last, size)
    finally:
        os.close(fd)
    return _compose(arguments, target, lines, revision, binary=binary, complete=complete)


def _scan(fd: int, lines: _Lines, last: int, size: int) -> tuple[str, bool, bool]:
    """Feed the file to `lines` and hash it: (revision, binary, whole file read).

    A file larger than MAX_HASHED_BYTES is read only until the window is full; it then has
    no revision (edit_file refuses such files anyway) and its line count is a lower bound.
    """
    binary: list[bool] = []
    stopped: list[bool] = []

    def chunks() -> Iterator[bytes]:
        for chunk in read_chunks(fd):
            if not binary:
                binary.append(b"\0" in chunk[:BINARY_SNIFF_BYTES])
            if not binary[0]:
                lines.feed(chunk)
            yield chunk
            if size > MAX_HASHED_BYTES and (binary[0] or lines.number > last or lines.full):
                stopped.append(True)
                return

    revision = revision_of_chunks(chunks())
    if stopped:
        revision = "not computed (file too large to edit)"
    return revision, bool(binary and binary[0]), not stopped


def _compose(  # noqa: PLR0913 - the facts one read gathered
    arguments: ReadFileArguments,
    target: BoundTarget,
    lines: _Lines,
    revision: str,
    *,
    binary: bool,
    complete: bool,
) -> ToolOutput:
    """The tool's output from what the read found."""
    last = arguments.start_line + arguments.limit - 1
    total = lines.finish()
    header = f"path: {target.path}  revision: {revision}"
    if binary:
        size = os.stat(target.real).st_size
        text = f"{header}\nbinary file ({size} bytes); content not shown"
    elif total == 0:
        text = f"{header}  empty file (0 lines)"
    elif arguments.start_line > total:
        return ToolOutput(
            text=f"start_line {arguments.start_line} is past the end of {target.path} "
            f"({total} lines)",
            outcome=OutcomeCategory.INVALID_INPUT,
        )
    else:
        counted = str(total) if complete else f"at least {total}"
        text = _numbered(header, lines, arguments.start_line, min(last, total), counted)
    return ToolOutput(text=text, file_activity=(activity(target),))


def _numbered(header: str, lines: _Lines, first: int, last: int, counted: str) -> str:
    shown = first + len(lines.kept) - 1
    total = int(counted.removeprefix("at least "))
    parts = [f"{header}  lines {first}-{shown} of {counted}", *lines.kept]
    if shown < last:
        parts.append(f"... output stopped after {MAX_CONTENT_BYTES} bytes of lines")
    if shown < total:
        parts.append(f"... {total - shown} more lines; continue with start_line={shown + 1}")
    return "\n".join(parts)
