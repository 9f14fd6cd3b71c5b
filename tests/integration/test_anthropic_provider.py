"""The Anthropic provider against a loopback fake of the Messages API: real HTTP, real SSE."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import anyio
import pytest

from adapters.providers.anthropic_messages import AnthropicProvider
from domain.agent.failover import Candidate, FailureKind
from domain.agent.finish import FinishReason
from domain.agent.replies import ModelFailure, ModelRequest, ToolSpec, Usage
from domain.ids import CallId
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from tests.fakes.anthropic_server import (
    FakeAnthropicServer,
    cut_stream,
    http_error,
    serving,
    stream_error,
    text_message,
    tool_use_message,
)

KEY = "sk-ant-fake-key-0123456789"
CANDIDATE = Candidate("anthropic", "claude-test", "default")
REQUEST = ModelRequest(prefix="You are a test.", suffix="It is 09:00.")


@pytest.fixture
def fake() -> Iterator[FakeAnthropicServer]:
    """A running fake that wants the test key."""
    with serving(models=("claude-a", "claude-b"), api_key=KEY) as server:
        yield server


async def ask(fake: FakeAnthropicServer, request: ModelRequest = REQUEST) -> ModelFailure:
    """The failure of one request to `fake`."""
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)
    try:
        with pytest.raises(ModelFailure) as caught:
            await provider.reply(CANDIDATE, request)
    finally:
        await provider.aclose()
    return caught.value


@pytest.mark.anyio
async def test_a_text_reply_streams_and_the_request_is_recorded(
    fake: FakeAnthropicServer,
) -> None:
    """Text arrives word by word; the fake saw the system blocks, the key and the model."""
    fake.enqueue(text_message("Hello from the fake."))
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)
    pieces: list[str] = []

    reply = await provider.reply(CANDIDATE, REQUEST, pieces.append)
    await provider.aclose()

    assert ["Hello ", "from ", "the ", "fake."] == pieces
    assert ("Hello from the fake.", FinishReason.STOP) == (reply.text, reply.finish)
    assert (
        Usage(input_tokens=1225, output_tokens=7, cache_read_tokens=0, cache_write_tokens=1200)
        == reply.usage
    )
    [recorded] = fake.requests
    assert ("POST", "/v1/messages", f"Bearer {KEY}") == (
        recorded.method,
        recorded.path,
        recorded.headers["authorization"],
    )
    assert recorded.body is not None
    assert ("claude-test", True) == (recorded.body["model"], recorded.body["stream"])
    assert [
        {"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "It is 09:00."},
    ] == recorded.body["system"]


@pytest.mark.anyio
async def test_a_tool_use_reply_joins_its_split_input(fake: FakeAnthropicServer) -> None:
    """The input streamed in several pieces parses into the call's arguments."""
    fake.enqueue(
        tool_use_message(
            [("toolu_1", "read_file", {"path": "a.txt", "lines": [1, 20]}), ("toolu_2", "now", {})],
            text="Reading.",
        )
    )
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)

    reply = await provider.reply(CANDIDATE, REQUEST)
    await provider.aclose()

    assert ("Reading.", "tool_use", FinishReason.TOOL_CALLS) == (
        reply.text,
        reply.raw_finish,
        reply.finish,
    )
    assert [
        ("toolu_1", "read_file", {"path": "a.txt", "lines": [1, 20]}),
        ("toolu_2", "now", {}),
    ] == [(c.call_id, c.name, c.arguments) for c in reply.tool_calls]


@pytest.mark.anyio
async def test_a_tool_input_cut_mid_string_breaks_the_reply(fake: FakeAnthropicServer) -> None:
    """Unparseable input: no arguments, a broken finish, the raw reason kept, a note."""
    fake.enqueue(tool_use_message([("toolu_1", "write_file", '{"path": "a.t')]))
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)

    reply = await provider.reply(CANDIDATE, REQUEST)
    await provider.aclose()

    assert ({}, FinishReason.BROKEN, "tool_use") == (
        reply.tool_calls[0].arguments,
        reply.finish,
        reply.raw_finish,
    )
    assert 1 == len(reply.notes)


@pytest.mark.anyio
async def test_a_whole_turn_goes_out_as_anthropic_wants_it(fake: FakeAnthropicServer) -> None:
    """Calls, their merged results and the next user text reach the server in order."""
    fake.enqueue(text_message("Done."))
    call = ToolCallRequest(call_id=CallId("toolu_1"), name="read_file", arguments={"path": "a"})
    request = REQUEST.model_copy(
        update={
            "messages": (
                ChatMessage(role=MessageRole.USER, content="Read a."),
                ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=(call,)),
                ChatMessage(role=MessageRole.TOOL, content="alpha", call_id=CallId("toolu_1")),
                ChatMessage(role=MessageRole.USER, content="Thanks."),
            ),
            "tools": (ToolSpec(name="read_file", description="Read.", parameters={}),),
        }
    )
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)

    await provider.reply(CANDIDATE, request)
    await provider.aclose()

    body = fake.requests[0].body
    assert body is not None
    assert [
        {"role": "user", "content": [{"type": "text", "text": "Read a."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "alpha"},
                {"type": "text", "text": "Thanks."},
            ],
        },
    ] == body["messages"]
    assert [
        {
            "name": "read_file",
            "description": "Read.",
            "input_schema": {"type": "object", "properties": {}},
        }
    ] == body["tools"]


@pytest.mark.anyio
async def test_a_stream_cut_before_message_stop_is_transient(fake: FakeAnthropicServer) -> None:
    """The socket closed mid-body fails the reply as a lost connection."""
    fake.enqueue(cut_stream(text_message("Half of an answer")))

    failure = await ask(fake)

    assert (FailureKind.TRANSIENT, None) == (failure.kind, failure.status)


@pytest.mark.anyio
async def test_an_overloaded_error_event_is_transient_as_a_529(fake: FakeAnthropicServer) -> None:
    """An `error` event inside a 200 stream classifies as its HTTP status would."""
    fake.enqueue(stream_error("overloaded_error", "Overloaded"))

    failure = await ask(fake)

    assert (FailureKind.TRANSIENT, 529) == (failure.kind, failure.status)
    assert "Overloaded" in failure.message


@pytest.mark.anyio
async def test_a_rate_limit_carries_the_retry_after_header(fake: FakeAnthropicServer) -> None:
    """A 429 is rate_limited with the server's retry-after, asked only once."""
    fake.enqueue(http_error(429, "Number of requests exceeded", headers={"retry-after": "3"}))

    failure = await ask(fake)

    assert (FailureKind.RATE_LIMITED, 429, 3.0) == (
        failure.kind,
        failure.status,
        failure.retry_after,
    )
    assert 1 == len(fake.requests)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "message", "expected"),
    [
        (400, "prompt is too long: 210000 tokens > 200000 maximum", FailureKind.CONTEXT_OVERFLOW),
        (400, "Your credit balance is too low to access the API.", FailureKind.BILLING),
        (529, "Overloaded", FailureKind.TRANSIENT),
    ],
)
async def test_http_errors_classify_from_the_fake(
    fake: FakeAnthropicServer, status: int, message: str, expected: FailureKind
) -> None:
    """Anthropic's error shape, over real HTTP, classifies by status and wording."""
    fake.enqueue(http_error(status, message))

    failure = await ask(fake)

    assert (expected, status) == (failure.kind, failure.status)
    assert 1 == len(fake.requests)


@pytest.mark.anyio
async def test_a_wrong_key_is_auth_and_never_shown(fake: FakeAnthropicServer) -> None:
    """The fake refuses another key with 401; the failure names neither key."""
    wrong = "sk-ant-wrong-key-9876543210"
    provider = AnthropicProvider(fake.base_url, lambda _profile: wrong)

    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, REQUEST)
    await provider.aclose()

    assert (FailureKind.AUTH, 401) == (caught.value.kind, caught.value.status)
    assert wrong not in str(caught.value)


@pytest.mark.anyio
async def test_an_error_that_echoes_the_key_is_redacted(fake: FakeAnthropicServer) -> None:
    """A server message holding the key reaches the failure with the key replaced."""
    fake.enqueue(http_error(401, f"key {KEY} is revoked"))

    failure = await ask(fake)

    assert KEY not in failure.message
    assert "key [redacted] is revoked" in failure.message


@pytest.mark.anyio
async def test_an_empty_queue_answers_500_with_a_clear_message(fake: FakeAnthropicServer) -> None:
    """A test that queued too little sees why, as a transient failure."""
    failure = await ask(fake)

    assert (FailureKind.TRANSIENT, 500) == (failure.kind, failure.status)
    assert "no response queued" in failure.message


@pytest.mark.anyio
async def test_the_catalog_lists_the_fakes_models(fake: FakeAnthropicServer) -> None:
    """GET /v1/models gives the configured ids."""
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)

    ids = await provider.catalog("default")
    await provider.aclose()

    assert ["claude-a", "claude-b"] == ids
    assert "/v1/models" == fake.requests[0].path.split("?")[0]


@pytest.mark.anyio
async def test_cancelling_a_slow_stream_stops_it_promptly(fake: FakeAnthropicServer) -> None:
    """A reply cancelled mid-stream returns at once and the next request still works."""
    fake.enqueue(text_message("one two three four five", delay=2.0), text_message("after"))
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY)
    began = time.monotonic()

    with anyio.move_on_after(0.3) as scope:
        await provider.reply(CANDIDATE, REQUEST)
    took = time.monotonic() - began
    reply = await provider.reply(CANDIDATE, REQUEST)
    await provider.aclose()

    assert scope.cancelled_caught
    assert took < 1.0
    assert "after" == reply.text


@pytest.mark.anyio
async def test_a_stream_slower_than_the_timeout_is_transient(fake: FakeAnthropicServer) -> None:
    """The read timeout bounds the wait between events."""
    fake.enqueue(text_message("late", delay=2.0))
    provider = AnthropicProvider(fake.base_url, lambda _profile: KEY, timeout=0.3)
    began = time.monotonic()

    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, REQUEST)
    await provider.aclose()

    assert FailureKind.TRANSIENT == caught.value.kind
    assert "timed out" in caught.value.message
    assert time.monotonic() - began < 1.5


@pytest.mark.anyio
async def test_a_refused_connection_is_transient() -> None:
    """Nothing listening at the address fails as transient, naming no key."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = AnthropicProvider(f"http://127.0.0.1:{port}", lambda _profile: KEY)

    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, REQUEST)
    await provider.aclose()

    assert (FailureKind.TRANSIENT, None) == (caught.value.kind, caught.value.status)
    assert KEY not in str(caught.value)
