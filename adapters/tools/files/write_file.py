"""The `write_file` tool: create or replace a whole text file atomically; adapter layer."""

from __future__ import annotations

import os
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
from adapters.tools.files.atomic import (
    atomic_replace,
    named_link_refusal,
    open_regular,
    read_chunks,
    refusal,
)
from adapters.tools.files.revision import revision_of, revision_of_chunks
from domain.tools.definition import ToolDefinition, ToolEffects
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory, RemediationCode


class WriteFileArguments(Arguments):
    """The arguments of `write_file`."""

    path: str = Field(min_length=1, description="The file to write: relative, absolute or ~/.")
    content: str = Field(description="The complete new content of the file, as UTF-8 text.")
    revision: str | None = Field(
        default=None,
        description=(
            "The revision read_file last reported for this file. When given, the write only "
            "happens if the file still has exactly that revision. Omit it to create a file or "
            "to overwrite without checking."
        ),
    )


class WriteFile:
    """Create a file, or replace all of an existing file's content, in one atomic step."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="write_file",
        title="Write file",
        description=(
            "Write the complete content of a text file, creating it or replacing what it "
            "holds. The write is atomic: readers see the old or the new content, never a mix. "
            "An existing file keeps its permissions. The parent directory must exist; no "
            "directories are created. Pass `revision` from read_file to make sure you do not "
            "overwrite a change you have not seen. Prefer edit_file for changes to part of a "
            "file. Returns the number of bytes written and the new revision."
        ),
        parameters=WriteFileArguments.model_json_schema(),
        effects=ToolEffects(read_only=False, destructive=True, idempotent=True, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = WriteFileArguments

    def assess(self, arguments: WriteFileArguments) -> CallAssessment:
        """The one file the call writes."""
        return one_path(arguments.path, FileOperation.WRITE)

    async def run(self, arguments: WriteFileArguments, run: ToolRun) -> ToolOutput:
        """Check the revision if one was given, then replace the file."""
        return await anyio.to_thread.run_sync(partial(_write, arguments, run.targets["path"]))


def _write(arguments: WriteFileArguments, target: BoundTarget) -> ToolOutput:
    linked = named_link_refusal(target)
    if linked:
        return linked
    try:
        data = arguments.content.encode("utf-8")
    except UnicodeEncodeError as error:
        text = f"content is not valid UTF-8 text: {error.reason} at character {error.start}"
        return ToolOutput(text=text, outcome=OutcomeCategory.INVALID_INPUT)
    if not os.path.isdir(os.path.dirname(target.real)):
        text = (
            f"the directory {os.path.dirname(target.path)} does not exist; "
            "write_file creates no directories"
        )
        return ToolOutput(text=text, outcome=OutcomeCategory.NOT_FOUND)
    try:
        if arguments.revision is not None:
            stale = _stale(arguments.revision, target)
            if stale:
                return stale
        atomic_replace(target.real, data)
    except OSError as error:
        output = refusal(target.path, error)
        if output is None:
            raise
        return output
    return ToolOutput(
        text=f"wrote {len(data)} bytes to {target.path}; revision: {revision_of(data)}",
        file_activity=(activity(target),),
    )


def _stale(expected: str, target: BoundTarget) -> ToolOutput | None:
    """A correction when the file does not have the `expected` revision; None when it does."""
    try:
        fd = open_regular(target.real)
    except (FileNotFoundError, NotADirectoryError):
        found = f"{target.path} does not exist"
    else:
        try:
            current = revision_of_chunks(read_chunks(fd))
        finally:
            os.close(fd)
        if current == expected:
            return None
        found = f"the current revision of {target.path} is {current}"
    return ToolOutput(
        text=f"revision {expected} is stale: {found}; nothing was written",
        outcome=OutcomeCategory.RECOVERABLE_CORRECTION,
        remediation=RemediationCode.REFRESH_FILE_REVISION,
    )
