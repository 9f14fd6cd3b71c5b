"""A loopback fake of Anthropic's Messages API that a test scripts with a queue of responses.

Real HTTP on 127.0.0.1 (a random free port, a background thread) and real SSE, so the SDK, a
provider or a `ledgerclaw` subprocess can be pointed at it:

    with serving(models=("claude-test",), api_key=None) as fake:
        fake.base_url                      # "http://127.0.0.1:PORT"; the SDK adds /v1/...
        fake.enqueue(text_message("Hello"))
        fake.enqueue(tool_use_message([("toolu_1", "read_file", {"path": "a"})], text="Reading."))
        ...
        fake.requests                      # [RecordedRequest(method, path, headers, body), ...]

`POST /v1/messages` answers the next queued response; an empty queue answers 500 with an
`api_error` saying so. `GET /v1/models` lists `models`. With `api_key` set, a request that
does not carry it (as `x-api-key` or `Authorization: Bearer`) answers 401. Responses:

- `StreamedMessage(events, delay)`: the events as SSE, `delay` seconds before each one;
  built by `text_message`, `tool_use_message` or `message_events`;
- `CutStream(events)`: those events, then the socket closes mid-body (`cut_stream(message)`);
- `HttpError(status, error_type, message, headers)`: Anthropic's JSON error shape
  (`http_error(429, "slow down", headers={"retry-after": "3"})`);
- `StreamError(events, error_type, message)`: a 200 stream that sends an `error` event
  (`stream_error("overloaded_error", "Overloaded")`).
"""

from __future__ import annotations

import json
import re
import socket
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SseEvent = tuple[str, dict[str, object]]
"""One server-sent event: its type and its JSON data."""
DEFAULT_USAGE = {
    "input_tokens": 25,
    "cache_creation_input_tokens": 1200,
    "cache_read_input_tokens": 0,
    "output_tokens": 7,
}
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class StreamedMessage:
    """A whole streamed message, each event `delay` seconds after the one before."""

    events: tuple[SseEvent, ...]
    delay: float = 0.0


@dataclass(frozen=True)
class CutStream:
    """A stream that closes its connection after `events`, before its end."""

    events: tuple[SseEvent, ...]


@dataclass(frozen=True)
class HttpError:
    """An HTTP error with Anthropic's JSON error body."""

    status: int
    error_type: str
    message: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class StreamError:
    """A stream that answers 200, sends `events`, then an `error` event."""

    events: tuple[SseEvent, ...]
    error_type: str
    message: str


Response = StreamedMessage | CutStream | HttpError | StreamError
ToolUse = tuple[str, str, Mapping[str, object] | str]
"""A tool call as `(id, name, input)`; a string input is sent as it is, parsed or not."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it; `body` is None when it was not JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, object] | None


def message_events(
    blocks: Sequence[str | ToolUse],
    *,
    stop_reason: str | None,
    usage: Mapping[str, int] = DEFAULT_USAGE,
    model: str = "claude-test",
) -> tuple[SseEvent, ...]:
    """The events of one message whose content blocks are texts and tool calls, in order.

    Text streams a word at a time; a tool input streams as `input_json_delta` pieces (an
    input of `{}` as one empty piece, as Anthropic sends a tool without arguments).
    """
    start_usage = {name: value for name, value in usage.items() if name != "output_tokens"}
    message: dict[str, object] = {"id": "msg_fake", "type": "message", "role": "assistant"}
    message |= {"model": model, "content": [], "stop_reason": None, "stop_sequence": None}
    message["usage"] = start_usage | {"output_tokens": 1}
    events = [_event("message_start", message=message), _event("ping")]
    for index, block in enumerate(blocks):
        if isinstance(block, str):
            start: dict[str, object] = {"type": "text", "text": ""}
            words = [p for p in re.findall(r"\S*\s*", block) if p]
            deltas = [{"type": "text_delta", "text": word} for word in words]
        else:
            call_id, name, tool_input = block
            start = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
            text = tool_input if isinstance(tool_input, str) else json.dumps(tool_input)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text)]
        events.append(_event("content_block_start", index=index, content_block=start))
        events.extend(_event("content_block_delta", index=index, delta=d) for d in deltas)
        events.append(_event("content_block_stop", index=index))
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    output = {"output_tokens": usage.get("output_tokens", 1)}
    events.append(_event("message_delta", delta=delta, usage=output))
    events.append(_event("message_stop"))
    return tuple(events)


def _event(kind: str, **fields: object) -> SseEvent:
    return kind, {"type": kind, **fields}


def _pieces(text: str, count: int = 3) -> list[str]:
    if not text or text == "{}":
        return [""]
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)]


def text_message(
    text: str,
    *,
    stop_reason: str = "end_turn",
    usage: Mapping[str, int] = DEFAULT_USAGE,
    delay: float = 0.0,
) -> StreamedMessage:
    """A message of one text block."""
    return StreamedMessage(message_events([text], stop_reason=stop_reason, usage=usage), delay)


def tool_use_message(
    calls: Sequence[ToolUse],
    *,
    text: str = "",
    stop_reason: str = "tool_use",
    usage: Mapping[str, int] = DEFAULT_USAGE,
    delay: float = 0.0,
) -> StreamedMessage:
    """A message of an optional text block, then one tool_use block per call."""
    blocks: list[str | ToolUse] = [text] if text else []
    blocks.extend(calls)
    return StreamedMessage(message_events(blocks, stop_reason=stop_reason, usage=usage), delay)


def cut_stream(message: StreamedMessage, keep: int | None = None) -> CutStream:
    """`message` cut after its first `keep` events; by default before `message_delta`."""
    events = message.events
    return CutStream(events[: len(events) - 2 if keep is None else keep])


def http_error(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpError:
    """An HTTP error; its type defaults to the one Anthropic gives that status."""
    kind = error_type or ERROR_TYPES.get(status, "api_error")
    return HttpError(status, kind, message, dict(headers or {}))


def stream_error(error_type: str = "overloaded_error", message: str = "Overloaded") -> StreamError:
    """A stream that starts a text, streams `Partial `, then fails with an `error` event."""
    events = message_events(["Partial answer"], stop_reason="end_turn")
    return StreamError(events[:4], error_type, message)


class FakeAnthropicServer:
    """The fake's state: the queue of responses, the requests received, the models listed."""

    def __init__(
        self, models: Sequence[str] = ("claude-test",), api_key: str | None = None
    ) -> None:
        self.models = list(models)
        self.api_key = api_key
        self._queue: deque[Response] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def base_url(self) -> str:
        """The address to point a client at, without `/v1`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many queued responses no request has taken yet."""
        with self._lock:
            return len(self._queue)

    def enqueue(self, *responses: Response) -> None:
        """Queue responses for the next `POST /v1/messages` requests, in order."""
        with self._lock:
            self._queue.extend(responses)

    def start(self) -> None:
        """Serve in the background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, end open connections (and slow streams), and close the socket."""
        self.stopping.set()
        self._server.shutdown()
        self._server.end_connections()
        self._server.server_close()
        self._thread.join(timeout=5)

    def record(self, request: RecordedRequest) -> None:
        """Keep one received request."""
        with self._lock:
            self._requests.append(request)

    def next_response(self) -> Response | None:
        """The next queued response, if any."""
        with self._lock:
            return self._queue.popleft() if self._queue else None


@contextmanager
def serving(
    models: Sequence[str] = ("claude-test",), api_key: str | None = None
) -> Iterator[FakeAnthropicServer]:
    """A running fake for the `with` block, stopped after it."""
    fake = FakeAnthropicServer(models, api_key)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()


class _Server(ThreadingHTTPServer):
    fake: FakeAnthropicServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()

    def end_connections(self) -> None:
        with self.connections_lock:
            for connection in self.connections:
                with suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        with self.server.connections_lock:
            self.server.connections.discard(self.connection)
        with suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base's name
        """Stay quiet: tests read `.requests`, not a log."""

    def do_GET(self) -> None:
        if not self._received(None):
            return
        if self.path.split("?")[0] != "/v1/models":
            self._json(404, _error_body("not_found_error", f"no route {self.path}"))
            return
        data = [
            {"type": "model", "id": m, "display_name": m, "created_at": "2026-01-01T00:00:00Z"}
            for m in self.server.fake.models
        ]
        first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
        self._json(200, {"data": data, "has_more": False, "first_id": first, "last_id": last})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not self._received(body if isinstance(body, dict) else None):
            return
        if self.path.split("?")[0] != "/v1/messages":
            self._json(404, _error_body("not_found_error", f"no route {self.path}"))
            return
        response = self.server.fake.next_response()
        if response is None:
            message = "the fake Anthropic server has no response queued for POST /v1/messages"
            self._json(500, _error_body("api_error", message))
        elif isinstance(response, HttpError):
            self._json(
                response.status,
                _error_body(response.error_type, response.message),
                response.headers,
            )
        else:
            self._stream(response)

    def _received(self, body: dict[str, object] | None) -> bool:
        """Record the request; False (after answering 401) when it lacks the fake's key."""
        headers = {name.lower(): value for name, value in self.headers.items()}
        self.server.fake.record(RecordedRequest(self.command, self.path, headers, body))
        key = self.server.fake.api_key
        given = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if key is not None and given != key:
            self._json(401, _error_body("authentication_error", "invalid x-api-key"))
            return False
        return True

    def _json(self, status: int, body: object, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, response: StreamedMessage | CutStream | StreamError) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        delay = response.delay if isinstance(response, StreamedMessage) else 0.0
        events = list(response.events)
        if isinstance(response, StreamError):
            events.append(("error", _error_body(response.error_type, response.message)))
        try:
            for kind, data in events:
                if self.server.fake.stopping.wait(delay):
                    return
                self._chunk(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())
            if isinstance(response, CutStream):
                # Closed mid-body: the chunked body never gets its last, empty chunk.
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _error_body(error_type: str, message: str) -> dict[str, object]:
    return {
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": "req_fake",
    }
