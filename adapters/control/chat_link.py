"""A chat client's hold on one agent session, kept across daemon restarts; adapter layer.

`ChatLink` keeps one gateway connection for one session. It subscribes after the last stream
position its owner has shown and hands on every event the daemon pushes. When the
connection drops it says so, waits (backing off), reconnects and subscribes again after the
position shown by then, so nothing is missed and nothing is seen twice. `send` starts a run
with the client run id it is given; when the connection is lost before the daemon answered,
it sends again with the same id once the link is back, so the daemon starts one run for it
at most. A refusal that trying again cannot cure (a bad proof, an unknown session) ends
`serve` with that GatewayError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from adapters.control.client import DaemonNotRespondingError, DaemonNotRunningError
from adapters.control.gateway_async import AsyncGatewayClient
from adapters.control.gateway_wire import GatewayError, GatewayGoneError

Opener = Callable[[], Awaitable[AsyncGatewayClient]]
_LOST = (GatewayGoneError, DaemonNotRunningError, DaemonNotRespondingError, OSError)
"""What a daemon that stopped, restarts or is busy looks like: worth trying again."""


@dataclass(frozen=True)
class Backoff:
    """How long to wait before each attempt to reconnect: doubling, up to `most` seconds."""

    first: float = 0.2
    factor: float = 2.0
    most: float = 3.0

    def delay(self, attempt: int) -> float:
        """The wait before attempt `attempt` (1 for the first retry)."""
        return min(self.first * self.factor ** max(attempt - 1, 0), self.most)


@dataclass(frozen=True)
class Linked:
    """The link is up: subscribed after `after`; `head` was the stream's last position then."""

    after: int
    head: int
    methods: frozenset[str]
    again: bool
    """True when this is a reconnection."""


@dataclass(frozen=True)
class Unlinked:
    """The connection is lost or cannot be made; the next attempt comes in `retry_in` seconds."""

    why: str
    attempt: int
    retry_in: float


@dataclass(frozen=True)
class Pushed:
    """An event the daemon pushed (`session.event`, `chat.delta`, `approval.requested`, …)."""

    event: str
    payload: dict[str, Any]


LinkNotice = Linked | Unlinked | Pushed
Deliver = Callable[[Sequence[LinkNotice]], Awaitable[None]]


@dataclass
class ChatLink:
    """One session's link to the gateway; `serve` runs it, the other methods use it."""

    opener: Opener
    session: str
    cursor: Callable[[], int]
    """The last stream position the owner has shown: where a new subscription starts."""
    backoff: Backoff = field(default_factory=Backoff)
    methods: frozenset[str] = frozenset()
    """What the daemon offered on the latest connection."""
    _client: AsyncGatewayClient | None = None
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    _closing: bool = False

    async def serve(self, deliver: Deliver) -> None:
        """Hold the link until `aclose`, reconnecting as often as it drops.

        Raises:
            GatewayError: a refusal that trying again cannot cure.
        """
        attempt, again = 0, False
        while not self._closing:
            try:
                linked, client = await self._link(again)
            except (*_LOST, GatewayError) as error:
                if isinstance(error, GatewayError) and not error.retryable:
                    raise
                attempt += 1
                await self._pause(deliver, _why(error), attempt)
                continue
            attempt, again = 0, True
            why = await self._pump(client, linked, deliver)
            if why is None:
                return
            attempt = 1
            await self._pause(deliver, why, attempt)

    async def send(self, text: str, client_run_id: str) -> dict[str, Any]:
        """`chat.send` with `client_run_id`, sent again with it after each lost connection.

        Raises:
            GatewayError: the daemon refused the message.
        """
        params = {"session": self.session, "text": text, "client_run_id": client_run_id}
        stale: AsyncGatewayClient | None = None
        while True:
            client = await self._current(stale)
            try:
                # No time limit: a message for a busy session waits for its run to end.
                return await client.call("chat.send", params, wait=None)
            except GatewayGoneError:
                stale = client

    async def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """One request on the connection up now, never repeated.

        Raises:
            GatewayGoneError: no connection is up, or it was lost before the answer came.
            GatewayError: the daemon refused the request.
        """
        client = self._client
        if client is None or not client.connected:
            msg = "not connected to the daemon"
            raise GatewayGoneError(msg)
        return await client.call(method, params)

    async def aclose(self) -> None:
        """Stop: `serve` returns, and a `send` waiting for the link waits on."""
        self._closing = True
        if self._client is not None:
            await self._client.aclose()

    # -- the link's life -------------------------------------------------------------------

    async def _link(self, again: bool) -> tuple[Linked, AsyncGatewayClient]:
        """Connect and subscribe after the position shown now."""
        client = await self.opener()
        try:
            after = self.cursor()
            answer = await client.call("subscribe", {"session": self.session, "after": after})
        except BaseException:
            await client.aclose()
            raise
        methods = frozenset(str(m) for m in client.hello.get("methods", []))
        head = answer.get("head")
        return Linked(after, head if isinstance(head, int) else after, methods, again), client

    async def _pump(
        self, client: AsyncGatewayClient, linked: Linked, deliver: Deliver
    ) -> str | None:
        """Hand on the connection's events until it ends; why it was lost, or None if closed."""
        self.methods = linked.methods
        await self._set_client(client)
        try:
            await deliver([linked])
            async for event in client.events():
                batch = [event, *client.received()]
                await deliver([_pushed(frame) for frame in batch if frame.get("event") != "tick"])
        except GatewayGoneError as lost:
            return str(lost)
        finally:
            await client.aclose()
            await self._set_client(None)
        return None if self._closing else "the connection was closed"

    async def _pause(self, deliver: Deliver, why: str, attempt: int) -> None:
        delay = self.backoff.delay(attempt)
        await deliver([Unlinked(why, attempt, delay)])
        await asyncio.sleep(delay)

    async def _set_client(self, client: AsyncGatewayClient | None) -> None:
        async with self._changed:
            self._client = client
            self._changed.notify_all()

    async def _current(self, stale: AsyncGatewayClient | None) -> AsyncGatewayClient:
        """The connection up now, other than `stale`; waits for one."""
        async with self._changed:
            while True:
                client = self._client
                if client is not None and client is not stale and client.connected:
                    return client
                await self._changed.wait()


def _pushed(frame: dict[str, Any]) -> Pushed:
    payload = frame.get("payload")
    return Pushed(str(frame.get("event", "")), payload if isinstance(payload, dict) else {})


def _why(error: BaseException) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "nothing listens on the daemon's port"
    return str(error) or type(error).__name__
