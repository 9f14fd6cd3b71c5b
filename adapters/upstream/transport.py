"""An HTTP transport that keeps what the SDK drops from a failed MCP request; adapter layer.

The SDK turns every non-2xx answer into one bare JSON-RPC error and lets a connection error
crash the whole client. This transport sits under the SDK's HTTP client and, for POSTs to the
server's MCP URL only, answers instead with a JSON-RPC error whose `data[MARK]` records the
status, whether a session was held, the `WWW-Authenticate` and `Retry-After` headers, and the
server's own JSON-RPC error; a connection error becomes such an answer too, marked as never
answered. The SDK then raises one `MCPError` to the one caller, which the classifier reads.
The original headers are kept, so an OAuth provider above still sees a 401's challenge; GET,
DELETE and the OAuth endpoints pass untouched, so token errors still reach the OAuth flow.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from mcp_types.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR

MARK = "ledgerclaw-http"
"""The key inside an error's data under which this transport says what happened."""
SESSION_HEADER = "mcp-session-id"
_DROPPED = ("content-type", "content-length", "content-encoding", "transfer-encoding")
_NEVER_SENT = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)
"""Errors raised before a request left: its call cannot have been delivered."""


class StatusKeepingTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport; failed POSTs to `mcp_url` become JSON-RPC errors that say why."""

    def __init__(self, mcp_url: str, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.mcp_url = httpx2.URL(mcp_url)
        self.inner = inner or httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Forward `request`; a failure of an MCP POST comes back as a described error."""
        mine = request.method == "POST" and request.url.copy_with(query=None) == self.mcp_url
        had_session = SESSION_HEADER in request.headers
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.TransportError as error:
            if not mine:
                raise
            info = {
                "transport_error": type(error).__name__,
                "delivered": not isinstance(error, _NEVER_SENT),
                "had_session": had_session,
            }
            text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            return _answer(CONNECTION_CLOSED, f"transport: {text}", info, 599)
        if response.status_code < 400 or not mine:  # noqa: PLR2004 - HTTP's error statuses
            return response
        raw = await response.aread()
        await response.aclose()
        original = _rpc_error(response, raw)
        info = {
            "status": response.status_code,
            "had_session": had_session,
            "rpc_error": original,
            "www_authenticate": response.headers.get("www-authenticate"),
            "retry_after": response.headers.get("retry-after"),
            "body": raw[:500].decode("utf-8", "replace") if original is None else None,
        }
        code = original.get("code", INTERNAL_ERROR) if original else INTERNAL_ERROR
        message = f"HTTP {response.status_code}"
        if original and isinstance(original.get("message"), str):
            message = f"HTTP {response.status_code}: {original['message']}"
        return _answer(code, message, info, response.status_code, response.headers.multi_items())

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self.inner.aclose()


def _rpc_error(response: httpx2.Response, raw: bytes) -> dict[str, Any] | None:
    if not response.headers.get("content-type", "").startswith("application/json"):
        return None
    try:
        found = json.loads(raw).get("error")
    except (ValueError, AttributeError):
        return None
    # An OAuth-style body ({"error": "invalid_token"}) is not a JSON-RPC error.
    return found if isinstance(found, dict) else None


def _answer(
    code: int,
    message: str,
    info: dict[str, Any],
    status: int,
    headers: list[tuple[str, str]] | None = None,
) -> httpx2.Response:
    kept = [(k, v) for k, v in headers or () if k.lower() not in _DROPPED]
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    body["error"]["data"] = {MARK: info}  # type: ignore[index]  # the literal above is a dict
    return httpx2.Response(
        status,
        headers=[*kept, ("content-type", "application/json")],
        content=json.dumps(body).encode(),
    )
