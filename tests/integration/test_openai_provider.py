"""The OpenAI-compatible provider against a loopback fake server: real HTTP, real SSE."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from adapters.providers.openai_chat import OpenAICompatProvider
from domain.agent.failover import Candidate, FailureKind
from domain.agent.finish import FinishReason
from domain.agent.replies import ModelFailure, ModelRequest, ToolSpec, Usage
from tests.fakes.openai_server import (
    CutStream,
    FakeServer,
    chunk,
    completion,
    http_error,
    serving,
    text_reply,
    tool_call_reply,
)

KEY = "sk-fake-server-0123456789"
CANDIDATE = Candidate("openai", "fake-model", "local")
REQUEST = ModelRequest(prefix="You are a test.")
READ = ToolSpec(name="read_file", description="Read a file.")
WITH_TOOLS = REQUEST.model_copy(update={"tools": (READ,)})
FALLBACK_NOTE = "streaming with tools failed ({}): asked again without streaming"
KNOWN_NOTE = "streaming with tools failed earlier for this model: asked without streaming"


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    """A fake server on a free loopback port."""
    with serving(models=("fake-model", "fake-large")) as server:
        yield server


@pytest.fixture
async def provider(fake: FakeServer) -> AsyncIterator[OpenAICompatProvider]:
    """A provider pointed at the fake server, closed after the test."""
    subject = OpenAICompatProvider(fake.base_url, lambda _: KEY, timeout=5.0)
    yield subject
    await subject.aclose()


async def failing(provider: OpenAICompatProvider, request: ModelRequest = REQUEST) -> ModelFailure:
    """The failure `provider` raises for `request`."""
    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, request)
    return caught.value


@pytest.mark.anyio
async def test_a_streamed_text_reply_arrives_in_pieces(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """Real SSE: the pieces join to the text; the request carries the key and the stream options."""
    fake.enqueue(text_reply("Hello from the fake.", usage=(20, 6)))
    pieces: list[str] = []

    reply = await provider.reply(CANDIDATE, REQUEST, pieces.append)

    assert (4, "Hello from the fake.", reply.text) == (
        len(pieces),
        "".join(pieces),
        "".join(pieces),
    )
    assert (FinishReason.STOP, Usage(input_tokens=20, output_tokens=6)) == (
        reply.finish,
        reply.usage,
    )
    [request] = fake.requests
    assert ("POST", "/v1/chat/completions") == (request.method, request.path)
    assert f"Bearer {KEY}" == request.headers["authorization"]
    assert (True, {"include_usage": True}) == (
        request.body["stream"],
        request.body["stream_options"],
    )


@pytest.mark.anyio
async def test_a_streamed_tool_call_is_assembled_from_its_fragments(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """Arguments split over several SSE events parse once the stream ended."""
    fake.enqueue(tool_call_reply([("c1", "read_file", {"path": "a.txt"})], fragments=4))

    reply = await provider.reply(CANDIDATE, WITH_TOOLS)

    assert [("c1", "read_file", {"path": "a.txt"})] == [
        (c.call_id, c.name, c.arguments) for c in reply.tool_calls
    ]
    assert ("tool_calls", FinishReason.TOOL_CALLS) == (reply.raw_finish, reply.finish)
    assert [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ] == fake.requests[0].body["tools"]


@pytest.mark.anyio
async def test_a_cut_stream_fails_as_a_lost_connection_after_its_text(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """The socket closes mid-body: the partial text was heard, but no reply is returned."""
    fake.enqueue(
        CutStream((chunk({"role": "assistant", "content": ""}), chunk({"content": "Half"})))
    )
    pieces: list[str] = []

    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, REQUEST, pieces.append)

    assert (FailureKind.TRANSIENT, ["Half"]) == (caught.value.kind, pieces)
    assert caught.value.message.startswith("the stream was cut")


@pytest.mark.anyio
async def test_a_server_refusing_streaming_with_tools_is_asked_again_without(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """A 400 about streaming: asked once more unstreamed; the next request goes so at once."""
    fake.refuse_streaming_with_tools = True
    fake.enqueue(completion(calls=[("c1", "read_file", {"path": "a"})]), completion("Done."))
    pieces: list[str] = []

    first = await provider.reply(CANDIDATE, WITH_TOOLS)
    second = await provider.reply(CANDIDATE, WITH_TOOLS, pieces.append)

    assert [True, False, False] == [bool(r.body.get("stream")) for r in fake.requests]
    assert [("c1", "read_file", {"path": "a"})] == [
        (c.call_id, c.name, c.arguments) for c in first.tool_calls
    ]
    assert (FinishReason.TOOL_CALLS, (FALLBACK_NOTE.format("HTTP 400"),)) == (
        first.finish,
        first.notes,
    )
    assert ("Done.", ["Done."], (KNOWN_NOTE,)) == (second.text, pieces, second.notes)


@pytest.mark.anyio
async def test_a_stream_with_tools_that_breaks_at_once_is_asked_again_without(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """The stream closes before any chunk: the same request, unstreamed, gives the reply."""
    fake.enqueue(CutStream(()), completion("Whole."))

    reply = await provider.reply(CANDIDATE, WITH_TOOLS)

    assert [True, False] == [bool(r.body.get("stream")) for r in fake.requests]
    assert "stream_options" not in fake.requests[1].body
    assert ("Whole.", (FALLBACK_NOTE.format("the stream broke before any reply"),)) == (
        reply.text,
        reply.notes,
    )


@pytest.mark.anyio
async def test_streaming_without_tools_is_not_retried_when_it_breaks(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """Without tools a broken stream is just a transient failure for failover."""
    fake.enqueue(CutStream(()))

    caught = await failing(provider)

    assert (FailureKind.TRANSIENT, 1) == (caught.kind, len(fake.requests))


@pytest.mark.anyio
async def test_a_refused_tool_choice_is_asked_again_without_it(fake: FakeServer) -> None:
    """A 400 about tool_choice: the same request once more, without the field."""
    fake.refuse_tool_choice = True
    fake.enqueue(text_reply("ok"))
    subject = OpenAICompatProvider(fake.base_url, lambda _: KEY, tool_choice="auto")

    reply = await subject.reply(CANDIDATE, WITH_TOOLS)
    await subject.aclose()

    assert ["auto", None] == [r.body.get("tool_choice") for r in fake.requests]
    assert ("ok", ("the server refused tool_choice=auto (HTTP 400): asked again without it",)) == (
        reply.text,
        reply.notes,
    )


@pytest.mark.anyio
async def test_a_rate_limit_over_http_carries_its_retry_after(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """A real 429 with a `retry-after` header: rate_limited, with the wait in seconds."""
    fake.enqueue(http_error(429, "Rate limit reached", "requests", headers={"retry-after": "3"}))

    caught = await failing(provider)

    assert (FailureKind.RATE_LIMITED, 429, 3.0) == (caught.kind, caught.status, caught.retry_after)
    assert "Rate limit reached (requests)" == caught.message


@pytest.mark.anyio
async def test_an_error_body_echoing_the_key_is_shown_without_it(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """The server repeats the Authorization header in its error; the failure does not."""
    fake.enqueue(http_error(401, f"invalid header Authorization: Bearer {KEY}"))

    caught = await failing(provider)

    assert FailureKind.AUTH == caught.kind
    assert KEY not in caught.message
    assert (
        "invalid header Authorization: Bearer [redacted] (invalid_request_error)" == caught.message
    )


@pytest.mark.anyio
async def test_an_empty_queue_answers_500_saying_so(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """A request the test did not script fails loudly as a server error."""
    caught = await failing(provider)

    assert 0 == fake.pending

    assert (FailureKind.TRANSIENT, 500) == (caught.kind, caught.status)
    assert "no response queued for request 1" in caught.message


@pytest.mark.anyio
async def test_a_refused_connection_is_transient() -> None:
    """Nothing listens on the port: the failure is transient, and names no key."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    subject = OpenAICompatProvider(f"http://127.0.0.1:{port}/v1", lambda _: KEY)

    caught = await failing(subject)
    await subject.aclose()

    assert (FailureKind.TRANSIENT, None) == (caught.kind, caught.status)
    assert caught.message.startswith("cannot reach the server")


@pytest.mark.anyio
async def test_a_server_slower_than_the_timeout_fails_as_transient(fake: FakeServer) -> None:
    """No chunk within the timeout: transient, and the message says how long was waited."""
    fake.enqueue(text_reply("too late", delay=2.0))
    subject = OpenAICompatProvider(fake.base_url, lambda _: KEY, timeout=0.3)

    caught = await failing(subject)
    await subject.aclose()

    assert (FailureKind.TRANSIENT, "the server sent nothing for 0.3 s") == (
        caught.kind,
        caught.message,
    )


@pytest.mark.anyio
async def test_cancelling_a_slow_stream_returns_promptly_and_closes_it(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """A cancelled reply stops at once; the server sees its client go."""
    fake.enqueue(text_reply("one two three four five six seven eight", delay=0.5))
    pieces: list[str] = []
    began = time.monotonic()

    with anyio.move_on_after(1.2) as scope:
        await provider.reply(CANDIDATE, REQUEST, pieces.append)

    assert scope.cancelled_caught
    assert time.monotonic() - began < 1.7
    assert "one two three four five six seven eight".startswith("".join(pieces))
    assert fake.wait_for_disconnect(3.0)


@pytest.mark.anyio
async def test_the_catalog_lists_the_fake_servers_models(
    fake: FakeServer, provider: OpenAICompatProvider
) -> None:
    """GET /v1/models over real HTTP gives the configured ids."""
    assert ["fake-model", "fake-large"] == await provider.catalog("local")
    assert ("GET", "/v1/models") == (fake.requests[0].method, fake.requests[0].path)
