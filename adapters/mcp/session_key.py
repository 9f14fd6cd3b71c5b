"""The `Ledgerclaw-Session-Key` header: a stateless client names its own session; adapter layer.

Stateless (2026-07-28) requests carry no MCP session, so the daemon keys their session by
the device, the declared client name and this header (see docs/adr/0014). A client that
sends no header shares one session with every process of the same device and client name;
one that sends it gets a session of its own for each distinct value. A malformed value is
refused with 400 before the request reaches the MCP server, saying what is allowed.
"""

from __future__ import annotations

import logging
import re

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters.security.refusals import INVALID_REQUEST, refuse

log = logging.getLogger(__name__)
SESSION_KEY_HEADER = "Ledgerclaw-Session-Key"
MAX_SESSION_KEY = 64
_SESSION_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
RULE = (
    f"1 to {MAX_SESSION_KEY} characters: letters, digits, '.', '_' and '-', starting with a"
    " letter or digit"
)


def session_key_problem(values: list[str]) -> str | None:
    """What is wrong with the header's values, or None when they name a session (or none)."""
    if not values:
        return None
    if len(values) > 1:
        return f"{SESSION_KEY_HEADER} was sent {len(values)} times; send it once"
    value = values[0]
    if not value:
        return f"{SESSION_KEY_HEADER} is empty; it must be {RULE}"
    if len(value) > MAX_SESSION_KEY:
        return f"{SESSION_KEY_HEADER} is {len(value)} characters long; it must be {RULE}"
    if not _SESSION_KEY.fullmatch(value):
        return f"{SESSION_KEY_HEADER} {value!r} is not allowed; it must be {RULE}"
    return None


def session_key_of(headers: Headers) -> str | None:
    """The session key a checked request names, if any."""
    return headers.get(SESSION_KEY_HEADER) or None


class SessionKeyCheck:
    """An ASGI wrapper that refuses requests whose session key header is malformed."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer 400 naming what is wrong with the header."""
        if scope["type"] == "http":
            problem = session_key_problem(Headers(scope=scope).getlist(SESSION_KEY_HEADER))
            if problem is not None:
                log.info("refused an /mcp request: %s", problem)
                await refuse(send, status=400, code=INVALID_REQUEST, message=problem)
                return
        await self.app(scope, receive, send)
