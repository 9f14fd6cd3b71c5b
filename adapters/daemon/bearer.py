"""Device-token authentication in front of `/mcp`; adapter layer.

Every request must carry `Authorization: Bearer <device token>`. A missing, unknown or
revoked token gets 401 with a `WWW-Authenticate` challenge and is counted; the registry
is consulted on every request, so a revocation (even by another process) refuses the
device's very next request, and the sessions it had open are closed as `revoked`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio.to_thread
import orjson
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters.mcp.callers import DEVICE_SCOPE_KEY
from domain.devices.errors import DeviceError, DeviceRevokedError
from domain.devices.tokens import split_token
from domain.ids import DeviceId

log = logging.getLogger(__name__)


class BearerGuard:
    """An ASGI wrapper that admits only requests with an active device's token."""

    def __init__(
        self,
        app: ASGIApp,
        authenticate: Callable[[str], DeviceId],
        on_revoked: Callable[[DeviceId], Awaitable[None]] | None = None,
    ) -> None:
        self.app = app
        self.authenticate = authenticate
        self.on_revoked = on_revoked
        self.refused = 0
        """Requests refused with 401."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the token, then hand the request on with the device in its scope."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            await self._refuse(send, "a device token is required: Authorization: Bearer TOKEN")
            return
        try:
            # The registry is read (and a device's last sighting written) off the event loop:
            # a journal busy in another process must not stall every other request.
            device = await anyio.to_thread.run_sync(self.authenticate, token)
        except DeviceError as error:
            await self._refuse(send, str(error), invalid=True)
            parts = split_token(token)
            if (
                isinstance(error, DeviceRevokedError)
                and parts is not None
                and self.on_revoked is not None
            ):
                await self.on_revoked(parts[0])
            return
        user = AuthenticatedUser(AccessToken(token=str(device), client_id=str(device), scopes=[]))
        inner = {**scope, DEVICE_SCOPE_KEY: str(device), "user": user}
        await self.app(inner, receive, send)

    async def _refuse(self, send: Send, message: str, *, invalid: bool = False) -> None:
        self.refused += 1
        log.info("refused an /mcp request: %s", message)
        challenge = 'Bearer realm="ledgerclaw"' + (', error="invalid_token"' if invalid else "")
        body = orjson.dumps({"error": {"code": "unauthorized", "message": message}})
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", challenge.encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
