"""The OpenAI-compatible provider over a mock transport: requests, stream assembly, failures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

import httpx2
import pytest

from adapters.config.credentials import CredentialMissingError
from adapters.providers.openai_chat import OpenAICompatProvider
from adapters.providers.openai_stream import StreamAssembler
from domain.agent.failover import Candidate, FailureKind
from domain.agent.finish import FinishReason
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest, ToolSpec, Usage
from domain.ids import CallId
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from tests.fakes.openai_server import (
    HttpError,
    call_fragment,
    chunk,
    completion,
    http_error,
    text_reply,
    tool_call_reply,
    usage_chunk,
)

KEY = "sk-unit-openai-0123456789"
CANDIDATE = Candidate("openai", "gpt-unit", "work")
REQUEST = ModelRequest(prefix="You are a test.", suffix="Today is Monday.")
READ = ToolSpec(
    name="read_file",
    description="Read a file.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)
WITH_TOOLS = REQUEST.model_copy(update={"tools": (READ,)})
Handler = Callable[[httpx2.Request], httpx2.Response]


@pytest.fixture
def anyio_backend() -> str:
    """The SDK runs on asyncio."""
    return "asyncio"


def sse(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> bytes:
    """The chunks as an SSE body, ended by `[DONE]` unless told not to."""
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def streamed(chunks: Iterable[dict[str, Any]], *, done: bool = True) -> httpx2.Response:
    """A 200 answer streaming `chunks`."""
    headers = {"content-type": "text/event-stream"}
    return httpx2.Response(200, content=sse(chunks, done=done), headers=headers)


def error(status: int, body: object, headers: dict[str, str] | None = None) -> httpx2.Response:
    """An error answer with a JSON body."""
    return httpx2.Response(status, json=body, headers=headers)


class Recorder:
    """A mock transport's handler: answers from a list and keeps every request."""

    def __init__(self, *answers: httpx2.Response | Handler) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """The next answer, after recording `request`."""
        self.requests.append(request)
        answer = self.answers.pop(0)
        return answer if isinstance(answer, httpx2.Response) else answer(request)

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON body of every request, in order."""
        return [json.loads(r.content) for r in self.requests]


def provider(recorder: Recorder, **options: Any) -> OpenAICompatProvider:
    """A provider whose HTTP goes to `recorder`."""
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(recorder))
    return OpenAICompatProvider("http://mock.test/v1", lambda _: KEY, http_client=client, **options)


async def ask(
    *answers: httpx2.Response | Handler, request: ModelRequest = REQUEST, **options: Any
) -> tuple[ModelReply, Recorder]:
    """The reply to `request` when the server answers `answers` in turn."""
    recorder = Recorder(*answers)
    return await provider(recorder, **options).reply(CANDIDATE, request), recorder


async def failure(
    *answers: httpx2.Response | Handler, request: ModelRequest = REQUEST
) -> ModelFailure:
    """The failure raised when the server answers `answers` in turn."""
    with pytest.raises(ModelFailure) as caught:
        await ask(*answers, request=request)
    return caught.value


def calls(reply: ModelReply) -> list[tuple[str, str, object]]:
    """A reply's calls as (id, name, arguments)."""
    return [(c.call_id, c.name, c.arguments) for c in reply.tool_calls]


# -- request building ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_request_streams_with_usage_and_joins_the_system_prompt() -> None:
    """Prefix and suffix make one system message; usage is asked for; no tools, no tool_choice."""
    _, recorder = await ask(streamed(text_reply("Hi").chunks))

    body = recorder.bodies()[0]
    assert "http://mock.test/v1/chat/completions" == str(recorder.requests[0].url)
    assert f"Bearer {KEY}" == recorder.requests[0].headers["authorization"]
    assert {
        "model": "gpt-unit",
        "messages": [{"role": "system", "content": "You are a test.\n\nToday is Monday."}],
        "max_tokens": 4096,
        "stream": True,
        "stream_options": {"include_usage": True},
    } == body


@pytest.mark.anyio
async def test_a_prefix_without_suffix_is_the_whole_system_message() -> None:
    """No blank line is added when the volatile suffix is empty."""
    request = ModelRequest(prefix="Only the prefix.")

    _, recorder = await ask(streamed(text_reply("Hi").chunks), request=request)

    assert [{"role": "system", "content": "Only the prefix."}] == recorder.bodies()[0]["messages"]


@pytest.mark.anyio
async def test_the_transcript_and_tools_are_sent_in_openai_shapes() -> None:
    """Assistant calls carry JSON-text arguments, tool results their call id, tools a schema."""
    call = ToolCallRequest(call_id=CallId("c1"), name="read_file", arguments={"path": "a.txt"})
    request = WITH_TOOLS.model_copy(
        update={
            "messages": (
                ChatMessage(role=MessageRole.USER, content="Read a.txt"),
                ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=(call,)),
                ChatMessage(role=MessageRole.TOOL, content="ten lines", call_id=CallId("c1")),
                ChatMessage(role=MessageRole.ASSISTANT, content="It has ten lines."),
            ),
            "tools": (READ, ToolSpec(name="now", description="The time.")),
        }
    )

    _, recorder = await ask(streamed(text_reply("ok").chunks), request=request)

    body = recorder.bodies()[0]
    assert [
        {"role": "user", "content": "Read a.txt"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ten lines"},
        {"role": "assistant", "content": "It has ten lines."},
    ] == body["messages"][1:]
    assert [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file.",
                "parameters": READ.parameters,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "now",
                "description": "The time.",
                "parameters": {"type": "object", "properties": {}},
            },
        },
    ] == body["tools"]
    assert "tool_choice" not in body


@pytest.mark.anyio
async def test_tool_choice_is_sent_only_when_asked_for_and_tools_are_offered() -> None:
    """A provider made with tool_choice="auto" sends it with tools, never without."""
    _, with_tools = await ask(
        streamed(text_reply("a").chunks), request=WITH_TOOLS, tool_choice="auto"
    )
    _, without = await ask(streamed(text_reply("b").chunks), tool_choice="auto")

    assert "auto" == with_tools.bodies()[0]["tool_choice"]
    assert "tool_choice" not in without.bodies()[0]


@pytest.mark.anyio
async def test_the_sdk_never_retries_on_its_own() -> None:
    """A 500 is asked once: failover, not the SDK, decides on another try."""
    recorder = Recorder(error(500, {"error": {"message": "boom"}}), error(500, {}), error(500, {}))

    with pytest.raises(ModelFailure) as caught:
        await provider(recorder).reply(CANDIDATE, REQUEST)

    assert (FailureKind.TRANSIENT, 1) == (caught.value.kind, len(recorder.requests))


# -- stream assembly -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_text_pieces_go_to_on_text_as_they_come_and_join_to_the_reply() -> None:
    """Each content delta is heard once; usage comes from the usage chunk."""
    recorder = Recorder(streamed(text_reply("The file has ten lines.").chunks))
    pieces: list[str] = []

    reply = await provider(recorder).reply(CANDIDATE, REQUEST, pieces.append)

    assert ["The ", "file ", "has ", "ten ", "lines."] == pieces
    assert ("The file has ten lines.", "stop", FinishReason.STOP) == (
        reply.text,
        reply.raw_finish,
        reply.finish,
    )
    assert Usage(input_tokens=12, output_tokens=5) == reply.usage
    assert () == reply.notes


@pytest.mark.anyio
async def test_tool_call_fragments_are_assembled_by_index() -> None:
    """Interleaved fragments of two calls: id and name from each first one, arguments joined."""
    chunks = [
        chunk({"role": "assistant"}),
        call_fragment(0, '{"pa', call_id="c1", name="read_file"),
        call_fragment(1, call_id="c2", name="now"),
        call_fragment(0, 'th": "a'),
        call_fragment(1, "{}"),
        call_fragment(0, '.txt"}'),
        chunk({}, "tool_calls"),
        usage_chunk(),
    ]

    reply, _ = await ask(streamed(chunks), request=WITH_TOOLS)

    assert [("c1", "read_file", {"path": "a.txt"}), ("c2", "now", {})] == calls(reply)
    assert (FinishReason.TOOL_CALLS, ()) == (reply.finish, reply.notes)


@pytest.mark.anyio
async def test_a_new_id_on_every_fragment_keeps_the_first() -> None:
    """Quirk: every fragment of one index names a new id; the call keeps its first and says so."""
    chunks = [
        call_fragment(0, '{"path":', call_id="first", name="read_file"),
        call_fragment(0, ' "a"', call_id="second"),
        call_fragment(0, "}", call_id="third"),
        chunk({}, "tool_calls"),
    ]

    reply, _ = await ask(streamed(chunks), request=WITH_TOOLS)

    assert [("first", "read_file", {"path": "a"})] == calls(reply)
    assert FinishReason.TOOL_CALLS == reply.finish
    assert (
        "the server sent a new id on a later fragment of a call: kept the first",
    ) == reply.notes


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        pytest.param(
            [usage_chunk(30, 4, cached=24)],
            Usage(input_tokens=30, output_tokens=4, cache_read_tokens=24),
            id="choices-empty",
        ),
        pytest.param(
            [usage_chunk(30, 4, null_choices=True)],
            Usage(input_tokens=30, output_tokens=4),
            id="choices-null-vllm",
        ),
        pytest.param([], None, id="no-usage-chunk"),
    ],
)
@pytest.mark.anyio
async def test_usage_is_read_from_whatever_usage_chunk_comes(
    tail: list[dict[str, Any]], expected: Usage | None
) -> None:
    """`choices: []`, `choices: null` or no usage chunk at all; cached tokens are cache reads."""
    reply, _ = await ask(streamed([*text_reply("Hi", usage=None).chunks, *tail]))

    assert ("Hi", FinishReason.STOP, expected) == (reply.text, reply.finish, reply.usage)


@pytest.mark.anyio
async def test_stop_with_tool_calls_is_a_tool_turn_that_keeps_its_raw_reason() -> None:
    """Quirk: a server says `stop` on a turn with calls; it is normalised, the raw kept."""
    reply, _ = await ask(
        streamed(tool_call_reply([("c1", "read_file", {"path": "a"})], finish="stop").chunks),
        request=WITH_TOOLS,
    )

    assert ("stop", FinishReason.TOOL_CALLS) == (reply.raw_finish, reply.finish)
    assert (
        "the server ended a reply with tool calls as 'stop': read as a tool turn",
    ) == reply.notes


@pytest.mark.parametrize("finish", ["stop", "tool_calls"])
@pytest.mark.anyio
async def test_arguments_cut_mid_string_make_a_broken_reply_whose_call_cannot_run(
    finish: str,
) -> None:
    """Quirk: arguments end mid-string, then a clean finish: the call gets {}, the reply breaks."""
    chunks = [
        call_fragment(0, '{"path": "a.txt", "text": "hal', call_id="c1", name="write_file"),
        chunk({}, finish),
        usage_chunk(),
    ]

    reply, _ = await ask(streamed(chunks), request=WITH_TOOLS)

    assert [("c1", "write_file", {})] == calls(reply)
    assert (finish, FinishReason.BROKEN) == (reply.raw_finish, reply.finish)
    assert (
        "the arguments of call c1 (write_file) are not a JSON object: it will not run",
    ) == reply.notes


@pytest.mark.anyio
async def test_a_stream_cut_before_its_finish_and_done_fails_after_passing_its_text_on() -> None:
    """Quirk: the body ends with neither a finish reason nor `[DONE]`: a lost connection."""
    chunks = [chunk({"role": "assistant", "content": ""}), chunk({"content": "Half "})]
    recorder = Recorder(streamed(chunks, done=False))
    pieces: list[str] = []

    with pytest.raises(ModelFailure) as caught:
        await provider(recorder).reply(CANDIDATE, REQUEST, pieces.append)

    assert (FailureKind.TRANSIENT, None) == (caught.value.kind, caught.value.status)
    assert ["Half "] == pieces


@pytest.mark.anyio
async def test_a_stream_broken_by_the_transport_is_a_lost_connection() -> None:
    """A body whose reading fails halfway is transient; nothing is returned."""

    async def body() -> AsyncIterator[bytes]:
        yield sse([chunk({"content": "Half "})], done=False)
        raise httpx2.RemoteProtocolError("peer closed connection")

    response = httpx2.Response(200, content=body(), headers={"content-type": "text/event-stream"})

    caught = await failure(response)

    assert FailureKind.TRANSIENT == caught.kind
    assert "the stream was cut: peer closed connection" == caught.message


@pytest.mark.anyio
async def test_a_stream_that_ended_with_done_but_no_finish_is_a_broken_reply() -> None:
    """`[DONE]` without any finish reason: the reply comes back, broken, its calls not runnable."""
    chunks = [call_fragment(0, "{}", call_id="c1", name="read_file")]

    reply, _ = await ask(streamed(chunks), request=WITH_TOOLS)

    assert (None, FinishReason.BROKEN) == (reply.raw_finish, reply.finish)
    assert [("c1", "read_file", {})] == calls(reply)
    assert ("the reply ended without a finish reason: none of its calls will run",) == reply.notes


@pytest.mark.anyio
async def test_length_keeps_the_calls_but_not_as_a_tool_turn() -> None:
    """Quirk: `length` with calls is LENGTH: the calls are kept for the record, never run."""
    reply, _ = await ask(
        streamed(tool_call_reply([("c1", "read_file", {"path": "a"})], finish="length").chunks),
        request=WITH_TOOLS,
    )

    assert ("length", FinishReason.LENGTH) == (reply.raw_finish, reply.finish)
    assert [("c1", "read_file", {"path": "a"})] == calls(reply)


@pytest.mark.anyio
async def test_a_server_that_ignores_stream_true_is_read_as_one_piece() -> None:
    """A JSON completion in answer to a streamed request is a whole reply, with a note."""
    body = completion("Whole.", usage=(7, 2)).body

    reply, _ = await ask(httpx2.Response(200, json=body))

    assert ("Whole.", FinishReason.STOP, Usage(input_tokens=7, output_tokens=2)) == (
        reply.text,
        reply.finish,
        reply.usage,
    )
    assert ("the server answered the streamed request in one piece",) == reply.notes


@pytest.mark.anyio
async def test_an_error_event_inside_the_stream_is_a_failure() -> None:
    """`data: {"error": ...}` after a 200 fails the reply, classified by its wording."""
    chunks = [chunk({"content": "Hi"}), {"error": {"message": "maximum context length exceeded"}}]

    caught = await failure(streamed(chunks, done=False))

    assert FailureKind.CONTEXT_OVERFLOW == caught.kind


def test_fragments_without_an_index_are_read_in_order() -> None:
    """A server that omits `index`: a fragment with a new id and a name starts the next call."""
    assembler = StreamAssembler()
    for fragment in (
        {"id": "a", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
        {"id": "b", "function": {"name": "now", "arguments": ""}},
        {"function": {"arguments": ""}},
    ):
        assembler.feed(chunk({"tool_calls": [fragment]}))
    assembler.feed(chunk({}, "tool_calls"))

    reply = assembler.reply()

    assert [("a", "read_file", {"path": "x"}), ("b", "now", {})] == calls(reply)
    assert FinishReason.TOOL_CALLS == reply.finish


def test_a_call_without_an_id_is_named_by_its_position() -> None:
    """A server that gives no call id: the call is named call_N, and the note says so."""
    assembler = StreamAssembler()
    assembler.feed(call_fragment(0, "{}", name="now"))
    assembler.feed(chunk({}, "tool_calls"))

    reply = assembler.reply()

    assert [("call_1", "now", {})] == calls(reply)
    assert ("call 1 had no usable id: named it call_1",) == reply.notes


# -- failures ------------------------------------------------------------------------------


VLLM_ERROR = {"object": "error", "message": "unknown field: top_x", "type": "BadRequestError"}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (http_error(401, "Incorrect API key provided", code="invalid_api_key"), FailureKind.AUTH),
        (http_error(429, "Rate limit reached", "requests"), FailureKind.RATE_LIMITED),
        (
            http_error(429, "You exceeded your current quota.", "insufficient_quota"),
            FailureKind.BILLING,
        ),
        (
            http_error(429, "Request refused.", "requests", code="insufficient_quota"),
            FailureKind.BILLING,
        ),
        (http_error(500, "internal error", "server_error"), FailureKind.TRANSIENT),
        (http_error(502, "bad gateway", "server_error"), FailureKind.TRANSIENT),
        (http_error(503, "overloaded", "server_error"), FailureKind.TRANSIENT),
        (
            http_error(400, "This model's maximum context length is 8192 tokens."),
            FailureKind.CONTEXT_OVERFLOW,
        ),
        (HttpError(400, VLLM_ERROR | {"code": 400}), FailureKind.BAD_REQUEST),
    ],
)
@pytest.mark.anyio
async def test_http_errors_are_classified_by_status_and_wording(
    answer: HttpError, expected: FailureKind
) -> None:
    """The status and the error body's message, type and code decide the class."""
    caught = await failure(error(answer.status, answer.body))

    assert (expected, answer.status) == (caught.kind, caught.status)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({"retry-after-ms": "1500"}, 1.5),
        ({}, None),
    ],
)
@pytest.mark.anyio
async def test_retry_after_comes_from_the_header_in_seconds(
    headers: dict[str, str], expected: float | None
) -> None:
    """Seconds are honoured; an HTTP date is ignored."""
    caught = await failure(error(429, {"error": {"message": "slow down"}}, headers))

    assert (FailureKind.RATE_LIMITED, expected) == (caught.kind, caught.retry_after)


@pytest.mark.parametrize(
    "raised",
    [
        pytest.param(httpx2.ReadTimeout("timed out"), id="timeout"),
        pytest.param(httpx2.ConnectError("[Errno 111] Connection refused"), id="refused"),
    ],
)
@pytest.mark.anyio
async def test_timeouts_and_refused_connections_are_transient(raised: Exception) -> None:
    """Neither reached an answer: another try may."""

    def fail(_: httpx2.Request) -> httpx2.Response:
        raise raised

    caught = await failure(fail)

    assert (FailureKind.TRANSIENT, None) == (caught.kind, caught.status)


@pytest.mark.anyio
async def test_the_api_key_never_appears_in_a_failure() -> None:
    """An error body that echoes the Authorization header is shown without the key."""
    echoed = f"bad request: headers were Authorization: Bearer {KEY}; key={KEY}"

    caught = await failure(error(400, {"error": {"message": echoed}}))

    assert KEY not in caught.message
    assert KEY not in str(caught)
    assert "Bearer [redacted]" in caught.message


@pytest.mark.anyio
async def test_a_profile_without_a_key_fails_as_auth_naming_the_profile() -> None:
    """A CredentialMissingError is an auth failure: another profile may have a key."""

    def missing(profile: str) -> str:
        msg = f"credential profile {profile} is not in secrets.toml"
        raise CredentialMissingError(msg)

    recorder = Recorder()
    client = httpx2.AsyncClient(transport=httpx2.MockTransport(recorder))
    subject = OpenAICompatProvider("http://mock.test/v1", missing, http_client=client)

    with pytest.raises(ModelFailure) as caught:
        await subject.reply(CANDIDATE, REQUEST)

    assert FailureKind.AUTH == caught.value.kind
    assert "credential profile work" in caught.value.message
    assert [] == recorder.requests


@pytest.mark.anyio
async def test_the_catalog_lists_the_servers_model_ids() -> None:
    """GET /models gives the ids, in the server's order."""
    listing = {
        "object": "list",
        "data": [{"id": "gpt-a", "object": "model"}, {"id": "gpt-b", "object": "model"}],
    }
    recorder = Recorder(httpx2.Response(200, json=listing))

    ids = await provider(recorder).catalog("work")

    assert ["gpt-a", "gpt-b"] == ids
    assert ("GET", "http://mock.test/v1/models") == (
        recorder.requests[0].method,
        str(recorder.requests[0].url),
    )


@pytest.mark.anyio
async def test_a_catalog_that_fails_raises_a_classified_failure() -> None:
    """A 401 from GET /models is an auth failure of the profile asked with."""
    recorder = Recorder(error(401, {"error": {"message": "invalid key"}}))

    with pytest.raises(ModelFailure) as caught:
        await provider(recorder).catalog("work")

    assert (FailureKind.AUTH, "work") == (caught.value.kind, caught.value.candidate.profile)


@pytest.mark.anyio
async def test_a_model_that_refuses_max_tokens_is_asked_with_max_completion_tokens() -> None:
    """OpenAI's reasoning models name the newer field; it is sent at once from then on."""
    refusal = http_error(
        400,
        "Unsupported parameter: 'max_tokens' is not supported with this model."
        " Use 'max_completion_tokens' instead.",
    )
    recorder = Recorder(
        error(400, refusal.body),
        streamed(text_reply("a").chunks),
        streamed(text_reply("b").chunks),
    )
    subject = provider(recorder)

    first = await subject.reply(CANDIDATE, REQUEST)
    second = await subject.reply(CANDIDATE, REQUEST)

    limits = [[k for k in body if k.startswith("max_")] for body in recorder.bodies()]
    assert [["max_tokens"], ["max_completion_tokens"], ["max_completion_tokens"]] == limits
    assert (
        "the server refused max_tokens (HTTP 400): asked again with max_completion_tokens",
    ) == first.notes
    assert ("this model refused max_tokens earlier: sent max_completion_tokens",) == second.notes


@pytest.mark.anyio
async def test_one_client_per_profile_is_made_and_reused() -> None:
    """Asking twice with one profile and once with another makes two SDK clients."""
    recorder = Recorder(*(streamed(text_reply(t).chunks) for t in ("a", "b", "c")))
    subject = provider(recorder)
    other = Candidate("openai", "gpt-unit", "personal")

    await subject.reply(CANDIDATE, REQUEST)
    first = subject._clients["work"][1]
    await subject.reply(CANDIDATE, REQUEST)
    await subject.reply(other, REQUEST)

    assert ({"work", "personal"}, first) == (set(subject._clients), subject._clients["work"][1])


@pytest.mark.anyio
async def test_aclose_closes_the_clients_it_made_but_not_an_injected_one() -> None:
    """The provider owns only what it created."""
    injected = httpx2.AsyncClient(transport=httpx2.MockTransport(Recorder()))
    borrowing = OpenAICompatProvider(None, lambda _: KEY, http_client=injected)
    owning = OpenAICompatProvider(None, lambda _: KEY)
    _, borrowed = borrowing._client(CANDIDATE)
    _, owned = owning._client(CANDIDATE)

    await borrowing.aclose()
    await owning.aclose()

    assert (False, True) == (injected.is_closed, owned.is_closed())
    assert "https://api.openai.com/v1/" == str(borrowed.base_url)
    await injected.aclose()
