"""Refusing an `/mcp` request before it reaches the MCP server; adapter layer.

A refusal is a JSON-RPC error object in the body of a non-2xx answer. The official
client surfaces such a body as the caller's `MCPError` with its message and data; any
other body becomes a bare "Server returned an error response", and the reason is lost.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.types import Send

UNAUTHORIZED = -32010
"""The JSON-RPC code of a request refused for its device token (implementation-defined)."""
INVALID_REQUEST = -32600
"""The JSON-RPC code of a request refused for a malformed header."""


async def refuse(  # noqa: PLR0913 - the parts of one HTTP answer, keyword-only
    send: Send,
    *,
    status: int,
    code: int,
    message: str,
    data: dict[str, Any] | None = None,
    headers: tuple[tuple[bytes, bytes], ...] = (),
) -> None:
    """Answer with `status` and a JSON-RPC error carrying `message` (and `data`)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = orjson.dumps({"jsonrpc": "2.0", "id": None, "error": error})
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
