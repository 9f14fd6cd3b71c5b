"""Stdin lines the SDK cannot read, and the one JSON-RPC error that answers each; adapter layer.

The SDK's stdio transport drops a line it cannot validate, so a client that sent garbage, or
a request with an id but a malformed envelope (`"params": [1]`), waited for its own
timeout. Over HTTP each such message gets an error response; over stdio it now does too:
JSON-RPC 2.0 answers what is not JSON with -32700 and id null, and an invalid request with
-32600 (-32602 when only its params are malformed), carrying its id when one can be read.
Notifications and responses are never answered, whatever their shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types
import orjson
from mcp_types.jsonrpc import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from pydantic import ValidationError

_SHOWN_CHARS = 200
"""A parser's message is cut to this length in the error sent back."""


@dataclass(frozen=True)
class Verdict:
    """Whether the SDK can read a line and, when not, what answers it (None: nothing)."""

    readable: bool
    answer: types.JSONRPCError | None = None


READABLE = Verdict(readable=True)
SKIPPED = Verdict(readable=False)


def verdict(line: str) -> Verdict:
    """Read `line` as the SDK will; for a line it would drop, the error response it needs."""
    if not line.strip():
        return SKIPPED  # a blank line is no message: nothing to read, nothing to answer
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as error:
        unparsed = [e["msg"] for e in error.errors() if e["type"] == "json_invalid"]
        return _refusal(line, unparsed[0].removeprefix("Invalid JSON: ") if unparsed else "")
    return READABLE


def _refusal(line: str, unparsed: str) -> Verdict:
    """The answer to a line the SDK refused; `unparsed` is why its parser did, if it did."""
    try:
        message = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        return _answer(None, PARSE_ERROR, f"Parse error: {str(error)[:_SHOWN_CHARS]}")
    if isinstance(message, dict) and not _is_request(message):
        return SKIPPED
    request_id = _request_id(message)
    if unparsed:  # JSON the SDK's parser still refuses, such as one nesting too deeply
        return _answer(request_id, PARSE_ERROR, f"Parse error: {unparsed[:_SHOWN_CHARS]}")
    if request_id is not None and "params" in message and not isinstance(message["params"], dict):
        return _answer(request_id, INVALID_PARAMS, "Invalid params: params must be an object")
    return _answer(request_id, INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message")


def _is_request(message: dict[str, Any]) -> bool:
    """Whether a JSON object asks for an answer: not a notification, not a response."""
    if "id" not in message:
        return "method" not in message  # a notification is never answered
    return "method" in message or not ("result" in message or "error" in message)


def _request_id(message: object) -> types.RequestId | None:
    """The message's id when it is one JSON-RPC allows (a string or an integer), else None."""
    found = message.get("id") if isinstance(message, dict) else None
    if isinstance(found, bool) or not isinstance(found, str | int):
        return None
    return found


def _answer(request_id: types.RequestId | None, code: int, message: str) -> Verdict:
    error = types.ErrorData(code=code, message=message)
    return Verdict(
        readable=False, answer=types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
    )
