"""What a failed upstream request means: its class, whether it was delivered; adapter layer.

The glossary's three classes (domain/upstream/states.py `FailureClass`), read from what the
SDK raises and what `StatusKeepingTransport` kept of the HTTP answer:

- transport or session: a broken connection, a timeout, HTTP 404 for a session the server
  lost. A new session can repair it: reconnect once, never replay the call;
- application error: the server received the request and refused it (another HTTP status,
  a JSON-RPC error); a new session would get the same answer;
- tool error: a result with `isError`, which is not an exception at all (see results.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp import MCPError
from mcp_types.jsonrpc import CONNECTION_CLOSED, METHOD_NOT_FOUND, REQUEST_TIMEOUT

from adapters.upstream.transport import MARK
from domain.upstream.states import FailureClass

NOT_FOUND = 404
UNAUTHORIZED = 401
_TRANSPORT_ERRORS = (
    httpx2.TransportError,
    OSError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    TimeoutError,
)
_SESSION_GONE = ("Session terminated", "Session not found")


@dataclass(frozen=True)
class Failure:
    """One failure, classified."""

    kind: FailureClass
    message: str
    delivered: bool | None = None
    """False when the request cannot have reached the server, None when it may have."""
    status: int | None = None
    challenge: str | None = None
    """The `WWW-Authenticate` header of a 401, if the server sent one."""

    @property
    def bearer_challenge(self) -> bool:
        """Whether the server answered with a genuine OAuth Bearer challenge."""
        return self.status == UNAUTHORIZED and (self.challenge or "").lower().startswith("bearer")


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside `error`, through groups, in order."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def classify(error: BaseException) -> Failure:
    """The failure `error` stands for (an ExceptionGroup is read through to its leaves)."""
    if isinstance(error, BaseExceptionGroup):
        found = [classify(leaf) for leaf in leaves(error)]
        transport = [f for f in found if f.kind is FailureClass.TRANSPORT]
        application = [f for f in found if f.kind is FailureClass.APPLICATION]
        # An answer the server gave outranks the connection breaking afterwards.
        return (application or transport or found)[0]
    if isinstance(error, MCPError):
        return _of_mcp(error)
    if isinstance(error, _NEVER_DELIVERED):
        return Failure(FailureClass.TRANSPORT, _text(error), delivered=False)
    if isinstance(error, _TRANSPORT_ERRORS):
        return Failure(FailureClass.TRANSPORT, _text(error))
    return Failure(FailureClass.APPLICATION, _text(error))


_NEVER_DELIVERED = (httpx2.ConnectError, httpx2.ConnectTimeout, FileNotFoundError, PermissionError)


def _of_mcp(error: MCPError) -> Failure:  # noqa: PLR0911 - one answer per kind of failure
    info: dict[str, Any] | None = None
    if isinstance(error.data, dict) and isinstance(error.data.get(MARK), dict):
        info = error.data[MARK]
    if info is not None:
        if "transport_error" in info:
            delivered = None if info.get("delivered", True) else False
            return Failure(FailureClass.TRANSPORT, error.message, delivered=delivered)
        status = info.get("status")
        rpc = info.get("rpc_error") or {}
        challenge = info.get("www_authenticate")
        if status == NOT_FOUND and info.get("had_session") and rpc.get("code") != METHOD_NOT_FOUND:
            # The server no longer knows the session: it did not run the request.
            return Failure(
                FailureClass.TRANSPORT,
                "the session was lost (HTTP 404)",
                delivered=False,
                status=404,
            )
        message = error.message
        if status is not None and not rpc and info.get("body"):
            message = f"{message}: {str(info['body']).strip()[:300]}"
        return Failure(
            FailureClass.APPLICATION, message, delivered=True, status=status, challenge=challenge
        )
    if error.code == CONNECTION_CLOSED:
        return Failure(FailureClass.TRANSPORT, error.message or "connection closed")
    if error.code == REQUEST_TIMEOUT:
        return Failure(FailureClass.TRANSPORT, f"timed out: {error.message}")
    if error.message in _SESSION_GONE:
        return Failure(
            FailureClass.TRANSPORT, f"the session was lost: {error.message}", delivered=False
        )
    return Failure(FailureClass.APPLICATION, f"{error.code} {error.message}", delivered=True)


def _text(error: BaseException) -> str:
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
