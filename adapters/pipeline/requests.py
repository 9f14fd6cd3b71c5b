"""A call's request from the arguments a client sent, even when they cannot be stored.

Adapter layer. A request's arguments must be JSON the journal stores exactly (see
domain/text.py): at most 64 levels deep, integers within 64 bits, valid UTF-8. Arguments
outside that are the caller's invalid input, not a failure of the server: the request is
made without them, and the reason goes to the dispatcher, which journals the attempt and
answers it as `invalid_input` like any other argument the tool's model refuses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from domain.ids import CallId
from domain.text import MAX_DEPTH
from domain.values.conversation import ToolCallRequest

TOO_DEEP = f"nest deeper than {MAX_DEPTH} levels"
"""Why arguments nested too deeply are refused, however deep they are."""


def call_request(
    call_id: CallId, name: str, arguments: Mapping[str, Any]
) -> tuple[ToolCallRequest, str]:
    """The request for a call, and why its arguments cannot be taken ("" when they can).

    Raises ValidationError for a malformed call id or tool name: that is not a call of a
    tool at all.
    """
    try:
        return ToolCallRequest(call_id=call_id, name=name, arguments=dict(arguments)), ""
    except ValidationError as error:
        problems = error.errors()
        if not all(problem["loc"][:1] == ("arguments",) for problem in problems):
            raise
    bare = ToolCallRequest(call_id=call_id, name=name)
    return bare, "; ".join(dict.fromkeys(_described(problem) for problem in problems))


def _described(problem: ErrorDetails) -> str:
    """One refused argument as `where: why`; the place of a nesting failure is left out."""
    message = problem["msg"].removeprefix("Value error, ")
    if "recursion" in problem["type"] or "nests deeper than" in message:
        return f"arguments: {TOO_DEEP}"
    return f"{'.'.join(str(part) for part in problem['loc'])}: {message}"
