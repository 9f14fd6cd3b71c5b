"""A small synchronous client of the gateway protocol: handshake, requests, events; adapter layer.

It answers `connect.challenge` with a local-control proof signed by the home's host key (for
the command line) or with a device token (for a script on a paired device), sends requests
with fresh ids, pairs each response with its request, and keeps the events that arrive in
between, in order, for `events`. A refused request raises `GatewayError` with the daemon's
code, message and retry hints. See docs/gateway.md.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from adapters.control.frames import Scope
from adapters.control.gateway_wire import (
    CLIENT_NAME,
    DEFAULT_TIMEOUT,
    MAX_ANSWER_BYTES,
    GatewayError,
    GatewayGoneError,
    answer_payload,
    challenge_nonce,
    connect_params,
    control_url,
    decode_frame,
    gone,
    opening,
    request_frame,
)

__all__ = [
    "CLIENT_NAME",
    "DEFAULT_TIMEOUT",
    "MAX_ANSWER_BYTES",
    "GatewayClient",
    "GatewayError",
    "GatewayGoneError",
]


class GatewayClient:
    """One connection to the gateway, connected: `hello` holds the daemon's answer."""

    def __init__(self, websocket: Connection, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._websocket = websocket
        self._timeout = timeout
        self._ids = (str(n) for n in itertools.count(1))
        self._events: deque[dict[str, Any]] = deque()
        self.hello: dict[str, Any] = {}

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def open(  # noqa: PLR0913 - the two ways to connect and their options
        cls,
        port: int,
        *,
        key: bytes | None = None,
        operation: str = "gateway",
        token: str | None = None,
        scopes: tuple[Scope, ...] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> GatewayClient:
        """Connect to the daemon on `port` with a proof signed by `key`, or with `token`."""
        with opening(port):
            websocket = connect(
                control_url(port),
                open_timeout=timeout,
                close_timeout=1,
                max_size=MAX_ANSWER_BYTES,
                proxy=None,
            )
        client = cls(websocket, timeout)
        try:
            client._handshake(port, key, operation, token, scopes)
        except BaseException:
            client.close()
            raise
        return client

    def _handshake(
        self,
        port: int,
        key: bytes | None,
        operation: str,
        token: str | None,
        scopes: tuple[Scope, ...] | None,
    ) -> None:
        challenge = self._receive(time.monotonic() + self._timeout)
        nonce = challenge_nonce(challenge, port)
        params = connect_params(nonce, key=key, operation=operation, token=token, scopes=scopes)
        self.hello = self.call("connect", params)

    # -- talking ---------------------------------------------------------------------------

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one request and return its payload; a refusal raises GatewayError."""
        request_id = next(self._ids)
        deadline = time.monotonic() + self._timeout
        try:
            self._websocket.send(request_frame(request_id, method, params))
            while True:
                answer = self._receive(deadline)
                if answer.get("type") == "event":
                    self._events.append(answer)
                elif answer.get("type") == "res" and answer.get("id") == request_id:
                    break
        except ConnectionClosed as closed:
            raise gone(closed) from None
        return answer_payload(answer)

    def events(self, timeout: float = 0.0) -> Iterator[dict[str, Any]]:
        """The events received so far, then those arriving within `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            while self._events:
                yield self._events.popleft()
            if time.monotonic() >= deadline:
                return
            try:
                frame = self._receive(deadline)
            except GatewayGoneError:
                return
            if frame.get("type") == "event":
                self._events.append(frame)

    def close(self) -> None:
        """Close the connection."""
        self._websocket.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def _receive(self, deadline: float) -> dict[str, Any]:
        try:
            raw = self._websocket.recv(timeout=max(deadline - time.monotonic(), 0))
        except TimeoutError:
            msg = "the daemon did not answer in time"
            raise GatewayGoneError(msg) from None
        except ConnectionClosed as closed:
            raise gone(closed) from None
        return decode_frame(raw)
