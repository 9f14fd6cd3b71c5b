"""A loopback fake of an OpenAI-compatible chat-completions server: real HTTP, real SSE.

It runs in a background thread on 127.0.0.1 (a random free port) and answers each
`POST /v1/chat/completions` (or `/chat/completions`) with the next response a test queued;
`GET /v1/models` (or `/models`) lists the configured ids. A `ledgerclaw` subprocess can be
pointed at it as well as an in-process provider. API::

    with serving(models=("fake-model",)) as fake:
        fake.base_url                      # "http://127.0.0.1:PORT/v1"
        fake.enqueue(text_reply("Hello"))
        fake.enqueue(tool_call_reply([("c1", "read_file", {"path": "a.txt"})]))
        fake.requests                      # [RecordedRequest(method, path, headers, body)], a copy
        fake.wait_for_disconnect(2.0)      # True once a client closed a stream before its end

Responses: `StreamedReply` (chunk dicts written as `data: <json>`, then `data: [DONE]` unless
`done=False`, an optional delay before each chunk), `CutStream` (some chunks, then the socket
closes mid-body), `HttpError` (status, JSON body, headers) and `JsonCompletion` (a whole
non-streamed answer). Modes: `refuse_streaming_with_tools` answers a streamed request that
offers tools with a 400 about streaming, `refuse_tool_choice` a request with `tool_choice`
with a 400 about it; neither takes a queued response. An empty queue answers 500 saying so.
Builders (`chunk`, `call_fragment`, `usage_chunk`, `text_reply`, `tool_call_reply`,
`completion`, `http_error`) write OpenAI's own shapes, with a usage chunk (`choices: []`)
by default.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Chunk = dict[str, Any]
CREATED = 1_700_000_000
DEFAULT_USAGE = (12, 5)
"""The (prompt, completion) tokens a builder's usage chunk reports unless told otherwise."""
POLL_SECONDS = 0.05
"""How often the serving thread looks for a shutdown: a test's teardown waits this long."""


@dataclass(frozen=True)
class StreamedReply:
    """A streamed answer: each chunk as an SSE event, then `[DONE]` unless `done` is False."""

    chunks: tuple[Chunk, ...]
    delay: float = 0.0
    """Seconds to wait before each chunk."""
    done: bool = True


@dataclass(frozen=True)
class CutStream:
    """A stream that writes its chunks, then closes the socket in the middle of the body."""

    chunks: tuple[Chunk, ...] = ()
    delay: float = 0.0


@dataclass(frozen=True)
class HttpError:
    """An error answer: a status, a JSON body and any headers (`retry-after`, …)."""

    status: int
    body: Any
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JsonCompletion:
    """A whole non-streamed completion, sent as JSON whatever the request asked."""

    body: Any
    status: int = 200


Response = StreamedReply | CutStream | HttpError | JsonCompletion


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: method, path, headers (lower-case names), JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """The scripted state of one fake server: the queue, the modes and what it saw."""

    def __init__(self, models: Sequence[str] = ("fake-model",)) -> None:
        self.models = tuple(models)
        self.refuse_streaming_with_tools = False
        self.refuse_tool_choice = False
        self.base_url = ""
        self._lock = threading.Lock()
        self._queue: deque[Response] = deque()
        self._requests: list[RecordedRequest] = []
        self._disconnected = threading.Event()

    def enqueue(self, *responses: Response) -> None:
        """Queue responses for the next chat-completions requests, in order."""
        with self._lock:
            self._queue.extend(responses)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many queued responses no request has taken yet."""
        with self._lock:
            return len(self._queue)

    def wait_for_disconnect(self, timeout: float) -> bool:
        """Whether a client closed a stream before its end, waiting up to `timeout` seconds."""
        return self._disconnected.wait(timeout)

    def _record(self, request: RecordedRequest) -> int:
        with self._lock:
            self._requests.append(request)
            return len(self._requests)

    def _answer(self, body: Any, number: int) -> Response:
        offers_tools = isinstance(body, dict) and bool(body.get("tools"))
        if self.refuse_streaming_with_tools and offers_tools and body.get("stream"):
            return http_error(400, "streaming is not supported when tools are given")
        if self.refuse_tool_choice and isinstance(body, dict) and "tool_choice" in body:
            return http_error(400, "tool_choice is not supported by this server")
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return http_error(
            500, f"the fake server has no response queued for request {number}", "fake_error"
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        """Stay quiet: tests read `requests`, not a log."""

    def do_GET(self) -> None:
        """List the configured models."""
        self.server.fake._record(self._recorded(None))
        if self.path.rstrip("/") not in ("/v1/models", "/models"):
            self._json(404, {"error": {"message": f"no such path: {self.path}"}})
            return
        data = [
            {"id": model, "object": "model", "created": CREATED, "owned_by": "fake"}
            for model in self.server.fake.models
        ]
        self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        """Answer a chat-completions request with the next queued response."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        number = self.server.fake._record(self._recorded(body))
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": f"no such path: {self.path}"}})
            return
        response = self.server.fake._answer(body, number)
        if isinstance(response, HttpError):
            self._json(response.status, response.body, response.headers)
        elif isinstance(response, JsonCompletion):
            self._json(response.status, response.body)
        else:
            self._stream(response)

    def _recorded(self, body: Any) -> RecordedRequest:
        headers = {name.lower(): value for name, value in self.headers.items()}
        return RecordedRequest(self.command, self.path, headers, body)

    def _json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, response: StreamedReply | CutStream) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n" for c in response.chunks]
        if isinstance(response, StreamedReply) and response.done:
            events.append("data: [DONE]\n\n")
        try:
            for event in events:
                if response.delay and self._client_left(response.delay):
                    raise ConnectionResetError  # noqa: TRY301 - one path for every way a client leaves
                self._write_chunk(event.encode())
            if isinstance(response, CutStream):
                # No terminating chunk: the client sees the body end in its middle.
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            self.server.fake._disconnected.set()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _client_left(self, seconds: float) -> bool:
        """Wait `seconds`, unless the client closes its end first (then True)."""
        readable, _, _ = select.select([self.connection], [], [], seconds)
        if not readable:
            return False
        try:
            peeked: bytes = self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True
        return not peeked


@contextmanager
def serving(models: Sequence[str] = ("fake-model",)) -> Iterator[FakeServer]:
    """A fake server listening on a free loopback port until the block ends."""
    fake = FakeServer(models)
    server = _Server(fake)
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(
        target=server.serve_forever, args=(POLL_SECONDS,), name="fake-openai", daemon=True
    )
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# -- builders ------------------------------------------------------------------------------


def chunk(
    delta: Mapping[str, Any] | None = None,
    finish: str | None = None,
    *,
    index: int = 0,
    model: str = "fake-model",
) -> Chunk:
    """One `chat.completion.chunk` with one choice (`usage: null`, as OpenAI sends)."""
    choice = {"index": index, "delta": dict(delta or {}), "logprobs": None, "finish_reason": finish}
    return _envelope(model) | {"choices": [choice], "usage": None}


def call_fragment(
    index: int, arguments: str = "", *, call_id: str | None = None, name: str | None = None
) -> Chunk:
    """A chunk with one tool-call fragment: id and name only when given, as a first one has."""
    fragment: dict[str, Any] = {"index": index}
    if call_id is not None:
        fragment |= {"id": call_id, "type": "function"}
    function = {"arguments": arguments} if name is None else {"name": name, "arguments": arguments}
    return chunk({"tool_calls": [fragment | {"function": function}]})


def usage_chunk(
    prompt: int = DEFAULT_USAGE[0],
    completion: int = DEFAULT_USAGE[1],
    *,
    cached: int | None = None,
    null_choices: bool = False,
    model: str = "fake-model",
) -> Chunk:
    """The last chunk `include_usage` asks for: `choices: []` (vLLM: `null`) and the usage."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return _envelope(model) | {"choices": None if null_choices else [], "usage": usage}


def text_reply(
    text: str,
    *,
    finish: str | None = "stop",
    usage: tuple[int, int] | None = DEFAULT_USAGE,
    delay: float = 0.0,
) -> StreamedReply:
    """A streamed text reply, a word at a time, then its finish and (by default) its usage."""
    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in re.findall(r"\S*\s*", text) if piece]
    chunks.append(chunk({}, finish))
    if usage is not None:
        chunks.append(usage_chunk(*usage))
    return StreamedReply(tuple(chunks), delay=delay)


def tool_call_reply(
    calls: Sequence[tuple[str, str, Mapping[str, Any]]],
    *,
    text: str = "",
    finish: str | None = "tool_calls",
    usage: tuple[int, int] | None = DEFAULT_USAGE,
    fragments: int = 3,
) -> StreamedReply:
    """A streamed tool-call reply: per call, a first fragment with id and name, then arguments.

    Each call's arguments (JSON text) arrive in `fragments` pieces carrying only the index.
    """
    chunks = [chunk({"role": "assistant", "content": text or None})]
    for index, (call_id, name, arguments) in enumerate(calls):
        chunks.append(call_fragment(index, call_id=call_id, name=name))
        chunks += [call_fragment(index, p) for p in split(json.dumps(arguments), fragments)]
    chunks.append(chunk({}, finish))
    if usage is not None:
        chunks.append(usage_chunk(*usage))
    return StreamedReply(tuple(chunks))


def completion(
    text: str | None = None,
    calls: Sequence[tuple[str, str, Mapping[str, Any]]] = (),
    *,
    finish: str | None = None,
    usage: tuple[int, int] | None = DEFAULT_USAGE,
    model: str = "fake-model",
) -> JsonCompletion:
    """A whole `chat.completion`; the finish defaults to `tool_calls` with calls, else `stop`."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ]
    reason = finish or ("tool_calls" if calls else "stop")
    body = _envelope(model) | {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reason}],
        "usage": None if usage is None else usage_chunk(*usage)["usage"],
    }
    return JsonCompletion(body)


def http_error(
    status: int,
    message: str,
    type_: str = "invalid_request_error",
    *,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> HttpError:
    """An error answer in OpenAI's shape: `{"error": {"message", "type", "param", "code"}}`."""
    error = {"message": message, "type": type_, "param": None, "code": code}
    return HttpError(status, {"error": error}, dict(headers or {}))


def split(text: str, pieces: int) -> list[str]:
    """`text` in at most `pieces` consecutive parts of about equal length."""
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[at : at + size] for at in range(0, len(text), size)]


def _envelope(model: str) -> Chunk:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": model,
    }
