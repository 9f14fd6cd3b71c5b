"""The first step of the pipeline: a call's tool, its decoded arguments, its record; adapter layer.

Decoding finds the tool a call names and validates its arguments with the tool's model;
arguments that do not decode are kept as input problems (redacted), to be answered as
invalid input. The arguments as the attempt records them are bounded, and when they are
cut, kept whole in a spill first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from pydantic import ValidationError

from adapters.pipeline.context import RunScope
from adapters.pipeline.receipts import input_problems
from adapters.pipeline.spills import write_spill
from adapters.pipeline.toolset import ToolSet
from adapters.tools.contract import Tool
from domain.ids import AttemptId, SpillId
from domain.tools.arguments import record_arguments
from domain.tools.output import redact
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import InputProblem, RecordedArguments

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DecodedCall:
    """One call as the pipeline received it: the request, its tool and decoded arguments."""

    attempt_id: AttemptId
    call: ToolCallRequest
    tool: Tool | None
    arguments: Any = None
    decode_error: str = ""
    problems: tuple[InputProblem, ...] = ()
    """For arguments that did not decode: each field and its message, redacted."""
    recorded: RecordedArguments | None = None
    """The arguments as the attempt's start records them."""


def decode(
    tools: ToolSet, call: ToolCallRequest, secrets: frozenset[str], refused: str = ""
) -> DecodedCall:
    """The call with a fresh attempt id, its tool, and its arguments decoded (or why not)."""
    attempt_id = AttemptId.new()
    tool = tools.get(call.name)
    if tool is None:
        return DecodedCall(attempt_id, call, None)
    if refused:
        problem = InputProblem(field="arguments", message=redact(refused, secrets))
        return DecodedCall(attempt_id, call, tool, decode_error=refused, problems=(problem,))
    try:
        arguments = tool.arguments.model_validate(call.arguments)
    except ValidationError as error:
        problems = input_problems(error, secrets)
        text = "; ".join(f"{p.field}: {p.message}" for p in problems)
        return DecodedCall(attempt_id, call, tool, decode_error=text, problems=problems)
    return DecodedCall(attempt_id, call, tool, arguments)


async def record(
    run: RunScope, call: ToolCallRequest, secrets: frozenset[str]
) -> RecordedArguments:
    """The call's arguments as its attempt records them; bounded ones spilled whole first."""
    recorded, whole = record_arguments(call.arguments, secrets)
    if whole is None:
        return recorded
    spill_id = SpillId.new()
    try:
        await anyio.to_thread.run_sync(write_spill, run.envelope.spills, spill_id, whole)
    except OSError:
        log.exception("the arguments of call %s could not be kept whole", call.call_id)
        return recorded
    return recorded.model_copy(update={"spill_id": spill_id})
