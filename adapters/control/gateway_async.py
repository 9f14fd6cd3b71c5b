"""An asyncio client of the gateway protocol: concurrent requests, an event stream; adapter layer.

`AsyncGatewayClient.open` answers the challenge as the synchronous client does (a
local-control proof, or a device token). Once connected, one task reads every frame: a
response completes the request with its id, so any number of requests may be in flight at
once, and an event joins the queue `events()` reads. A dropped connection fails every request
in flight and ends `events()` with `GatewayGoneError`; closing it ourselves ends `events()`
quietly. A quiet connection sends a `status` request now and then, so the daemon's idle
timeout never drops a client that only listens. See docs/gateway.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Coroutine
from types import TracebackType
from typing import Any, Final, Self

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from adapters.control.frames import Scope
from adapters.control.gateway_wire import (
    CLIENT_NAME,
    DEFAULT_TIMEOUT,
    MAX_ANSWER_BYTES,
    GatewayError,
    GatewayGoneError,
    answer_payload,
    cancel_frame,
    challenge_nonce,
    connect_params,
    control_url,
    decode_frame,
    gone,
    opening,
    request_frame,
)

KEEPALIVE_SHARE = 3
"""A quiet connection speaks this many times per idle timeout."""
DEFAULT_KEEPALIVE = 15.0
"""Seconds between keepalives when the daemon names no idle timeout."""


class _Default:
    """The marker for "the client's own timeout" (None means no timeout at all)."""


DEFAULT: Final = _Default()
_END: Final[dict[str, Any]] = {}
"""Put on the event queue when the connection ends."""


class AsyncGatewayClient:
    """One connection to the gateway, connected: `hello` holds the daemon's answer."""

    def __init__(self, websocket: ClientConnection, timeout: float = DEFAULT_TIMEOUT) -> None:
        self._websocket = websocket
        self._timeout = timeout
        self._ids = (str(n) for n in itertools.count(1))
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._lost: str | None = None
        self._closing = False
        self._last_sent = time.monotonic()
        self._tasks: set[asyncio.Task[None]] = set()
        self.hello: dict[str, Any] = {}

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    async def open(  # noqa: PLR0913 - the two ways to connect and their options
        cls,
        port: int,
        *,
        key: bytes | None = None,
        operation: str = "gateway",
        token: str | None = None,
        scopes: tuple[Scope, ...] | None = None,
        timeout: float = DEFAULT_TIMEOUT,  # noqa: ASYNC109 - each request's default wait, as the sync client's
        client_name: str = CLIENT_NAME,
    ) -> AsyncGatewayClient:
        """Connect to the daemon on `port` with a proof signed by `key`, or with `token`.

        Raises:
            ConnectionRefusedError: nothing listens on the port.
            GatewayGoneError: something answered, but not as a daemon, or not in time.
            GatewayError: the daemon refused `connect` (a bad proof or token, …).
        """
        with opening(port):
            websocket = await connect(
                control_url(port),
                open_timeout=timeout,
                close_timeout=1,
                max_size=MAX_ANSWER_BYTES,
                proxy=None,
            )
        client = cls(websocket, timeout)
        try:
            await client._handshake(
                port, key=key, operation=operation, token=token, scopes=scopes, name=client_name
            )
        except BaseException:
            await client.aclose()
            raise
        return client

    async def _handshake(  # noqa: PLR0913 - open's options, passed on
        self,
        port: int,
        *,
        key: bytes | None,
        operation: str,
        token: str | None,
        scopes: tuple[Scope, ...] | None,
        name: str,
    ) -> None:
        try:
            async with asyncio.timeout(self._timeout):
                challenge = decode_frame(await self._websocket.recv())
        except TimeoutError:
            msg = "the daemon did not answer in time"
            raise GatewayGoneError(msg) from None
        except ConnectionClosed as closed:
            raise gone(closed) from None
        nonce = challenge_nonce(challenge, port)
        params = connect_params(
            nonce, key=key, operation=operation, token=token, scopes=scopes, client_name=name
        )
        self._spawn(self._read())
        self.hello = await self.call("connect", params)
        self._spawn(self._keep_alive())

    # -- talking ---------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """True until the connection is lost or closed."""
        return self._lost is None

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        wait: float | _Default | None = DEFAULT,
    ) -> dict[str, Any]:
        """Send one request and return its payload; other requests may be in flight meanwhile.

        `wait` (seconds for the answer) defaults to the client's timeout; None waits for as
        long as the connection lasts.

        Raises:
            GatewayError: the daemon refused the request.
            GatewayGoneError: the connection was lost, or no answer came in time.
        """
        if self._lost is not None:
            raise GatewayGoneError(self._lost)
        request_id = next(self._ids)
        answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = answered
        within = self._timeout if isinstance(wait, _Default) else wait
        try:
            await self._send(request_frame(request_id, method, params))
            async with asyncio.timeout(within):
                answer = await answered
        except TimeoutError:
            self._give_up(request_id)
            msg = "the daemon did not answer in time"
            raise GatewayGoneError(msg) from None
        except asyncio.CancelledError:
            self._give_up(request_id)
            raise
        finally:
            self._waiting.pop(request_id, None)
        return answer_payload(answer)

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every event frame, in order, for as long as the connection lasts.

        Raises:
            GatewayGoneError: the connection was lost (not when we closed it).
        """
        while True:
            frame = await self._events.get()
            if frame is _END:
                self._events.put_nowait(_END)  # another reader ends too
                if self._lost is not None and not self._closing:
                    raise GatewayGoneError(self._lost)
                return
            yield frame

    def received(self) -> list[dict[str, Any]]:
        """The events that have arrived and not been read yet, without waiting."""
        found: list[dict[str, Any]] = []
        while not self._events.empty():
            frame = self._events.get_nowait()
            if frame is _END:
                self._events.put_nowait(_END)
                break
            found.append(frame)
        return found

    async def aclose(self) -> None:
        """Close the connection; requests in flight fail with GatewayGoneError."""
        self._closing = True
        with contextlib.suppress(ConnectionClosed, OSError):
            await self._websocket.close()
        self._end("the connection was closed")
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- the connection's tasks ------------------------------------------------------------

    async def _read(self) -> None:
        try:
            while True:
                frame = decode_frame(await self._websocket.recv())
                kind = frame.get("type")
                if kind == "res":
                    answered = self._waiting.get(str(frame.get("id")))
                    if answered is not None and not answered.done():
                        answered.set_result(frame)
                elif kind == "event":
                    self._events.put_nowait(frame)
        except ConnectionClosed as closed:
            self._end(str(gone(closed)))
        except GatewayGoneError as broken:
            self._end(str(broken))
            with contextlib.suppress(ConnectionClosed, OSError):
                await self._websocket.close()

    async def _keep_alive(self) -> None:
        """Speak when the connection has been quiet a share of the daemon's idle timeout."""
        limits = self.hello.get("limits")
        idle = limits.get("idle_timeout_ms") if isinstance(limits, dict) else None
        every = idle / 1000 / KEEPALIVE_SHARE if isinstance(idle, int) else DEFAULT_KEEPALIVE
        while self._lost is None:
            await asyncio.sleep(max(every - (time.monotonic() - self._last_sent), 0.05))
            if time.monotonic() - self._last_sent < every:
                continue
            try:
                await self.call("status")
            except GatewayError:
                pass  # a refusal is still a frame the daemon heard
            except GatewayGoneError:
                return

    async def _send(self, text: str) -> None:
        try:
            await self._websocket.send(text)
        except ConnectionClosed as closed:
            self._end(str(gone(closed)))
            raise gone(closed) from None
        self._last_sent = time.monotonic()

    def _give_up(self, request_id: str) -> None:
        """Tell the daemon to stop working on a request no one waits for any more."""
        if self._lost is None and not self._closing:
            self._spawn(self._cancel(request_id))

    async def _cancel(self, request_id: str) -> None:
        with contextlib.suppress(GatewayGoneError):
            await self._send(cancel_frame(request_id))

    def _end(self, why: str) -> None:
        """Mark the connection lost: fail what waits, and end the events."""
        if self._lost is not None:
            return
        self._lost = why
        for answered in self._waiting.values():
            if not answered.done():
                answered.set_exception(GatewayGoneError(why))
        self._events.put_nowait(_END)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
