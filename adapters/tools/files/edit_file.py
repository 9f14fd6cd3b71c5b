"""The `edit_file` tool: replace exact text in a file read at a known revision; adapter layer."""

from __future__ import annotations

from functools import partial
from typing import ClassVar, NoReturn

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
from adapters.tools.files.atomic import atomic_replace, named_link_refusal, read_bounded, refusal
from adapters.tools.files.revision import revision_of
from domain.tools.definition import ToolDefinition, ToolEffects
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory, RemediationCode

MAX_EDIT_BYTES = 10 * 1024 * 1024
"""Files, and edit results, larger than this are refused."""


class EditFileArguments(Arguments):
    """The arguments of `edit_file`."""

    path: str = Field(min_length=1, description="The file to edit: relative, absolute or ~/.")
    old_text: str = Field(
        min_length=1,
        description="The exact text to replace, including whitespace and indentation.",
    )
    new_text: str = Field(description="The text that takes its place (may be empty).")
    revision: str = Field(
        min_length=1, description="The revision read_file last reported for this file."
    )
    replace_all: bool = Field(
        default=False,
        description="Replace every occurrence; otherwise old_text must occur exactly once.",
    )


class EditFile:
    """Replace exact text in a UTF-8 file, refusing if the file changed since it was read."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="edit_file",
        title="Edit file",
        description=(
            "Replace `old_text` with `new_text` in a UTF-8 text file. `old_text` must match "
            "the file exactly (whitespace included) and occur exactly once, unless "
            "`replace_all` is set. `revision` is required: the revision read_file last "
            "reported; if the file changed since, nothing is written and you must read it "
            "again. The write is atomic and keeps the file's permissions. Returns the number "
            "of replacements and the new revision."
        ),
        parameters=EditFileArguments.model_json_schema(),
        effects=ToolEffects(read_only=False, destructive=True, idempotent=True, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = EditFileArguments

    def assess(self, arguments: EditFileArguments) -> CallAssessment:
        """The one file the call writes."""
        return one_path(arguments.path, FileOperation.WRITE)

    async def run(self, arguments: EditFileArguments, run: ToolRun) -> ToolOutput:
        """Check the revision, make the replacement and write the file."""
        return await anyio.to_thread.run_sync(partial(_edit, arguments, run.targets["path"]))


class _RefusedError(Exception):
    """An expected failure, carrying the output that reports it."""

    def __init__(self, output: ToolOutput) -> None:
        super().__init__(output.text)
        self.output = output


def _refuse(text: str, outcome: OutcomeCategory = OutcomeCategory.INVALID_INPUT) -> NoReturn:
    remediation = None
    if outcome is OutcomeCategory.RECOVERABLE_CORRECTION:
        remediation = RemediationCode.REFRESH_FILE_REVISION
    raise _RefusedError(ToolOutput(text=text, outcome=outcome, remediation=remediation))


def _edit(arguments: EditFileArguments, target: BoundTarget) -> ToolOutput:
    linked = named_link_refusal(target)
    if linked:
        return linked
    try:
        return _apply(arguments, target)
    except _RefusedError as refused:
        return refused.output
    except OSError as error:
        output = refusal(target.path, error, "edit_file edits files")
        if output is None:
            raise
        return output


def _apply(arguments: EditFileArguments, target: BoundTarget) -> ToolOutput:
    path = target.path
    data = read_bounded(target.real, MAX_EDIT_BYTES)
    if data is None:
        _refuse(f"{path} is larger than {MAX_EDIT_BYTES} bytes; edit_file cannot edit it")
    current = revision_of(data)
    if current != arguments.revision:
        _refuse(
            f"revision {arguments.revision} is stale: the current revision of {path} is "
            f"{current}; nothing was written. Read the file again before editing it.",
            OutcomeCategory.RECOVERABLE_CORRECTION,
        )
    result, count = _replace(arguments, data, path)
    atomic_replace(target.real, result)
    return ToolOutput(
        text=f"replaced {count} occurrence{'s' if count > 1 else ''} in {path}; "
        f"revision: {revision_of(result)}",
        file_activity=(activity(target),),
    )


def _replace(arguments: EditFileArguments, data: bytes, path: str) -> tuple[bytes, int]:
    """The edited content and the number of replacements; refuses an edit that cannot be made."""
    old, new = arguments.old_text, arguments.new_text
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        _refuse(f"{path} is not UTF-8 text ({error.reason} at byte {error.start})")
    if old == new:
        _refuse("old_text and new_text are the same; there is nothing to change")
    count = text.count(old)
    if count == 0:
        _refuse(
            f"old_text was not found in {path}; it must match the file exactly, "
            "including whitespace and indentation"
        )
    if count > 1 and not arguments.replace_all:
        _refuse(
            f"old_text occurs {count} times in {path}; include more surrounding text to make "
            "it unique, or set replace_all to replace every occurrence"
        )
    too_large = f"the edited file would be larger than {MAX_EDIT_BYTES} bytes"
    if len(text) + count * (len(new) - len(old)) > MAX_EDIT_BYTES:
        _refuse(too_large)
    try:
        result = text.replace(old, new).encode("utf-8")
    except UnicodeEncodeError as error:
        _refuse(f"new_text is not valid UTF-8 text: {error.reason}")
    if len(result) > MAX_EDIT_BYTES:
        _refuse(too_large)
    return result, count
