"""Tools that act on the session: project directory, saved output, tool loading; adapter layer.

None of them touches a file beyond the one directory `set_working_directory` declares, and
none grants anything: a declared project still goes through path access on every later call,
and a loaded tool still goes through authorization.
"""

from __future__ import annotations

import os
import stat
from typing import ClassVar

from pydantic import Field

from adapters.tools.contract import Arguments, CallAssessment, PathTarget, ToolOutput, ToolRun
from domain.tools.definition import Concurrency, Loading, ToolDefinition, ToolEffects
from domain.tools.output import WINDOW_LIMIT
from domain.values.authorization import FileOperation
from domain.values.conversation import ToolName
from domain.values.receipts import OutcomeCategory

MAX_CALL_ID = 128
CALL_ID_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"
"""The shape of a provider call id; anything else cannot name saved output."""


class SetWorkingDirectoryArguments(Arguments):
    """Arguments of `set_working_directory`."""

    path: str = Field(
        min_length=1,
        max_length=4096,
        description=(
            "The directory to use as the project directory: absolute, or relative to the "
            "current project directory (else the session workspace)."
        ),
    )


class SetWorkingDirectory:
    """Declare the project directory that later relative paths and shell commands use."""

    arguments: ClassVar[type[Arguments]] = SetWorkingDirectoryArguments
    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="set_working_directory",
        title="Set working directory",
        description=(
            "Set the project directory for this session. Later relative paths and shell "
            "commands without a cwd resolve against it. The directory must exist and lie "
            "under a trusted root that allows declaring a project there."
        ),
        parameters=SetWorkingDirectoryArguments.model_json_schema(),
        loading=Loading.CORE,
        concurrency=Concurrency.SEQUENTIAL,
        effects=ToolEffects(read_only=False, destructive=False, idempotent=True, open_world=False),
    )

    def assess(self, arguments: SetWorkingDirectoryArguments) -> CallAssessment:
        """The one target: the directory, checked for declaring project scope."""
        target = PathTarget(
            argument="path", raw=arguments.path, operation=FileOperation.DECLARE_PROJECT_SCOPE
        )
        return CallAssessment(targets=(target,), summary=arguments.path)

    async def run(self, arguments: SetWorkingDirectoryArguments, run: ToolRun) -> ToolOutput:
        """Declare the checked real location, if it is an existing directory."""
        real = run.targets["path"].real
        try:
            mode = os.stat(real).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return ToolOutput(
                text=f"no directory at {arguments.path}", outcome=OutcomeCategory.NOT_FOUND
            )
        if not stat.S_ISDIR(mode):
            return ToolOutput(
                text=f"{arguments.path} is not a directory", outcome=OutcomeCategory.INVALID_INPUT
            )
        return ToolOutput(text=f"project directory is now {real}", project_declaration=real)


class ToolOutputReadArguments(Arguments):
    """Arguments of `tool_output_read`."""

    call_id: str = Field(
        min_length=1,
        max_length=MAX_CALL_ID,
        pattern=CALL_ID_PATTERN,
        description="The call_id named in the truncation notice of an earlier result.",
    )
    start: int = Field(
        default=0, ge=0, description="The character offset to read from; 0 is the beginning."
    )
    limit: int = Field(
        default=WINDOW_LIMIT,
        ge=1,
        le=WINDOW_LIMIT,
        description=f"How many characters to return, at most {WINDOW_LIMIT}.",
    )


class ToolOutputRead:
    """Read back a window of an earlier result that was too long to show inline."""

    arguments: ClassVar[type[Arguments]] = ToolOutputReadArguments
    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="tool_output_read",
        title="Read truncated output",
        description=(
            "Read more of an earlier tool result that was truncated. Pass the call_id from "
            "the truncation notice and a start offset; the reply ends with the range shown "
            "and the next start offset, or says the end was reached."
        ),
        parameters=ToolOutputReadArguments.model_json_schema(),
        loading=Loading.CORE,
        concurrency=Concurrency.PARALLEL_SAFE,
        effects=ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=False),
    )

    def assess(self, arguments: ToolOutputReadArguments) -> CallAssessment:
        """No path targets: saved output is read through the session, not the filesystem."""
        return CallAssessment(summary=f"{arguments.call_id} from {arguments.start}")

    async def run(self, arguments: ToolOutputReadArguments, run: ToolRun) -> ToolOutput:
        """One window of the saved output and where the next one starts."""
        found = run.read_spill(arguments.call_id, arguments.start, arguments.limit)
        if found is None:
            return ToolOutput(
                text=f"no saved output for call_id {arguments.call_id!r}",
                outcome=OutcomeCategory.NOT_FOUND,
            )
        text, next_start, total = found
        end = arguments.start + len(text)
        if next_start is None:
            marker = "[end of output]"
        else:
            marker = f"[characters {arguments.start}-{end} of {total}; next start: {next_start}]"
        return ToolOutput(text=f"{text}\n{marker}")


class LoadToolArguments(Arguments):
    """Arguments of `load_tool`."""

    name: ToolName = Field(description="The name of a deferred tool to add to later requests.")


class LoadTool:
    """Add a deferred tool to the model requests of this session."""

    arguments: ClassVar[type[Arguments]] = LoadToolArguments
    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="load_tool",
        title="Load tool",
        description=(
            "Make a deferred tool available: from the next model request on it is offered "
            "like any other tool. Loading grants nothing; every call is still authorized."
        ),
        parameters=LoadToolArguments.model_json_schema(),
        loading=Loading.CORE,
        concurrency=Concurrency.PARALLEL_SAFE,
        effects=ToolEffects(read_only=False, destructive=False, idempotent=True, open_world=False),
    )

    def assess(self, arguments: LoadToolArguments) -> CallAssessment:
        """No path targets."""
        return CallAssessment(summary=arguments.name)

    async def run(self, arguments: LoadToolArguments, run: ToolRun) -> ToolOutput:
        """Load the tool if this session may see it and it is not in the request yet."""
        name = arguments.name
        seen = run.visibility(name)
        if seen is None:
            return ToolOutput(text=f"no tool named {name!r}", outcome=OutcomeCategory.NOT_FOUND)
        if not seen.policy_visible:
            return ToolOutput(
                text=f"{name} cannot be loaded: {seen.reason}",
                outcome=OutcomeCategory.ACCESS_DENIED,
            )
        if seen.in_request:
            return ToolOutput(text=f"{name} is already available")
        return ToolOutput(
            text=f"{name} is now available from the next model request", loaded_tool=name
        )
