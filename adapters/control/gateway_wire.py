"""What both gateway clients share: errors, the `connect` request, frame coding; adapter layer.

`GatewayClient` (synchronous, for the command line) and `AsyncGatewayClient` (asyncio, for the
terminal chat) speak the same frames: this module builds the `connect` params from the
challenge's nonce and one credential, encodes requests, decodes what the daemon sends and
turns a refusal into a `GatewayError`. See docs/gateway.md.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import orjson
from websockets.exceptions import ConnectionClosed, InvalidHandshake

from adapters.control.frames import PROTOCOL_VERSION, Scope
from adapters.security.host_key import sign_proof
from domain.errors import LedgerclawError

DEFAULT_TIMEOUT = 10.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024
CLIENT_NAME = "ledgerclaw"


class GatewayError(LedgerclawError):
    """The daemon refused a request; `code` names why, `retryable` whether to try again."""

    def __init__(
        self, code: str, message: str, *, retryable: bool = False, retry_after_ms: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms


class GatewayGoneError(LedgerclawError):
    """The daemon did not answer in time, or closed the connection, or is not a daemon."""

    exit_code = 3


def control_url(port: int) -> str:
    """The control socket of the daemon listening on `port` of this host."""
    return f"ws://127.0.0.1:{port}/control"


@contextmanager
def opening(port: int) -> Iterator[None]:
    """Open a client's socket inside this: what fails is told as the clients tell it.

    Nothing listening stays ConnectionRefusedError (the caller knows whether that means no
    daemon); anything else that answers badly, or not in time, is GatewayGoneError.
    """
    try:
        yield
    except (ConnectionRefusedError, FileNotFoundError):
        raise
    except (TimeoutError, InvalidHandshake, OSError) as error:
        msg = f"no gateway answered on port {port}: {error}"
        raise GatewayGoneError(msg) from None


def request_frame(request_id: str, method: str, params: dict[str, Any] | None) -> str:
    """One `req` frame as the text message that carries it."""
    frame = {"type": "req", "id": request_id, "method": method, "params": params or {}}
    return orjson.dumps(frame).decode()


def cancel_frame(request_id: str) -> str:
    """A `cancel` frame for the request `request_id`."""
    return orjson.dumps({"type": "cancel", "id": request_id}).decode()


def decode_frame(raw: str | bytes) -> dict[str, Any]:
    """A frame the daemon sent; anything but a JSON object means it is not a daemon."""
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        frame = None
    if not isinstance(frame, dict):
        msg = "the daemon sent a frame that is not a JSON object"
        raise GatewayGoneError(msg)
    return cast("dict[str, Any]", frame)


def challenge_nonce(challenge: dict[str, Any], port: int) -> str:
    """The nonce of the daemon's first frame, which must be `connect.challenge`."""
    payload = challenge.get("payload")
    nonce = payload.get("nonce") if isinstance(payload, dict) else None
    if challenge.get("event") != "connect.challenge" or not isinstance(nonce, str):
        msg = f"port {port} did not send a ledgerclaw challenge"
        raise GatewayGoneError(msg)
    return nonce


def connect_params(  # noqa: PLR0913 - the two credentials and what the client says of itself
    nonce: str,
    *,
    key: bytes | None,
    operation: str,
    token: str | None,
    scopes: tuple[Scope, ...] | None,
    client_name: str = CLIENT_NAME,
) -> dict[str, Any]:
    """The params of `connect`: a device token, or else a proof signed with the host key."""
    params: dict[str, Any] = {
        "min_protocol": PROTOCOL_VERSION,
        "max_protocol": PROTOCOL_VERSION,
        "client": {"name": client_name},
    }
    if scopes is not None:
        params["scopes"] = [str(s) for s in scopes]
    if token is not None:
        params["token"] = token
    else:
        if key is None:
            msg = "a gateway client needs a host key or a device token"
            raise ValueError(msg)
        params["proof"] = sign_proof(key, nonce, operation).model_dump()
    return params


def answer_payload(answer: dict[str, Any]) -> dict[str, Any]:
    """The payload of a `res` frame; a refusal raises GatewayError with the daemon's code."""
    payload = answer.get("payload", {})
    if answer.get("ok") is True and isinstance(payload, dict):
        return cast("dict[str, Any]", payload)
    error = answer.get("error")
    error = error if isinstance(error, dict) else {}
    raise GatewayError(
        str(error.get("code", "unknown")),
        str(error.get("message", "refused")),
        retryable=bool(error.get("retryable", False)),
        retry_after_ms=error.get("retry_after_ms"),
    )


def gone(closed: ConnectionClosed) -> GatewayGoneError:
    """The error for a connection the daemon closed, naming its close code and reason."""
    received = closed.rcvd
    why = f" ({received.code} {received.reason})" if received is not None else ""
    return GatewayGoneError(f"the daemon closed the connection{why}")
