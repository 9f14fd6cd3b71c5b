"""Only loopback names reach the daemon: a guard against DNS rebinding; adapter layer.

A web page can make a browser send requests to 127.0.0.1 under a name it controls (DNS
rebinding), or open a WebSocket to it from its own origin. Every HTTP request and WebSocket
must therefore name a loopback host (`Host`), and a browser's `Origin`, when present, must
be a loopback origin too; anything else gets 421 (HTTP) or is closed (WebSocket, 1008).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1"})


@lru_cache(maxsize=256)
def _hostname(value: str) -> str | None:
    """The host name of a `Host` header value (`name:port`, `[::1]:port`).

    Kept for the few values a daemon sees (its own `127.0.0.1:PORT`, say): every request
    asks, and parsing it each time was a measurable part of a call's cost.
    """
    try:
        return urlsplit(f"//{value}").hostname
    except ValueError:
        return None


def is_loopback_request(headers: Headers) -> bool:
    """Whether the request names a loopback host and, if it has one, a loopback origin."""
    if _hostname(headers.get("host", "")) not in LOOPBACK_NAMES:
        return False
    origin = headers.get("origin")
    if origin is None:
        return True
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.hostname in LOOPBACK_NAMES


class LoopbackOnly:
    """An ASGI wrapper that refuses requests not addressed to a loopback name."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass loopback requests on; refuse the others."""
        if scope["type"] not in ("http", "websocket") or is_loopback_request(Headers(scope=scope)):
            await self.app(scope, receive, send)
            return
        self.refused += 1
        headers = Headers(scope=scope)
        log.warning(
            "refused a request for host %r from origin %r",
            headers.get("host"),
            headers.get("origin"),
        )
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = b'{"error": {"code": "misdirected", "message": "only loopback names are served"}}'
        await send(
            {
                "type": "http.response.start",
                "status": 421,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
