"""The `attach_file` tool: attach a file to the agent's reply for the user; adapter layer.

Its one target is checked for the Attach operation, which only the session's artifacts
directory and configured roots that list `attach` grant; protected paths are denied as for
every operation. The file is read without following a link, capped in size, its type sniffed
from its content, and copied into the envelope's outbox under a fresh attachment id, so what
a client fetches later is what was attached even if the original changes. The receipt and
the `attachment_sent` event are journaled together by the pipeline.
"""

from __future__ import annotations

import hashlib
import os
from functools import partial
from pathlib import Path
from typing import ClassVar

import anyio.to_thread
from pydantic import Field

from adapters.fs import anchored
from adapters.fs.sniffing import sniff
from adapters.tools.contract import (
    Arguments,
    BoundTarget,
    CallAssessment,
    ToolOutput,
    ToolRun,
    activity,
    one_path,
)
from adapters.tools.files.atomic import read_bounded, refusal
from domain.attachments.admission import MAX_ATTACHMENT_BYTES
from domain.attachments.names import safe_name
from domain.attachments.records import MAX_CLAIMED_NAME, Sent
from domain.ids import AttachmentId
from domain.tools.definition import Concurrency, ToolDefinition, ToolEffects
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory

COPY_MODE = 0o400
"""The outbox copy is read-only: nothing in the session is meant to change it."""


class AttachFileArguments(Arguments):
    """The arguments of `attach_file`."""

    path: str = Field(
        min_length=1,
        description=(
            "The file to attach: in the session's artifacts directory, or under a root that "
            "allows attaching."
        ),
    )
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_CLAIMED_NAME,
        description="The file name the user sees; the file's own name when left out.",
    )


class AttachFile:
    """Attach one file to the reply: the user's client receives it with the message."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="attach_file",
        title="Attach file",
        description=(
            "Attach a file to your reply so the user receives it with your message. The file "
            "must be in the session's artifacts directory (named under This turn; write the "
            "file there first) or under a root that allows attaching. It is copied as it is "
            "now; later changes to it do not change the attachment. Returns the attachment's "
            "id, name, type and size."
        ),
        parameters=AttachFileArguments.model_json_schema(),
        concurrency=Concurrency.SEQUENTIAL,
        effects=ToolEffects(read_only=False, destructive=False, idempotent=False, open_world=False),
    )
    arguments: ClassVar[type[Arguments]] = AttachFileArguments

    def __init__(self, max_bytes: int = MAX_ATTACHMENT_BYTES) -> None:
        self.max_bytes = max_bytes

    def assess(self, arguments: AttachFileArguments) -> CallAssessment:
        """The one file the call attaches, checked for the Attach operation."""
        assessment = one_path(arguments.path, FileOperation.ATTACH)
        return assessment.model_copy(update={"summary": arguments.path})

    async def run(self, arguments: AttachFileArguments, run: ToolRun) -> ToolOutput:
        """Read, sniff and copy the file into the outbox."""
        if run.outbox is None:
            return ToolOutput(
                text="this session keeps no attachments", outcome=OutcomeCategory.ACCESS_DENIED
            )
        attach = partial(_attach, arguments, run.targets["path"], run.outbox, self.max_bytes)
        return await anyio.to_thread.run_sync(attach)


def _attach(
    arguments: AttachFileArguments, target: BoundTarget, outbox: Path, max_bytes: int
) -> ToolOutput:
    try:
        data = read_bounded(target.real, max_bytes)
    except OSError as error:
        output = refusal(target.path, error, "attach the files inside it one by one")
        if output is None:
            raise
        return output
    if data is None:
        size = os.stat(target.real).st_size
        return ToolOutput(
            text=f"{target.path} is {size} bytes; an attachment may have at most {max_bytes}",
            outcome=OutcomeCategory.INVALID_INPUT,
        )
    attachment_id = AttachmentId.new()
    with anchored.directory(str(outbox)) as outbox_fd:
        anchored.write_new(outbox_fd, str(attachment_id), data, COPY_MODE)
    sniffed = sniff(data)
    sent = Sent(
        attachment_id=attachment_id,
        name=safe_name(arguments.name or os.path.basename(target.path)),
        media_type=sniffed.media_type,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        source=target.real,
    )
    return ToolOutput(
        text=(
            f"attached {sent.name} ({sent.media_type}, {sent.size} bytes) as {attachment_id};"
            " the user receives it with your reply"
        ),
        file_activity=(activity(target),),
        attachment=sent,
    )
