"""The daemon's control plane, the gateway's transport: JSON frames on a WebSocket; adapter layer.

A connection opens with `connect.challenge`. The client then sends `connect` with the range
of protocol versions it speaks and either a local-control proof, which allows the one
operation it names (or every method, for the `gateway` operation), or a device token, which
allows the device methods. Every other request waits for a successful `connect`, which must
come within the connect timeout, in frames of at most 64 KiB. A connected peer gets a `tick`
event every tick interval and is dropped after the idle timeout without a frame. The frames
are described by the models of `adapters/control/frames.py`.
"""

from __future__ import annotations

import contextvars
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import anyio
import anyio.to_thread
import orjson
from anyio.abc import TaskGroup
from pydantic import ValidationError
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from adapters.control.frames import (
    PROTOCOL_VERSION,
    Challenge,
    ConnectParams,
    Hello,
    Limits,
    Scope,
)
from adapters.security.host_key import LocalControlProof, ProofVerifier
from domain.errors import LedgerclawError

ControlMethod = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
MAX_FRAME_BYTES = 12 << 20
"""The largest frame once connected: a `chat.send` with a full load of attachments (8 MiB,
base64 encoded) and its longest text fits; below uvicorn's 16 MiB WebSocket limit, so an
oversized frame still gets a `bad_frame` answer rather than a closed socket."""
PRE_CONNECT_MAX_BYTES = 64 * 1024
"""The largest frame accepted before `connect` succeeded."""
MAX_BUFFERED_BYTES = 4 << 20
MAX_BAD_FRAMES = 3
MAX_NAME_LENGTH = 128
CONNECT_TIMEOUT = 10.0
TICK_INTERVAL = 15.0
IDLE_TIMEOUT = 60.0
CANCEL = "\x00cancel"
"""The method `_parse` gives a `cancel` frame (no request method can be named so)."""
GATEWAY_OPERATION = "gateway"
"""The proof operation that opens every method: what an interactive client signs."""
EVENTS = ("connect.challenge", "tick")
"""The events every connection may receive; a plane may publish more."""

POLICY_VIOLATION = 1008
IDLE_CLOSE = 4408
"""The close code of a peer dropped for silence."""
INTERNAL_MESSAGE = "the daemon could not answer; its log has the details"
ALL_SCOPES = tuple(Scope)
DEVICE_SCOPES = (Scope.READ,)

log = logging.getLogger(__name__)


def error_code(error: type[BaseException]) -> str:
    """The wire code of an error class: its name in snake_case, without `Error`."""
    name = error.__name__.removesuffix("Error")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


class _RefusedError(Exception):
    def __init__(
        self,
        code: str,
        message: str,
        *,
        close: bool = False,
        request_id: str | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.close, self.request_id = code, message, close, request_id
        self.retryable = retryable


class Peer:
    """What a method may keep of the connection that called it: pushing events to it later.

    A subscription outlives its request; its task runs in the connection's task group and
    ends with the connection.
    """

    def __init__(self, connection: _Connection, position: Callable[[], int]) -> None:
        self._connection = connection
        self._position = position

    async def push(self, event: str, payload: dict[str, Any]) -> None:
        """Send an event to this connection alone, at the journal's position now."""
        await self._connection.push(event, payload, self._position())

    @property
    def who(self) -> str:
        """Who is connected, as a decision names its decider: `gateway (device dev_…, my-app)`."""
        return self._connection.who

    def start_soon(self, task: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run `task` for as long as the connection lasts."""
        if self._connection.tasks is not None:
            self._connection.tasks.start_soon(task)


_current_peer: contextvars.ContextVar[Peer] = contextvars.ContextVar("ledgerclaw_gateway_peer")


def current_peer() -> Peer:
    """The connection whose request is being answered (for methods that push later)."""
    return _current_peer.get()


@dataclass(eq=False)
class _Connection:
    websocket: WebSocket
    nonce: str
    allowed: frozenset[str] | None = None
    """What `connect` allowed; None until it succeeds."""
    scopes: frozenset[Scope] = frozenset()
    who: str = "gateway"
    """The credential and the client's declared name, once connected."""
    in_flight: dict[str, anyio.CancelScope] = field(default_factory=dict)
    tasks: TaskGroup | None = None
    """The connection's own tasks (ticks, subscriptions); they end with it."""
    """The requests being answered, by id: what a `cancel` frame reaches."""
    seq: int = 0
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def send(self, frame: dict[str, Any]) -> None:
        async with self.lock:
            await self.websocket.send_text(orjson.dumps(frame).decode())

    async def push(self, event: str, payload: dict[str, Any], state_version: int) -> None:
        async with self.lock:
            self.seq += 1
            frame: dict[str, Any] = {"type": "event", "event": event, "payload": payload}
            frame.update(seq=self.seq, stateVersion=state_version)
            await self.websocket.send_text(orjson.dumps(frame).decode())


class ControlPlane:
    """Serves control methods to the local CLI (by proof) and to paired devices (by token)."""

    def __init__(  # noqa: PLR0913 - the plane's parts and its timings
        self,
        methods: Mapping[str, ControlMethod],
        verifier: ProofVerifier,
        authenticate_token: Callable[[str], object],
        device_methods: Iterable[str] = frozenset({"status"}),
        *,
        method_scopes: Mapping[str, Scope] | None = None,
        device_scopes: Callable[[object], Iterable[str]] | None = None,
        journal_position: Callable[[], int] | None = None,
        events: Mapping[str, Scope] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT,
        tick_interval: float = TICK_INTERVAL,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self.methods = dict(methods)
        self.verifier = verifier
        self.authenticate_token = authenticate_token
        self.device_methods = frozenset(device_methods)
        self.method_scopes = dict(method_scopes or {})
        """The scope each method needs; a method not named needs `operator.write`."""
        self.device_scopes = device_scopes
        """The scopes a device was paired with; without it, a device may read only."""
        self.events = dict(events or {})
        """The events the plane publishes, each with the scope a connection needs to hear it."""
        self.published = 0
        """How many events were published."""
        self.journal_position: Callable[[], int] = journal_position or self._published
        self.connect_timeout = connect_timeout
        self.tick_interval = tick_interval
        self.idle_timeout = idle_timeout
        self.refused = 0
        """Connects refused, and requests refused because they came before `connect`."""
        self._connections: set[_Connection] = set()

    def route(self, path: str = "/control") -> WebSocketRoute:
        """The Starlette route of the control socket."""
        return WebSocketRoute(path, self._serve)

    async def publish(self, event: str, payload: dict[str, Any]) -> None:
        """Send an event to every connection that completed `connect` and holds its scope.

        `stateVersion` is the journal's position as the event leaves.
        """
        self.published += 1
        needed = self.events.get(event, Scope.READ)
        version = self.journal_position()
        for connection in list(self._connections):
            if needed not in connection.scopes:
                continue
            try:
                await connection.push(event, payload, version)
            except (WebSocketDisconnect, RuntimeError):
                self._connections.discard(connection)

    def _scopes_of(self, device: object) -> tuple[Scope, ...]:
        if self.device_scopes is None:
            return DEVICE_SCOPES
        named = set(self.device_scopes(device))
        return tuple(scope for scope in ALL_SCOPES if scope in named)

    def _published(self) -> int:
        return self.published

    def limits(self) -> Limits:
        """What a connection is told of the plane's limits and timings."""
        return Limits(
            max_frame_bytes=MAX_FRAME_BYTES,
            pre_connect_max_bytes=PRE_CONNECT_MAX_BYTES,
            max_buffered_bytes=MAX_BUFFERED_BYTES,
            tick_interval_ms=round(self.tick_interval * 1000),
            idle_timeout_ms=round(self.idle_timeout * 1000),
            connect_timeout_ms=round(self.connect_timeout * 1000),
        )

    async def _serve(self, websocket: WebSocket) -> None:
        await websocket.accept()
        connection = _Connection(websocket, secrets.token_hex(32))
        challenge = Challenge(nonce=connection.nonce, ts=round(time.time() * 1000))
        frame = {"type": "event", "event": "connect.challenge", "payload": challenge.model_dump()}
        try:
            await connection.send({**frame, "seq": 0, "stateVersion": self.journal_position()})
            async with anyio.create_task_group() as tasks:
                connection.tasks = tasks
                tasks.start_soon(self._tick, connection)
                await self._converse(connection)
                tasks.cancel_scope.cancel()
        except WebSocketDisconnect:
            pass
        finally:
            self._connections.discard(connection)

    async def _tick(self, connection: _Connection) -> None:
        while True:
            await anyio.sleep(self.tick_interval)
            if connection.allowed is not None:
                ts = round(time.time() * 1000)
                await connection.push("tick", {"ts": ts}, self.journal_position())

    async def _receive(self, connection: _Connection) -> dict[str, Any] | None:
        """The next message; None when the peer must be dropped (its close is sent)."""
        connected = connection.allowed is not None
        wait = self.idle_timeout if connected else self.connect_timeout
        with anyio.move_on_after(wait):
            return dict(await connection.websocket.receive())
        if connected:
            await connection.websocket.close(IDLE_CLOSE, "idle_timeout")
        else:
            await connection.websocket.close(POLICY_VIOLATION, "connect_timeout")
        return None

    async def _converse(self, connection: _Connection) -> None:
        bad_frames = 0
        async with anyio.create_task_group() as requests:
            while True:
                message = await self._receive(connection)
                if message is None or message["type"] == "websocket.disconnect":
                    requests.cancel_scope.cancel()
                    return
                limit = MAX_FRAME_BYTES if connection.allowed is not None else PRE_CONNECT_MAX_BYTES
                try:
                    data = message.get("text") or message.get("bytes")
                    request_id, method, params = _parse(data, limit)
                    if method == CANCEL:
                        self._cancel(connection, request_id)
                        continue
                    if connection.allowed is None or method == "connect":
                        # The handshake is answered in order: nothing else may run before it.
                        await self._answer(connection, request_id, method, params)
                        continue
                    if request_id in connection.in_flight:
                        await connection.send(_duplicate(request_id))
                        continue
                    connection.in_flight[request_id] = anyio.CancelScope()
                    requests.start_soon(self._answer, connection, request_id, method, params)
                except _RefusedError as refusal:
                    bad_frames += refusal.code == "bad_frame"
                    await connection.send(_failure(refusal))
                    if refusal.close or bad_frames >= MAX_BAD_FRAMES:
                        await connection.websocket.close(POLICY_VIOLATION, refusal.code)
                        requests.cancel_scope.cancel()
                        return

    @staticmethod
    def _cancel(connection: _Connection, request_id: str) -> None:
        """Cancel a request in flight; one already answered (or unknown) is left alone."""
        scope = connection.in_flight.get(request_id)
        if scope is not None:
            scope.cancel()

    async def _answer(
        self, connection: _Connection, request_id: str, method: str, params: dict[str, Any]
    ) -> None:
        """Run one request and send its response, whatever ends it."""
        scope = connection.in_flight.get(request_id) or anyio.CancelScope()
        _current_peer.set(Peer(connection, self.journal_position))
        try:
            with scope:
                payload = await self._dispatch(connection, method, params)
                frame = {"type": "res", "id": request_id, "ok": True, "payload": payload}
            if scope.cancelled_caught:
                refusal = _RefusedError("cancelled", f"request {request_id!r} was cancelled")
                refusal.request_id = request_id
                frame = _failure(refusal)
        except _RefusedError as refusal:
            refusal.request_id = request_id
            frame = _failure(refusal)
            if refusal.close:
                await connection.send(frame)
                await connection.websocket.close(POLICY_VIOLATION, refusal.code)
                return
        finally:
            connection.in_flight.pop(request_id, None)
        await connection.send(frame)

    async def _dispatch(
        self, connection: _Connection, method: str, params: dict[str, Any]
    ) -> dict[str, Any]:
        if method == "connect":
            return await self._connect(connection, params)
        if connection.allowed is None:
            self.refused += 1
            raise _RefusedError("unauthenticated", "send `connect` first", close=True)
        handler = self.methods.get(method)
        if handler is None:
            raise _RefusedError("unknown_method", f"no method {method!r}")
        if method not in connection.allowed:
            raise _RefusedError("forbidden", f"this connection may not call {method!r}")
        scope = self.method_scopes.get(method, Scope.WRITE)
        if scope not in connection.scopes:
            msg = f"{method} needs the scope {scope}, which this connection was not granted"
            raise _RefusedError("missing_scope", msg)
        try:
            payload = await handler(params)
            orjson.dumps(payload)  # an unencodable answer is the handler's fault, not the frame's
        except LedgerclawError as error:
            raise _RefusedError(error_code(type(error)), str(error)) from None
        except Exception:
            log.exception("control method %s failed", method)
            raise _RefusedError("internal", INTERNAL_MESSAGE, retryable=True) from None
        return payload

    async def _connect(self, connection: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        if connection.allowed is not None:
            raise _RefusedError("already_connected", "this connection is already connected")
        try:
            payload = await self._credentials(connection, params)
        except _RefusedError:
            self.refused += 1
            raise
        self._connections.add(connection)
        return payload

    async def _credentials(self, connection: _Connection, params: dict[str, Any]) -> dict[str, Any]:
        wanted = _connect_params(params)
        if not wanted.min_protocol <= PROTOCOL_VERSION <= wanted.max_protocol:
            msg = (
                f"this daemon speaks protocol {PROTOCOL_VERSION}; the client asked for"
                f" {wanted.min_protocol} to {wanted.max_protocol}"
            )
            raise _RefusedError("unsupported_protocol", msg, close=True)
        device: str | None = None
        try:
            if wanted.proof is not None:
                checked = LocalControlProof.model_validate(wanted.proof)
                self.verifier.verify(checked, connection.nonce, checked.operation)
                role, granted, who = "local", ALL_SCOPES, "local control"
                every = checked.operation == GATEWAY_OPERATION
                allowed = frozenset(self.methods) if every else frozenset({checked.operation})
            else:
                assert wanted.token is not None  # noqa: S101 - ConnectParams holds one credential
                found = await anyio.to_thread.run_sync(self.authenticate_token, wanted.token)
                role, granted, device = "device", self._scopes_of(found), str(found)
                who = f"device {device}"
                allowed = frozenset(
                    m
                    for m in self.device_methods
                    if self.method_scopes.get(m, Scope.WRITE) in granted
                )
        except ValidationError:
            raise _RefusedError("invalid_proof", "proof is malformed", close=True) from None
        except LedgerclawError as error:
            raise _RefusedError(error_code(type(error)), str(error), close=True) from None
        except Exception:
            log.exception("connect failed")
            raise _RefusedError("internal", INTERNAL_MESSAGE, close=True) from None
        asked = set(granted if wanted.scopes is None else wanted.scopes)
        connection.scopes = frozenset(s for s in granted if s in asked)
        connection.allowed = allowed
        named = f", {wanted.client.name}" if wanted.client is not None else ""
        connection.who = f"gateway ({who}{named})"
        offered = (*EVENTS, *(e for e, s in self.events.items() if s in connection.scopes))
        hello = Hello(
            protocol=PROTOCOL_VERSION,
            role=role,
            scopes=tuple(s for s in ALL_SCOPES if s in connection.scopes),
            methods=tuple(sorted(allowed)),
            events=offered,
            limits=self.limits(),
            journal_position=self.journal_position(),
            device=device,
        )
        return hello.model_dump(mode="json", exclude_none=True)


def _connect_params(params: dict[str, Any]) -> ConnectParams:
    try:
        return ConnectParams.model_validate(params)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        if "proof" in params and isinstance(params.get("proof"), dict) and where == "params":
            raise _RefusedError("invalid_proof", "proof is malformed", close=True) from None
        msg = f"connect: {where}: {first['msg'].removeprefix('Value error, ')}"
        code = "unauthenticated" if "proof or a token" in msg else "bad_connect"
        raise _RefusedError(code, msg, close=True) from None


def _parse(data: str | bytes | None, limit: int) -> tuple[str, str, dict[str, Any]]:
    raw = data.encode() if isinstance(data, str) else data or b""
    if len(raw) > limit:
        # Before connect a stranger gets one chance: an oversized frame closes the socket.
        close = limit < MAX_FRAME_BYTES
        raise _RefusedError("bad_frame", f"frame is larger than {limit} bytes", close=close)
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _RefusedError("bad_frame", "frame is not JSON") from None
    if isinstance(frame, dict) and frame.get("type") == "cancel" and _is_name(frame.get("id")):
        return frame["id"], CANCEL, {}
    if not isinstance(frame, dict) or frame.get("type") != "req":
        raise _RefusedError("bad_frame", 'frame is not a request ({"type": "req", ...})')
    request_id, method, params = frame.get("id"), frame.get("method"), frame.get("params", {})
    if not _is_name(request_id):
        raise _RefusedError("bad_frame", "a request needs a string id")
    if not _is_name(method) or not isinstance(params, dict):
        msg = "a request needs a string method and object params"
        raise _RefusedError("bad_frame", msg, request_id=request_id)
    return request_id, method, params


def _is_name(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= MAX_NAME_LENGTH


def _duplicate(request_id: str) -> dict[str, Any]:
    msg = f"request {request_id!r} is still being answered"
    return _failure(_RefusedError("duplicate_id", msg, request_id=request_id))


def _failure(refusal: _RefusedError) -> dict[str, Any]:
    error = {"code": refusal.code, "message": refusal.message, "retryable": refusal.retryable}
    return {"type": "res", "id": refusal.request_id, "ok": False, "error": error}
