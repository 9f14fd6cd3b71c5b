"""Which hosted session an MCP request belongs to; adapter layer.

The boundary differs by transport and protocol era (see docs/adr/0010):

- stdio: one process serves one client, so the whole process is one session;
- HTTP, handshake era (`initialize`): the MCP session id the SDK issued;
- HTTP, stateless era (2026-07-28): no MCP session exists, so the authenticated device
  plus the client's declared name; such a session ends after the configured idle period.

A client's declared name and version are recorded, never trusted: on HTTP the device
token is the identity.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from adapters.daemon.host import Caller

DEVICE_SCOPE_KEY = "ledgerclaw.device_id"
"""Where the bearer-token check leaves the authenticated device in the ASGI scope."""
STDIO = "stdio"
HTTP = "http"
HTTP_STATELESS = "http-stateless"


def has_connection(caller: Caller) -> bool:
    """Whether a lasting connection exists that can be notified and asked."""
    return caller.channel != HTTP_STATELESS


def caller_of(ctx: ServerRequestContext[Any, Any], transport: str) -> Caller:
    """The caller of the request `ctx` carries, on `transport` (stdio or http)."""
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = info.name if info is not None else None
    version = info.version if info is not None else None
    if transport == STDIO:
        return Caller(STDIO, STDIO, name, version, None)
    request = ctx.request
    scope = getattr(request, "scope", {}) or {}
    device = scope.get(DEVICE_SCOPE_KEY)
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        key = f"device:{device}:{name or 'unnamed'}"
        return Caller(key, HTTP_STATELESS, name, version, device)
    headers = getattr(request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return Caller(f"http:{session_id}", HTTP, name, version, device)
