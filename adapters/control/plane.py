"""The daemon's control plane: JSON frames on a WebSocket; adapter layer.

A connection opens with a challenge. The client then sends `connect` with either a
local-control proof, which allows the one operation it names, or a device token, which
allows the device methods. Every other request waits for a successful `connect`.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import anyio
import anyio.to_thread
import orjson
from pydantic import ValidationError
from starlette.routing import WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from adapters.security.host_key import LocalControlProof, ProofVerifier
from domain.errors import LedgerclawError

ControlMethod = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
MAX_FRAME_BYTES = 1 << 20
MAX_BAD_FRAMES = 3
MAX_NAME_LENGTH = 128

POLICY_VIOLATION = 1008
INTERNAL_MESSAGE = "the daemon could not answer; its log has the details"

log = logging.getLogger(__name__)


def error_code(error: type[BaseException]) -> str:
    """The wire code of an error class: its name in snake_case, without `Error`."""
    name = error.__name__.removesuffix("Error")
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


class _RefusedError(Exception):
    def __init__(
        self, code: str, message: str, *, close: bool = False, request_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.close, self.request_id = code, message, close, request_id


@dataclass(eq=False)
class _Connection:
    websocket: WebSocket
    nonce: str
    allowed: frozenset[str] | None = None
    """What `connect` allowed; None until it succeeds."""
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

    def __init__(
        self,
        methods: Mapping[str, ControlMethod],
        verifier: ProofVerifier,
        authenticate_token: Callable[[str], object],
        device_methods: Iterable[str] = frozenset({"status"}),
    ) -> None:
        self.methods = dict(methods)
        self.verifier = verifier
        self.authenticate_token = authenticate_token
        self.device_methods = frozenset(device_methods)
        self.refused = 0
        """Connects refused, and requests refused because they came before `connect`."""
        self.state_version = 0
        """How many events were published."""
        self._connections: set[_Connection] = set()

    def route(self, path: str = "/control") -> WebSocketRoute:
        """The Starlette route of the control socket."""
        return WebSocketRoute(path, self._serve)

    async def publish(self, event: str, payload: dict[str, Any]) -> None:
        """Send an event to every connection that completed `connect`."""
        self.state_version += 1
        for connection in list(self._connections):
            try:
                await connection.push(event, payload, self.state_version)
            except (WebSocketDisconnect, RuntimeError):
                self._connections.discard(connection)

    async def _serve(self, websocket: WebSocket) -> None:
        await websocket.accept()
        connection = _Connection(websocket, secrets.token_hex(32))
        challenge = {"type": "event", "event": "challenge", "payload": {"nonce": connection.nonce}}
        try:
            await connection.send({**challenge, "seq": 0, "stateVersion": 0})
            await self._converse(connection)
        except WebSocketDisconnect:
            pass
        finally:
            self._connections.discard(connection)

    async def _converse(self, connection: _Connection) -> None:
        bad_frames = 0
        while True:
            message = await connection.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            try:
                request_id, method, params = _parse(message.get("text") or message.get("bytes"))
                try:
                    payload = await self._dispatch(connection, method, params)
                except _RefusedError as refusal:
                    refusal.request_id = request_id
                    raise
            except _RefusedError as refusal:
                bad_frames += refusal.code == "bad_frame"
                await connection.send(_failure(refusal.request_id, refusal.code, refusal.message))
                if refusal.close or bad_frames >= MAX_BAD_FRAMES:
                    await connection.websocket.close(POLICY_VIOLATION, refusal.code)
                    return
                continue
            await connection.send({"type": "res", "id": request_id, "ok": True, "payload": payload})

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
        try:
            payload = await handler(params)
            orjson.dumps(payload)  # an unencodable answer is the handler's fault, not the frame's
        except LedgerclawError as error:
            raise _RefusedError(error_code(type(error)), str(error)) from None
        except Exception:
            log.exception("control method %s failed", method)
            raise _RefusedError("internal", INTERNAL_MESSAGE) from None
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
        proof, token = params.get("proof"), params.get("token")
        try:
            if isinstance(proof, dict) and token is None:
                checked = LocalControlProof.model_validate(proof)
                self.verifier.verify(checked, connection.nonce, checked.operation)
                connection.allowed = frozenset({checked.operation})
                return {"role": "local", "methods": [checked.operation]}
            if isinstance(token, str) and proof is None:
                device = await anyio.to_thread.run_sync(self.authenticate_token, token)
                connection.allowed = self.device_methods
                methods = sorted(self.device_methods)
                return {"role": "device", "device": str(device), "methods": methods}
        except ValidationError:
            raise _RefusedError("invalid_proof", "proof is malformed", close=True) from None
        except LedgerclawError as error:
            raise _RefusedError(error_code(type(error)), str(error), close=True) from None
        except Exception:
            log.exception("connect failed")
            raise _RefusedError("internal", INTERNAL_MESSAGE, close=True) from None
        msg = "connect needs either a proof or a token"
        raise _RefusedError("unauthenticated", msg, close=True)


def _parse(data: str | bytes | None) -> tuple[str, str, dict[str, Any]]:
    raw = data.encode() if isinstance(data, str) else data or b""
    if len(raw) > MAX_FRAME_BYTES:
        raise _RefusedError("bad_frame", f"frame is larger than {MAX_FRAME_BYTES} bytes")
    try:
        frame = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise _RefusedError("bad_frame", "frame is not JSON") from None
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


def _failure(request_id: str | None, code: str, message: str) -> dict[str, Any]:
    return {
        "type": "res",
        "id": request_id,
        "ok": False,
        "error": {"code": code, "message": message},
    }
