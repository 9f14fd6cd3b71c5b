"""Which hosted session an MCP request belongs to; adapter layer.

The boundary differs by transport and protocol era (see docs/adr/0010 and 0014):

- stdio: one process serves one client, so the whole process is one session;
- HTTP, handshake era (`initialize`): the MCP session id the SDK issued;
- HTTP, stateless era (2026-07-28): no MCP session exists, so the authenticated device,
  the client's declared name and the client's `Ledgerclaw-Session-Key` header, if it
  sends one; such a session ends after the configured stateless idle period.

A client's declared name and version are recorded, never trusted: on HTTP the device
token is the identity. Each caller also says, in words, whom a session-scoped approval in
its session covers, for the approval prompt and `approvals list`.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

from mcp.server.context import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers

from adapters.mcp.session_key import SESSION_KEY_HEADER, session_key_of
from adapters.runtime.approvals import SessionReach
from adapters.runtime.session_host import Caller
from adapters.security.bearer import DEVICE_SCOPE_KEY

MCP = "mcp"
"""The protocol word of an MCP client's session key (`mcp-stdio:<client>`, say)."""
STDIO = "stdio"
HTTP = "http"
HTTP_STATELESS = "http-stateless"
CALLERS_KEPT = 1024
"""How many HTTP callers are kept built: every request of a session describes the same one."""


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
        reach = SessionReach(
            None,
            name,
            f"stdio pid {os.getpid()}",
            f"the one client of stdio server pid {os.getpid()} ({_client(name)})",
        )
        return Caller(STDIO, STDIO, name, version, None, None, reach, MCP)
    request = ctx.request
    scope = getattr(request, "scope", {}) or {}
    device = scope.get(DEVICE_SCOPE_KEY)
    headers = getattr(request, "headers", None) or Headers()
    named = session_key_of(headers)
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return _stateless_caller(device, name, version, named)
    return _session_caller(headers.get("mcp-session-id"), device, name, version, named)


@lru_cache(maxsize=CALLERS_KEPT)
def _stateless_caller(
    device: str | None, name: str | None, version: str | None, named: str | None
) -> Caller:
    """A stateless-era caller; the same facts give the same (immutable) caller."""
    # repr keeps the parts apart: no client name can pass for a name plus a key.
    key = f"device:{device}:{name!r}:{named!r}"
    reach = _stateless(device, name, named)
    return Caller(key, HTTP_STATELESS, name, version, device, named, reach, MCP)


@lru_cache(maxsize=CALLERS_KEPT)
def _session_caller(
    session_id: str | None,
    device: str | None,
    name: str | None,
    version: str | None,
    named: str | None,
) -> Caller:
    """A handshake-era caller of MCP session `session_id`."""
    reach = SessionReach(
        device,
        name,
        f"mcp session {session_id}",
        f"the requests of MCP session {session_id} ({_client(name)} on device {device})",
    )
    return Caller(f"http:{session_id}", HTTP, name, version, device, named, reach, MCP)


def _stateless(device: str | None, name: str | None, named: str | None) -> SessionReach:
    """Whom a stateless session covers: every such request, from any process."""
    if named is None:
        return SessionReach(
            device,
            name,
            "shared: no session key",
            f"every stateless request of device {device} that declares {_client(name)} and"
            f" sends no {SESSION_KEY_HEADER}, from any process",
        )
    return SessionReach(
        device,
        name,
        f"session key {named}",
        f"every stateless request of device {device} that declares {_client(name)} and"
        f" sends {SESSION_KEY_HEADER}: {named}",
    )


def _client(name: str | None) -> str:
    return f"client {name!r}" if name else "no client name"
