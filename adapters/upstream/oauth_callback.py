"""The loopback listener that receives an OAuth authorization's redirect; adapter layer.

`ledgerclaw mcp auth` registers `http://127.0.0.1:<port>/callback` as its redirect URI (RFC 8252
§7.3) and listens there while a person authorizes in the browser. The listener reads one
request head per connection, answers with a short plain-text page and keeps the first answer
that carries a code or an error. Any other request (a favicon, a probe) gets 404 and changes
nothing; a connection that sends nothing is dropped after a few seconds.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream

CALLBACK_PATH = "/callback"
AUTHORIZED_PAGE = "ledgerclaw: authorized, you can close this tab\n"
_MAX_HEAD = 16 * 1024
_READ_SECONDS = 5.0
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


@dataclass(frozen=True)
class CallbackAnswer:
    """What the authorization server sent back through the browser."""

    code: str | None = None
    state: str | None = None
    iss: str | None = None
    error: str | None = None
    error_description: str | None = None


class LoopbackCallback:
    """Waits on 127.0.0.1 for the redirect that ends an authorization."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._answer: CallbackAnswer | None = None
        self._answered = anyio.Event()

    @property
    def redirect_uri(self) -> str:
        """The URI to register and to send the browser back to."""
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def wait(self) -> CallbackAnswer:
        """The first answer that carried a code or an error."""
        await self._answered.wait()
        assert self._answer is not None  # noqa: S101 - set before the event
        return self._answer

    async def handle(self, stream: SocketStream) -> None:
        """Answer one connection: read its request head, reply and close."""
        async with stream:
            try:
                with anyio.fail_after(_READ_SECONDS):
                    method, target = await _request_line(stream)
            except (
                TimeoutError,
                ValueError,
                OSError,
                anyio.EndOfStream,
                anyio.BrokenResourceError,
            ):
                return
            status, page = self._respond(method, target)
            await _reply(stream, status, page)

    def _respond(self, method: str, target: str) -> tuple[int, str]:
        parts = urlsplit(target)
        if parts.path != CALLBACK_PATH:
            return 404, "ledgerclaw: not found\n"
        if method != "GET":
            return 405, "ledgerclaw: only GET is answered here\n"
        query = {key: values[0] for key, values in parse_qs(parts.query).items()}
        answer = CallbackAnswer(
            code=query.get("code"),
            state=query.get("state"),
            iss=query.get("iss"),
            error=query.get("error"),
            error_description=query.get("error_description"),
        )
        if answer.error is None and answer.code is None:
            return 400, "ledgerclaw: this redirect carries neither a code nor an error\n"
        if self._answer is None:
            self._answer = answer
            self._answered.set()
        if answer.error is not None:
            detail = f" ({answer.error_description})" if answer.error_description else ""
            return 400, f"ledgerclaw: authorization failed: {answer.error}{detail}\n"
        return 200, AUTHORIZED_PAGE


async def _request_line(stream: SocketStream) -> tuple[str, str]:
    """The method and target of the request whose head arrives on `stream`."""
    head = b""
    while b"\r\n\r\n" not in head and b"\n\n" not in head:
        if len(head) > _MAX_HEAD:
            msg = "request head too long"
            raise ValueError(msg)
        head += await stream.receive(4096)
    line = head.split(b"\n", 1)[0].decode("latin-1").strip()
    method, target, _version = line.split(" ")
    return method, target


async def _reply(stream: SocketStream, status: int, page: str) -> None:
    body = page.encode()
    head = (
        f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
        "Content-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n\r\n"
    )
    try:
        await stream.send(head.encode() + body)
    except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        return


@asynccontextmanager
async def loopback_callback() -> AsyncIterator[LoopbackCallback]:
    """Listen on a free port of 127.0.0.1 for the block's duration; closed when it ends."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    async with listener, anyio.create_task_group() as group:
        port = listener.extra(SocketAttribute.local_port)  # noqa: S610 - anyio, not Django
        callback = LoopbackCallback(port)
        group.start_soon(listener.serve, callback.handle)
        try:
            yield callback
        finally:
            group.cancel_scope.cancel()
