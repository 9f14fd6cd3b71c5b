"""A process that makes one tool call on a real journal and is killed while the tool runs.

`python -m tests.crash_worker ROOT KIND`, KIND `inside` (a read-only tool that reaches
nothing beyond the trusted roots, ADR 0023) or `effects` (a tool that may change things).
It opens a session and a run in the home under ROOT, prints the session id, makes one
`read_file` call (so the run's roots are known and the session kept, as in a long run), then
calls the pausing tool of that KIND, which creates ROOT/running and waits to be killed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import ClassVar

import anyio
from pydantic import Field

from adapters.tools.contract import Arguments, CallAssessment, ToolOutput, ToolRun
from domain.tools.definition import ToolDefinition, ToolEffects
from domain.values.receipts import OutcomeCategory
from tests.pipeline import make_pipeline

INSIDE = ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=False)


class PauseArguments(Arguments):
    """Where to say that the tool runs."""

    marker: str = Field(min_length=1, description="A file created once the tool runs.")


class PausingTool:
    """Creates its marker, then waits for a minute: long enough to be killed in."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="pause_effects",
        description="Create a marker file, then wait.",
        parameters=PauseArguments.model_json_schema(),
    )
    arguments: ClassVar[type[Arguments]] = PauseArguments

    def assess(self, arguments: PauseArguments) -> CallAssessment:
        """No paths to check: the marker is the test's, outside the pipeline."""
        del arguments
        return CallAssessment()

    async def run(self, arguments: PauseArguments, run: ToolRun) -> ToolOutput:
        """Say that it runs, then wait."""
        del run
        Path(arguments.marker).touch()
        await anyio.sleep(60)
        return ToolOutput(text="waited")


class PausingInsideTool(PausingTool):
    """The pausing tool, declared to stay inside."""

    definition: ClassVar[ToolDefinition] = PausingTool.definition.model_copy(
        update={"name": "pause_inside", "effects": INSIDE}
    )


async def main(root: Path, kind: str) -> None:
    """Make the calls; never returns normally (the process is killed)."""
    pipeline = make_pipeline(root, extra_tools=[PausingTool(), PausingInsideTool()])
    (pipeline.workspace / "notes.txt").write_text("one line\n")
    sys.stdout.write(f"{pipeline.run.session_id}\n")
    sys.stdout.flush()
    first = await pipeline.call("read_file", path="notes.txt")
    assert first.outcome is OutcomeCategory.SUCCESS, first.text
    await pipeline.call(f"pause_{kind}", marker=str(root / "running"))


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
