"""The Anthropic provider over a mock transport: request translation, stream assembly, failures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable

import httpx2
import pytest

from adapters.config.credentials import CredentialMissingError
from adapters.providers.anthropic_messages import AnthropicProvider
from adapters.providers.anthropic_wire import message_params, request_parameters
from domain.agent.failover import Candidate, FailureKind
from domain.agent.finish import FinishReason
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest, ToolSpec, Usage
from domain.ids import CallId
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest

KEY = "sk-ant-unit-key-0123456789"
CANDIDATE = Candidate("anthropic", "claude-unit", "work")
REQUEST = ModelRequest(prefix="You are a test.", suffix="Today is Monday.")
Event = tuple[str, dict[str, object]]


@pytest.fixture
def anyio_backend() -> str:
    """The SDK runs on asyncio."""
    return "asyncio"


def event(kind: str, **fields: object) -> Event:
    """One SSE event whose data carries its own type, as Anthropic's do."""
    return kind, {"type": kind, **fields}


def start(usage: dict[str, int] | None = None) -> Event:
    """A `message_start` with the input side of the usage."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    return event("message_start", message=message | {"usage": usage or {"input_tokens": 10}})


def text_block(index: int, *pieces: str) -> list[Event]:
    """A text block streamed as `pieces`."""
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(
            event("content_block_delta", index=index, delta={"type": "text_delta", "text": p})
            for p in pieces
        ),
        event("content_block_stop", index=index),
    ]


def tool_block(index: int, call_id: str, name: str, *pieces: str) -> list[Event]:
    """A tool_use block whose input streams as `pieces` of JSON."""
    block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
    deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    return [
        event("content_block_start", index=index, content_block=block),
        *(event("content_block_delta", index=index, delta=d) for d in deltas),
        event("content_block_stop", index=index),
    ]


def end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[Event]:
    """`message_delta` with the stop reason and output usage, then `message_stop`."""
    delta = {"stop_reason": stop_reason, "stop_sequence": None}
    return [
        event("message_delta", delta=delta, usage={"output_tokens": output_tokens}),
        event("message_stop"),
    ]


def sse(events: list[Event]) -> bytes:
    """The events as an SSE body."""
    return b"".join(f"event: {k}\ndata: {json.dumps(d)}\n\n".encode() for k, d in events)


def streamed(events: list[Event]) -> httpx2.Response:
    """A 200 answer streaming `events`."""
    return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=sse(events))


def error_answer(
    status: int, kind: str, message: str, headers: dict[str, str] | None = None
) -> httpx2.Response:
    """An HTTP error in Anthropic's error shape."""
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx2.Response(status, json=body, headers=headers)


Handler = Callable[[httpx2.Request], httpx2.Response]


class Transport:
    """A mock transport that answers its responses in order and keeps every request."""

    def __init__(self, *answers: httpx2.Response | Handler) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []
        self.client = httpx2.AsyncClient(transport=httpx2.MockTransport(self._answer))

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer if isinstance(answer, httpx2.Response) else answer(request)

    def bodies(self) -> list[dict[str, object]]:
        """The JSON bodies sent, in order."""
        return [json.loads(r.content) for r in self.requests]


def provider_for(transport: Transport, base_url: str = "https://api.test") -> AnthropicProvider:
    """A provider asking through `transport` with the unit key."""
    return AnthropicProvider(base_url, lambda _profile: KEY, http_client=transport.client)


async def reply_to(
    *answers: httpx2.Response | Handler, on_text: Callable[[str], None] | None = None
) -> ModelReply:
    """The provider's reply when the server answers `answers`."""
    return await provider_for(Transport(*answers)).reply(CANDIDATE, REQUEST, on_text)


async def failure_of(*answers: httpx2.Response | Handler) -> ModelFailure:
    """The ModelFailure the provider raises when the server answers `answers`."""
    with pytest.raises(ModelFailure) as caught:
        await reply_to(*answers)
    return caught.value


@pytest.mark.anyio
async def test_the_request_carries_the_model_limit_and_system_blocks_with_one_breakpoint() -> None:
    """The prefix block holds the only cache breakpoint; the suffix follows it; tools have none."""
    transport = Transport(streamed([start(), *text_block(0, "ok"), *end()]))
    tool = ToolSpec(name="read_file", description="Read a file.", parameters={})
    request = REQUEST.model_copy(update={"tools": (tool,), "max_output_tokens": 321})

    await provider_for(transport).reply(CANDIDATE, request)

    body = transport.bodies()[0]
    assert ("claude-unit", 321, True) == (body["model"], body["max_tokens"], body["stream"])
    assert [
        {"type": "text", "text": "You are a test.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Today is Monday."},
    ] == body["system"]
    assert [
        {
            "name": "read_file",
            "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {}},
        }
    ] == body["tools"]
    assert "/v1/messages" == transport.requests[0].url.path


def test_an_empty_suffix_is_left_out_of_the_system_blocks() -> None:
    """Only the prefix block is sent when the suffix is empty; no tools means no tools key."""
    parameters = request_parameters(ModelRequest(prefix="Stable."))

    assert [
        {"type": "text", "text": "Stable.", "cache_control": {"type": "ephemeral"}}
    ] == parameters.system
    assert [] == parameters.tools


def test_tool_results_and_a_following_user_message_share_one_user_message() -> None:
    """Consecutive results join one user message in order, the user's text after them."""
    calls = (
        ToolCallRequest(call_id=CallId("toolu_1"), name="read_file", arguments={"path": "a"}),
        ToolCallRequest(call_id=CallId("toolu_2"), name="list_dir", arguments={}),
    )
    transcript = (
        ChatMessage(role=MessageRole.USER, content="Look at a."),
        ChatMessage(role=MessageRole.ASSISTANT, content="Reading.", tool_calls=calls),
        ChatMessage(role=MessageRole.TOOL, content="contents of a", call_id=CallId("toolu_1")),
        ChatMessage(role=MessageRole.TOOL, content="", call_id=CallId("toolu_2")),
        ChatMessage(role=MessageRole.USER, content="Now b."),
    )

    assert [
        {"role": "user", "content": [{"type": "text", "text": "Look at a."}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}},
                {"type": "tool_use", "id": "toolu_2", "name": "list_dir", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "contents of a"},
                {"type": "tool_result", "tool_use_id": "toolu_2"},
                {"type": "text", "text": "Now b."},
            ],
        },
    ] == message_params(transcript)


def test_an_assistant_message_without_text_or_calls_is_dropped() -> None:
    """An empty assistant turn is left out and the user turns around it join into one."""
    transcript = (
        ChatMessage(role=MessageRole.USER, content="Hello?"),
        ChatMessage(role=MessageRole.ASSISTANT, content="  "),
        ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
        ChatMessage(role=MessageRole.USER, content="Anyone?"),
    )

    assert [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Hello?"},
                {"type": "text", "text": "Be brief."},
                {"type": "text", "text": "Anyone?"},
            ],
        }
    ] == message_params(transcript)


def test_an_assistant_message_with_calls_and_no_text_has_only_tool_use_blocks() -> None:
    """No empty text block precedes the calls."""
    call = ToolCallRequest(call_id=CallId("toolu_9"), name="now", arguments={})
    transcript = (ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=(call,)),)

    assert [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_9", "name": "now", "input": {}}],
        }
    ] == message_params(transcript)


@pytest.mark.anyio
async def test_text_deltas_stream_to_on_text_and_join_to_the_reply() -> None:
    """Each text_delta reaches on_text as it comes; the reply's text is their join."""
    pieces: list[str] = []
    answer = streamed([start(), event("ping"), *text_block(0, "Hel", "lo", " there"), *end()])

    reply = await reply_to(answer, on_text=pieces.append)

    assert ["Hel", "lo", " there"] == pieces
    assert ("Hello there", "end_turn", FinishReason.STOP) == (
        reply.text,
        reply.raw_finish,
        reply.finish,
    )


@pytest.mark.anyio
async def test_tool_inputs_are_joined_per_block_and_parsed_at_the_end() -> None:
    """Pieces of partial_json join per block index; an empty input means no arguments."""
    events = [
        start(),
        *text_block(0, "Reading."),
        *tool_block(1, "toolu_1", "read_file", '{"pa', 'th": "a', '.txt"}'),
        *tool_block(2, "toolu_2", "now", ""),
        *end("tool_use"),
    ]

    reply = await reply_to(streamed(events))

    assert [("toolu_1", "read_file", {"path": "a.txt"}), ("toolu_2", "now", {})] == [
        (c.call_id, c.name, c.arguments) for c in reply.tool_calls
    ]
    assert (FinishReason.TOOL_CALLS, ()) == (reply.finish, reply.notes)


@pytest.mark.anyio
async def test_pings_thinking_blocks_and_unknown_events_are_passed_over() -> None:
    """Only text and tool_use blocks make the reply; anything else changes nothing."""
    thinking = {"type": "thinking", "thinking": ""}
    events = [
        start(),
        event("ping"),
        event("content_block_start", index=0, content_block=thinking),
        event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "hm"}),
        event("content_block_delta", index=0, delta={"type": "signature_delta", "signature": "x"}),
        event("content_block_stop", index=0),
        event("content_block_start", index=1, content_block={"type": "shiny_block", "x": 1}),
        event("content_block_delta", index=1, delta={"type": "shiny_delta", "text": "no"}),
        event("brand_new_event", index=1),
        *text_block(2, "Answer."),
        *end(),
    ]

    reply = await reply_to(streamed(events))

    assert ("Answer.", (), FinishReason.STOP) == (reply.text, reply.tool_calls, reply.finish)


@pytest.mark.anyio
@pytest.mark.parametrize("bad_input", ['{"path": "a', "[1, 2]", '{"n": NaN}'])
async def test_a_tool_input_that_is_not_a_json_object_breaks_the_reply(bad_input: str) -> None:
    """The call gets no arguments, the finish is broken, the raw reason stays, a note says so."""
    events = [start(), *tool_block(0, "toolu_1", "write_file", bad_input), *end("tool_use")]

    reply = await reply_to(streamed(events))

    assert [("toolu_1", {})] == [(c.call_id, c.arguments) for c in reply.tool_calls]
    assert (FinishReason.BROKEN, "tool_use") == (reply.finish, reply.raw_finish)
    assert 1 == len(reply.notes)
    assert "toolu_1" in reply.notes[0]


@pytest.mark.anyio
async def test_a_whole_input_in_the_start_block_is_taken_when_no_delta_comes() -> None:
    """A server that replays a whole tool_use in its start block still gives the arguments."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "b"}}
    events = [
        start(),
        event("content_block_start", index=0, content_block=block),
        event("content_block_stop", index=0),
        *end("tool_use"),
    ]

    reply = await reply_to(streamed(events))

    assert [{"path": "b"}] == [c.arguments for c in reply.tool_calls]


@pytest.mark.anyio
async def test_a_tool_call_with_an_unusable_id_is_dropped_and_breaks_the_reply() -> None:
    """An id the transcript could not store never becomes a call; the reply cannot run."""
    events = [start(), *tool_block(0, "bad id!", "read_file", "{}"), *end("tool_use")]

    reply = await reply_to(streamed(events))

    assert ((), FinishReason.BROKEN) == (reply.tool_calls, reply.finish)
    assert 1 == len(reply.notes)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("end_turn", FinishReason.STOP),
        ("stop_sequence", FinishReason.STOP),
        ("max_tokens", FinishReason.LENGTH),
        ("refusal", FinishReason.CONTENT_FILTER),
        ("pause_turn", FinishReason.STOP),
    ],
)
async def test_stop_reasons_are_normalised_and_kept_raw(raw: str, expected: FinishReason) -> None:
    """Anthropic's stop reasons map onto the shared finish reasons; the raw one is kept."""
    reply = await reply_to(streamed([start(), *text_block(0, "x"), *end(raw)]))

    assert (raw, expected) == (reply.raw_finish, reply.finish)


@pytest.mark.anyio
async def test_a_tool_turn_cut_by_max_tokens_is_a_length_finish() -> None:
    """Calls of a reply cut by its token limit come back but the finish says length."""
    events = [start(), *tool_block(0, "toolu_1", "read_file", '{"path": "a"}'), *end("max_tokens")]

    reply = await reply_to(streamed(events))

    assert (FinishReason.LENGTH, 1) == (reply.finish, len(reply.tool_calls))


@pytest.mark.anyio
async def test_usage_reports_input_output_and_cache_tokens() -> None:
    """Input (the cached parts added in) and cache counts from message_start, output later."""
    usage = {
        "input_tokens": 40,
        "output_tokens": 1,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 200,
    }

    reply = await reply_to(streamed([start(usage), *text_block(0, "x"), *end(output_tokens=17)]))

    assert (
        Usage(input_tokens=3240, output_tokens=17, cache_read_tokens=3000, cache_write_tokens=200)
        == reply.usage
    )


@pytest.mark.anyio
async def test_a_stream_that_ends_before_message_stop_is_a_transient_failure() -> None:
    """A body that ends cleanly but early is a lost connection, never a reply."""
    failure = await failure_of(streamed([start(), *text_block(0, "Half an ans")]))

    assert (FailureKind.TRANSIENT, None) == (failure.kind, failure.status)
    assert "message_stop" in failure.message


@pytest.mark.anyio
async def test_a_connection_dropped_mid_stream_is_a_transient_failure() -> None:
    """A read error after some events fails the reply as transient."""

    async def body() -> AsyncIterator[bytes]:
        yield sse([start(), *text_block(0, "Half")])
        raise httpx2.ReadError("connection reset by peer")

    answer = httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    assert FailureKind.TRANSIENT == (await failure_of(answer)).kind


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("kind", "expected", "status"),
    [
        ("overloaded_error", FailureKind.TRANSIENT, 529),
        ("api_error", FailureKind.TRANSIENT, 500),
        ("rate_limit_error", FailureKind.RATE_LIMITED, 429),
        ("invalid_request_error", FailureKind.BAD_REQUEST, 400),
    ],
)
async def test_an_error_event_inside_the_stream_is_classified_by_its_type(
    kind: str, expected: FailureKind, status: int
) -> None:
    """An `error` event fails the reply as the HTTP status of that error type would."""
    error = event("error", error={"type": kind, "message": "Overloaded"})

    failure = await failure_of(streamed([start(), *text_block(0, "Par"), error]))

    assert (expected, status) == (failure.kind, failure.status)
    assert kind in failure.message


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "kind", "message", "expected"),
    [
        (401, "authentication_error", "invalid x-api-key", FailureKind.AUTH),
        (403, "permission_error", "not allowed", FailureKind.AUTH),
        (429, "rate_limit_error", "too many requests", FailureKind.RATE_LIMITED),
        (500, "api_error", "Internal server error", FailureKind.TRANSIENT),
        (529, "overloaded_error", "Overloaded", FailureKind.TRANSIENT),
        (
            400,
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
            FailureKind.CONTEXT_OVERFLOW,
        ),
        (
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API.",
            FailureKind.BILLING,
        ),
        (400, "invalid_request_error", "messages: field required", FailureKind.BAD_REQUEST),
    ],
)
async def test_http_errors_are_classified_from_status_and_message(
    status: int, kind: str, message: str, expected: FailureKind
) -> None:
    """Each HTTP error maps onto the failover classes, with its status and words."""
    failure = await failure_of(error_answer(status, kind, message))

    assert (expected, status) == (failure.kind, failure.status)
    assert message in failure.message


@pytest.mark.anyio
async def test_a_rate_limit_is_asked_once_and_carries_its_retry_after() -> None:
    """The SDK does not retry (failover does); the retry-after header is passed on."""
    transport = Transport(
        error_answer(429, "rate_limit_error", "slow down", {"retry-after": "7"}),
        streamed([start(), *text_block(0, "never"), *end()]),
    )

    with pytest.raises(ModelFailure) as caught:
        await provider_for(transport).reply(CANDIDATE, REQUEST)

    assert (FailureKind.RATE_LIMITED, 7.0) == (caught.value.kind, caught.value.retry_after)
    assert 1 == len(transport.requests)


@pytest.mark.anyio
async def test_an_error_body_that_is_not_json_still_classifies_by_status() -> None:
    """A proxy's HTML 502 is transient and its text is kept short."""
    answer = httpx2.Response(502, text="<html>" + "bad gateway " * 100 + "</html>")

    failure = await failure_of(answer)

    assert (FailureKind.TRANSIENT, 502) == (failure.kind, failure.status)
    assert len(failure.message) <= 500


@pytest.mark.anyio
@pytest.mark.parametrize(
    "error", [httpx2.ReadTimeout("timed out"), httpx2.ConnectError("connection refused")]
)
async def test_timeouts_and_refused_connections_are_transient(error: Exception) -> None:
    """Neither reaches the server's words, both are worth asking again."""

    def fail(_request: httpx2.Request) -> httpx2.Response:
        raise error

    failure = await failure_of(fail)

    assert (FailureKind.TRANSIENT, None) == (failure.kind, failure.status)


@pytest.mark.anyio
async def test_the_api_key_never_appears_in_a_failure() -> None:
    """A server that echoes the key in its error gets it redacted from the failure."""
    failure = await failure_of(error_answer(401, "authentication_error", f"bad key {KEY}"))

    assert KEY not in failure.message
    assert KEY not in str(failure)
    assert "[redacted]" in failure.message
    assert failure.__cause__ is None


@pytest.mark.anyio
async def test_a_missing_credential_is_an_auth_failure_naming_the_profile() -> None:
    """Nothing is sent when the profile has no key."""
    transport = Transport()

    def no_key(_profile: str) -> str:
        raise CredentialMissingError("ANTHROPIC_API_KEY is unset")

    provider = AnthropicProvider(None, no_key, http_client=transport.client)
    with pytest.raises(ModelFailure) as caught:
        await provider.reply(CANDIDATE, REQUEST)

    assert (FailureKind.AUTH, "credential profile work: ANTHROPIC_API_KEY is unset") == (
        caught.value.kind,
        caught.value.message,
    )
    assert [] == transport.requests


@pytest.mark.anyio
async def test_one_client_per_profile_is_made_once_and_reused() -> None:
    """The key is looked up once per profile and sent with each of its requests."""
    answers = [streamed([start(), *text_block(0, "x"), *end()]) for _ in range(3)]
    transport = Transport(*answers)
    asked: list[str] = []

    def key_for(profile: str) -> str:
        asked.append(profile)
        return f"sk-ant-{profile}-0123456789"

    provider = AnthropicProvider(None, key_for, http_client=transport.client)
    other = Candidate("anthropic", "claude-unit", "spare")
    for candidate in (CANDIDATE, CANDIDATE, other):
        await provider.reply(candidate, REQUEST)

    assert ["work", "spare"] == asked
    assert [
        "Bearer sk-ant-work-0123456789",
        "Bearer sk-ant-work-0123456789",
        "Bearer sk-ant-spare-0123456789",
    ] == [r.headers["authorization"] for r in transport.requests]
    assert "api.anthropic.com" == transport.requests[0].url.host


@pytest.mark.anyio
async def test_a_base_url_ending_in_v1_is_not_doubled() -> None:
    """`https://host/v1` asks `/v1/messages`, as the SDK adds `/v1` itself."""
    transport = Transport(streamed([start(), *text_block(0, "x"), *end()]))

    await provider_for(transport, "https://proxy.test/v1/").reply(CANDIDATE, REQUEST)

    assert "/v1/messages" == transport.requests[0].url.path


@pytest.mark.anyio
async def test_the_catalog_lists_the_model_ids_of_get_models() -> None:
    """The ids come in the server's order."""
    page = {
        "data": [
            {"type": "model", "id": "claude-a", "display_name": "A", "created_at": "2026-01-01"},
            {"type": "model", "id": "claude-b", "display_name": "B", "created_at": "2026-01-02"},
        ],
        "has_more": False,
        "first_id": "claude-a",
        "last_id": "claude-b",
    }
    transport = Transport(httpx2.Response(200, json=page))

    ids = await provider_for(transport).catalog("work")

    assert ["claude-a", "claude-b"] == ids
    assert "/v1/models" == transport.requests[0].url.path


@pytest.mark.anyio
async def test_a_catalog_refused_is_a_classified_failure() -> None:
    """A 401 on GET /v1/models fails as auth for that profile."""
    transport = Transport(error_answer(401, "authentication_error", "invalid x-api-key"))

    with pytest.raises(ModelFailure) as caught:
        await provider_for(transport).catalog("work")

    assert (FailureKind.AUTH, "work") == (caught.value.kind, caught.value.candidate.profile)


@pytest.mark.anyio
async def test_aclose_leaves_an_injected_http_client_open() -> None:
    """The caller that passed the HTTP client closes it."""
    transport = Transport(streamed([start(), *text_block(0, "x"), *end()]))
    provider = provider_for(transport)
    await provider.reply(CANDIDATE, REQUEST)

    await provider.aclose()

    assert not transport.client.is_closed
    await transport.client.aclose()
