"""`POST /pair`: exchanging a pairing code for a device token over HTTP; adapter layer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.control.plane import INTERNAL_MESSAGE, error_code
from adapters.security.pairing import (
    DeviceJournal,
    PairingCodeExpiredError,
    PairingCodes,
    PairingError,
    pair_device,
)
from domain.devices.events import DisplayName
from domain.errors import LedgerclawError

log = logging.getLogger(__name__)
MAX_PAIR_BODY_BYTES = 4096


class _PairRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str = Field(max_length=64)
    name: DisplayName | None = None


def pair_route(
    codes: PairingCodes,
    journal: DeviceJournal,
    path: str = "/pair",
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Route:
    """The POST route that exchanges a pairing code for a device token.

    The device is named by the operator's `daemon pair --name` if given, else by the request,
    else "device". A code is consumed before the journal is written, so a failed write needs
    a new code.
    """

    async def pair(request: Request) -> Response:
        media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        body = await _read_body(request) if media_type == "application/json" else None
        try:
            asked = _PairRequest.model_validate_json(body or b"")
        except ValidationError:
            msg = 'send application/json {"code": "XXXX-XXXX", "name": "optional, 1-100 chars"}'
            return _http_error(400, "bad_request", msg)
        try:
            issued = codes.consume(asked.code)
            name = issued.name or asked.name or "device"
            device_id, token = await anyio.to_thread.run_sync(
                pair_device, journal, name, clock(), issued.scopes
            )
        except PairingError as error:
            status = 410 if isinstance(error, PairingCodeExpiredError) else 400
            return _http_error(status, error_code(type(error)), str(error))
        except LedgerclawError as error:
            log.warning("pairing failed: %s", error)
            return _http_error(503, error_code(type(error)), "pairing was not recorded; try again")
        except Exception:
            log.exception("pairing failed")
            return _http_error(500, "internal", INTERNAL_MESSAGE)
        return _json(200, {"device_id": str(device_id), "token": token})

    return Route(path, pair, methods=["POST"])


async def _read_body(request: Request) -> bytes | None:
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_PAIR_BODY_BYTES:
            return None
    return bytes(body)


def _http_error(status: int, code: str, message: str) -> Response:
    return _json(status, {"error": {"code": code, "message": message}})


def _json(status: int, content: dict[str, Any]) -> Response:
    headers = {"Cache-Control": "no-store"}
    return Response(orjson.dumps(content), status, headers, media_type="application/json")
