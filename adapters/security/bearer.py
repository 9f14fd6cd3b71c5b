"""Device-token authentication in front of `/mcp`; adapter layer.

Every request must carry `Authorization: Bearer <device token>`. A refused request gets
401 as RFC 6750 describes it: a request with no token (or another scheme) gets a bare
`Bearer realm="ledgerclaw"` challenge (section 3.1: no error code for a request that
carried no credentials); a malformed, unknown or revoked token gets
`error="invalid_token"` with an `error_description`. Either way the body is a JSON-RPC
error whose message says why and whose data carries the same `error` and
`error_description`, so an MCP client can show the reason. Refusals are counted.

The registry is consulted on every request, so a revocation (even by another process)
refuses the device's very next request, and the sessions it had open are closed as
`revoked`. The common case is decided on the event loop, from the daemon's kept copy of the
registry once a read that never waits has shown it current (adapters/security/registry_head.py);
only a changed registry, a due sighting or a busy file sends the check to a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from adapters.security.refusals import UNAUTHORIZED, refuse
from domain.devices.errors import DeviceError, DeviceRevokedError
from domain.devices.tokens import split_token
from domain.ids import DeviceId

log = logging.getLogger(__name__)
DEVICE_SCOPE_KEY = "ledgerclaw.device_id"
"""Where the bearer-token check leaves the authenticated device in the ASGI scope."""
REALM = "ledgerclaw"
INVALID_TOKEN = "invalid_token"  # noqa: S105 - the RFC 6750 error code, not a secret
MISSING = "a device token is required: send Authorization: Bearer TOKEN"
MALFORMED = "the device token is malformed: a device token is dev_<id>.<secret>"
PAIR_AGAIN = "pair this device again (`ledgerclaw daemon pair`, then `ledgerclaw devices pair`)"
_QUOTABLE = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\"}
"""The characters RFC 6750 allows in `error_description` (section 3)."""


def challenge(description: str | None = None) -> str:
    """The `WWW-Authenticate` value: bare, or with `invalid_token` and its description."""
    if description is None:
        return f'Bearer realm="{REALM}"'
    quoted = "".join(ch if ch in _QUOTABLE else "'" for ch in description)
    return f'Bearer realm="{REALM}", error="{INVALID_TOKEN}", error_description="{quoted}"'


class BearerGuard:
    """An ASGI wrapper that admits only requests with an active device's token."""

    def __init__(
        self,
        app: ASGIApp,
        authenticate: Callable[[str], DeviceId],
        on_revoked: Callable[[DeviceId], Awaitable[None]] | None = None,
        *,
        authenticate_kept: Callable[[str], DeviceId | None] | None = None,
    ) -> None:
        self.app = app
        self.authenticate = authenticate
        """Decides any token; may wait for the journal, so it runs in a worker thread."""
        self.authenticate_kept = authenticate_kept
        """Decides on the event loop without waiting, or answers None to leave it to the other."""
        self.on_revoked = on_revoked
        self.refused = 0
        """Requests refused with 401."""
        self._users: dict[str, AuthenticatedUser] = {}
        """The SDK's user object per device: the same for every request of that device."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Check the token, then hand the request on with the device in its scope."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = Headers(scope=scope).get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            await self._refuse(send, MISSING, invalid=False)
            return
        if split_token(token) is None:
            await self._refuse(send, MALFORMED)
            return
        try:
            device = self.authenticate_kept(token) if self.authenticate_kept else None
            if device is None:
                # The registry is read (and a device's last sighting written) off the event
                # loop: a journal busy in another process must not stall every other request.
                device = await anyio.to_thread.run_sync(self.authenticate, token)
        except DeviceError as error:
            await self._refuse(send, f"{error}; {PAIR_AGAIN}")
            parts = split_token(token)
            if (
                isinstance(error, DeviceRevokedError)
                and parts is not None
                and self.on_revoked is not None
            ):
                await self.on_revoked(parts[0])
            return
        inner = {**scope, DEVICE_SCOPE_KEY: str(device), "user": self._user(str(device))}
        await self.app(inner, receive, send)

    def _user(self, device: str) -> AuthenticatedUser:
        user = self._users.get(device)
        if user is None:
            access = AccessToken(token=device, client_id=device, scopes=[])
            user = self._users[device] = AuthenticatedUser(access)
        return user

    async def _refuse(self, send: Send, description: str, *, invalid: bool = True) -> None:
        self.refused += 1
        log.info("refused an /mcp request: %s", description)
        data = {"error_description": description}
        if invalid:
            data = {"error": INVALID_TOKEN, **data}
        await refuse(
            send,
            status=401,
            code=UNAUTHORIZED,
            message=f"unauthorized: {description}",
            data=data,
            headers=((b"www-authenticate", challenge(description if invalid else None).encode()),),
        )
