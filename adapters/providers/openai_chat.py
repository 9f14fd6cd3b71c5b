"""The provider for OpenAI's chat completions and every server compatible with it; adapter layer.

One base URL (OpenAI, vLLM, llama.cpp, Ollama, LM Studio, OpenRouter, …), one SDK client per
credential profile, a streamed request per reply. The SDK never retries (failover is the only
retry loop); what a server gets wrong is worked around here and named in the reply's notes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Literal

import httpx2
import openai
from openai import AsyncAPIResponse, AsyncOpenAI, AsyncStream, omit
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from adapters.errors import ConfigError
from adapters.providers.openai_stream import (
    StreamAssembler,
    StreamEventError,
    completion_as_chunk,
    fold_stream,
)
from adapters.providers.openai_wire import (
    credential_failure,
    exchange_failure,
    model_ids,
    status_failure,
    stream_error_failure,
    wire_messages,
    wire_tools,
)
from adapters.settings.agent import OPENAI_BASE_URL
from domain.agent.failover import Candidate, FailureKind, classify
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest

PROVIDER = "openai"
CATALOG_MODEL = "*"
"""The model a catalog request's failures name: it asks for no model in particular."""
REFUSAL_STATUSES = (400, 422)
KNOWN_NO_STREAMING = "streaming with tools failed earlier for this model: asked without streaming"
KNOWN_NO_TOOL_CHOICE = "the server refused tool_choice earlier for this model: sent none"
KNOWN_COMPLETION_TOKENS = "this model refused max_tokens earlier: sent max_completion_tokens"

OnText = Callable[[str], None] | None
Response = AsyncAPIResponse[ChatCompletion | AsyncStream[ChatCompletionChunk]]


@dataclass(frozen=True)
class _Ask:
    """How one request is sent: streamed or not, and with which tool_choice."""

    stream: bool
    tool_choice: Literal["auto"] | None
    completion_tokens: bool = False
    """Whether the output limit goes as `max_completion_tokens` rather than `max_tokens`."""


@dataclass(frozen=True)
class _Exchange:
    """One reply being asked for: who asks, what, with which key, and who hears the text."""

    client: AsyncOpenAI
    candidate: Candidate
    request: ModelRequest
    key: str
    on_text: OnText


class _StreamBrokeEarlyError(Exception):
    """A stream that broke before anything of its reply came."""

    def __init__(self, failure: ModelFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


class OpenAICompatProvider:
    """Asks an OpenAI-compatible chat-completions server, one whole reply per request.

    `key_for` gives a credential profile's API key when a model is asked; `tool_choice` is
    sent only when given (`"auto"` is every server's default anyway, and some refuse the
    field). An injected `http_client` stays the caller's to close.
    """

    def __init__(
        self,
        base_url: str | None,
        key_for: Callable[[str], str],
        timeout: float = 120.0,
        http_client: httpx2.AsyncClient | None = None,
        *,
        tool_choice: Literal["auto"] | None = None,
    ) -> None:
        # Never None: the SDK would read OPENAI_BASE_URL from the environment instead.
        self._base_url = base_url or OPENAI_BASE_URL
        self._key_for = key_for
        self._timeout = timeout
        self._http_client = http_client
        self._tool_choice = tool_choice
        self._clients: dict[str, tuple[str, AsyncOpenAI]] = {}
        self._retired: list[AsyncOpenAI] = []
        self._no_streaming_with_tools: set[str] = set()
        self._no_tool_choice: set[str] = set()
        self._completion_tokens: set[str] = set()

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: OnText = None,
    ) -> ModelReply:
        """The model's whole reply to `request`; any failure is raised as a ModelFailure."""
        key, client = self._client(candidate)
        exchange = _Exchange(client, candidate, request, key, on_text)
        ask, notes = self._first_ask(candidate.model, request)
        while True:
            try:
                reply = await (
                    self._streamed(exchange, ask) if ask.stream else self._whole(exchange, ask)
                )
            except _StreamBrokeEarlyError as broke:
                if not request.tools:
                    raise broke.failure from None
                self._no_streaming_with_tools.add(candidate.model)
                ask = replace(ask, stream=False)
                notes.append(_fallback_note("the stream broke before any reply"))
            except ModelFailure as failure:
                retried = self._after_refusal(candidate.model, request, ask, failure)
                if retried is None:
                    raise
                ask = retried[0]
                notes.append(retried[1])
            else:
                return reply.model_copy(update={"notes": (*notes, *reply.notes)})

    async def catalog(self, profile: str) -> list[str]:
        """The model ids the server's GET /models lists, in its order."""
        candidate = Candidate(PROVIDER, CATALOG_MODEL, profile)
        key, client = self._client(candidate)
        try:
            async with client.models.with_streaming_response.list() as response:
                data = await response.json()
        except ValueError:
            message = "the model list is not JSON"
            raise ModelFailure(candidate, FailureKind.TRANSIENT, message) from None
        except (openai.OpenAIError, httpx2.HTTPError) as error:
            cut = "the model list was cut"
            raise exchange_failure(candidate, error, key, self._timeout, cut) from None
        return model_ids(data)

    async def aclose(self) -> None:
        """Close the clients this provider made (an injected HTTP client is left open)."""
        clients = [client for _, client in self._clients.values()] + self._retired
        self._clients.clear()
        self._retired.clear()
        if self._http_client is None:
            for client in clients:
                await client.close()

    # -- how to ask ------------------------------------------------------------------------

    def _first_ask(self, model: str, request: ModelRequest) -> tuple[_Ask, list[str]]:
        notes: list[str] = []
        tool_choice = self._tool_choice if request.tools else None
        if tool_choice is not None and model in self._no_tool_choice:
            tool_choice = None
            notes.append(KNOWN_NO_TOOL_CHOICE)
        stream = True
        if request.tools and model in self._no_streaming_with_tools:
            stream = False
            notes.append(KNOWN_NO_STREAMING)
        completion_tokens = model in self._completion_tokens
        if completion_tokens:
            notes.append(KNOWN_COMPLETION_TOKENS)
        return _Ask(stream, tool_choice, completion_tokens), notes

    def _after_refusal(
        self, model: str, request: ModelRequest, ask: _Ask, failure: ModelFailure
    ) -> tuple[_Ask, str] | None:
        """The ask to try once more after a server refused part of this one, and its note."""
        if failure.status not in REFUSAL_STATUSES:
            return None
        wording = failure.message.lower()
        if not ask.completion_tokens and "max_completion_tokens" in wording:
            # OpenAI's reasoning models take only the newer name for the output limit.
            self._completion_tokens.add(model)
            note = (
                f"the server refused max_tokens (HTTP {failure.status}):"
                " asked again with max_completion_tokens"
            )
            return replace(ask, completion_tokens=True), note
        if ask.tool_choice is not None and "tool_choice" in wording:
            self._no_tool_choice.add(model)
            note = (
                f"the server refused tool_choice={ask.tool_choice} (HTTP {failure.status}):"
                " asked again without it"
            )
            return replace(ask, tool_choice=None), note
        if ask.stream and request.tools and "stream" in wording:
            self._no_streaming_with_tools.add(model)
            return replace(ask, stream=False), _fallback_note(f"HTTP {failure.status}")
        return None

    # -- one request -----------------------------------------------------------------------

    async def _streamed(self, exchange: _Exchange, ask: _Ask) -> ModelReply:
        assembler = StreamAssembler()
        done = opened = False
        try:
            async with self._open(exchange, ask) as response:
                opened = True
                if _is_json(response):
                    assembler.note("the server answered the streamed request in one piece")
                    return _whole_reply(
                        assembler, await _json(exchange, response), exchange.on_text
                    )
                done = await fold_stream(response.iter_lines(), assembler, exchange.on_text)
        except StreamEventError as event:
            raise _event_failure(exchange, event) from None
        except openai.APIStatusError as error:
            raise status_failure(exchange.candidate, error, exchange.key) from None
        except (openai.OpenAIError, httpx2.HTTPError) as error:
            if not (done or assembler.finished):
                raise self._lost(exchange, error, assembler, opened=opened) from None
        if assembler.finished and not done:
            assembler.note("the stream ended after its finish reason, without [DONE]")
        elif not done:
            message = "the stream ended before its finish reason and [DONE]"
            kind = classify(None, message, connection_lost=True)
            failure = ModelFailure(exchange.candidate, kind, message)
            raise failure if assembler.has_content else _StreamBrokeEarlyError(failure)
        return assembler.reply()

    def _lost(
        self, exchange: _Exchange, error: Exception, assembler: StreamAssembler, *, opened: bool
    ) -> Exception:
        """A stream that failed before its end; one that broke right after it opened says so."""
        failure = exchange_failure(
            exchange.candidate, error, exchange.key, self._timeout, "the stream was cut"
        )
        timed_out = isinstance(error, (openai.APITimeoutError, httpx2.TimeoutException))
        if opened and not timed_out and not assembler.has_content:
            return _StreamBrokeEarlyError(failure)
        return failure

    async def _whole(self, exchange: _Exchange, ask: _Ask) -> ModelReply:
        try:
            async with self._open(exchange, ask) as response:
                data = await _json(exchange, response)
        except (openai.OpenAIError, httpx2.HTTPError) as error:
            cut = "the answer was cut"
            raise exchange_failure(
                exchange.candidate, error, exchange.key, self._timeout, cut
            ) from None
        return _whole_reply(StreamAssembler(), data, exchange.on_text)

    @asynccontextmanager
    async def _open(self, exchange: _Exchange, ask: _Ask) -> AsyncIterator[Response]:
        """The request's response, opened: an HTTP error is raised on entering it."""
        request = exchange.request
        tools = wire_tools(request)
        limit = request.max_output_tokens
        # The raw response, not the SDK's chunk iterator: that iterator ends the same way
        # whether `[DONE]` came or the connection closed early, and only one is a whole reply.
        async with exchange.client.chat.completions.with_streaming_response.create(
            model=exchange.candidate.model,
            messages=wire_messages(request),
            # `max_tokens` first, not `max_completion_tokens`: OpenAI takes it for its chat
            # models, and older vLLM, llama.cpp, Ollama and LM Studio know only that name.
            # OpenAI's reasoning models refuse it, naming the other: then that one is sent.
            max_tokens=omit if ask.completion_tokens else limit,
            max_completion_tokens=limit if ask.completion_tokens else omit,
            tools=tools or omit,
            tool_choice=ask.tool_choice or omit,
            stream=ask.stream,
            stream_options={"include_usage": True} if ask.stream else omit,
        ) as response:
            yield response

    # -- clients and failures --------------------------------------------------------------

    def _client(self, candidate: Candidate) -> tuple[str, AsyncOpenAI]:
        try:
            key = self._key_for(candidate.profile)
        except ConfigError as error:
            raise credential_failure(candidate, error) from None
        known = self._clients.get(candidate.profile)
        if known is not None and known[0] == key:
            return known
        if known is not None:
            self._retired.append(known[1])
        client = AsyncOpenAI(
            base_url=self._base_url,
            api_key=key,
            max_retries=0,
            timeout=self._timeout,
            http_client=self._http_client,
        )
        self._clients[candidate.profile] = (key, client)
        return key, client


async def _json(exchange: _Exchange, response: Response) -> object:
    try:
        return await response.json()
    except ValueError:
        message = "the server's answer is not JSON"
        raise ModelFailure(exchange.candidate, FailureKind.TRANSIENT, message) from None


def _event_failure(exchange: _Exchange, event: StreamEventError) -> ModelFailure:
    if event.error is None:
        message = "the stream carried an event that is not JSON"
        return ModelFailure(exchange.candidate, FailureKind.TRANSIENT, message)
    return stream_error_failure(exchange.candidate, event.error, exchange.key)


def _is_json(response: Response) -> bool:
    content_type = response.http_response.headers.get("content-type", "")
    return content_type.split(";")[0].strip().lower() == "application/json"


def _whole_reply(assembler: StreamAssembler, data: object, on_text: OnText) -> ModelReply:
    assembler.feed(completion_as_chunk(data))
    reply = assembler.reply()
    if reply.text and on_text is not None:
        on_text(reply.text)
    return reply


def _fallback_note(reason: str) -> str:
    return f"streaming with tools failed ({reason}): asked again without streaming"
