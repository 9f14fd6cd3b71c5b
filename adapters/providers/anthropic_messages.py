"""The Anthropic Messages provider: one streamed request per reply, failures classified; adapters.

It asks through the official SDK with its retries off (failover is the only retry loop),
assembles the raw stream events into a ModelReply and turns every failure (an HTTP error, an
`error` event inside the stream, a timeout, a lost connection, a stream cut before its end)
into a ModelFailure whose message never holds the API key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import anthropic
import anyio
import httpx2

from adapters.errors import ConfigError
from adapters.providers.anthropic_stream import StreamAssembly
from adapters.providers.anthropic_wire import request_parameters
from adapters.settings.agent import ANTHROPIC_BASE_URL
from domain.agent.failover import Candidate, FailureKind, classify
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest

PROVIDER = "anthropic"
FAILURES = (anthropic.APIError, httpx2.HTTPError, httpx2.StreamError, json.JSONDecodeError)
"""What asking can raise besides cancellation: the SDK's errors, the transport's below the
stream, and an event whose data is not JSON. Anything else is a bug and is not disguised."""
DEFAULT_BASE_URL = ANTHROPIC_BASE_URL
STREAM_ERROR_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each error type has when it comes as a response, for an `error` event that
arrives inside a stream whose response already said 200."""
MESSAGE_LIMIT = 500
CLOSE_GRACE = 5.0
"""Seconds a stream may take to close once its reply ended, failed or was cancelled."""


class AnthropicProvider:
    """Asks Anthropic's Messages API, streaming, with one SDK client per credential profile."""

    def __init__(
        self,
        base_url: str | None,
        key_for: Callable[[str], str],
        timeout: float = 120.0,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self._base_url = _api_root(base_url or DEFAULT_BASE_URL)
        self._key_for = key_for
        self._timeout = timeout
        self._http_client = http_client
        self._clients: dict[str, tuple[anthropic.AsyncAnthropic, str]] = {}

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The model's whole reply to `request`, its text streamed to `on_text` as it comes."""
        client, key = self._client(candidate)
        parameters = request_parameters(request)
        assembly = StreamAssembly(on_text)
        try:
            stream = await client.messages.create(
                model=candidate.model,
                max_tokens=parameters.max_tokens,
                system=parameters.system or anthropic.omit,
                messages=parameters.messages,
                tools=parameters.tools or anthropic.omit,
                stream=True,
            )
            try:
                async for event in stream:
                    assembly.feed(event.to_dict(mode="json", warnings=False))
                    if assembly.ended:
                        break
            finally:
                # Shielded, so that a cancelled reply still closes its connection at once;
                # bounded, so that a close that hangs cannot hold the cancellation up.
                with anyio.move_on_after(CLOSE_GRACE, shield=True):
                    await stream.close()
        except FAILURES as error:
            raise _failure(candidate, error, key) from None
        if not assembly.ended:
            message = f"{self._base_url}: the stream ended before message_stop"
            raise ModelFailure(candidate, classify(None, connection_lost=True), message)
        return assembly.reply()

    async def catalog(self, profile: str) -> list[str]:
        """The ids of the models `GET /v1/models` lists for `profile`, in the server's order."""
        candidate = Candidate(PROVIDER, "(catalog)", profile)
        client, key = self._client(candidate)
        try:
            return [model.id async for model in client.models.list()]
        except FAILURES as error:
            raise _failure(candidate, error, key) from None

    async def aclose(self) -> None:
        """Close the clients this provider made; an injected HTTP client stays its owner's."""
        clients, self._clients = self._clients, {}
        if self._http_client is None:
            for client, _ in clients.values():
                await client.close()

    def _client(self, candidate: Candidate) -> tuple[anthropic.AsyncAnthropic, str]:
        found = self._clients.get(candidate.profile)
        if found is None:
            try:
                key = self._key_for(candidate.profile)
            except ConfigError as error:
                # A CredentialMissingError, caught by its base: adapters.config sits above
                # the providers in the adapter layers, adapters.errors below them.
                message = str(error)
                if candidate.profile not in message:
                    message = f"credential profile {candidate.profile}: {message}"
                raise ModelFailure(candidate, FailureKind.AUTH, message) from None
            client = anthropic.AsyncAnthropic(
                api_key=key,
                base_url=self._base_url,
                timeout=self._timeout,
                max_retries=0,
                http_client=self._http_client,
            )
            found = self._clients[candidate.profile] = (client, key)
        return found


def _api_root(base_url: str) -> str:
    """The base URL the SDK wants: it adds `/v1/...` itself, so a configured `/v1` goes."""
    root = base_url.rstrip("/")
    return root.removesuffix("/v1")


def _failure(candidate: Candidate, error: Exception, key: str) -> ModelFailure:
    """`error` as a classified ModelFailure, with the key taken out of its message."""
    status: int | None = None
    retry_after: float | None = None
    timed_out = isinstance(error, (anthropic.APITimeoutError, httpx2.TimeoutException))
    lost = not timed_out and isinstance(
        error, (anthropic.APIConnectionError, httpx2.TransportError, httpx2.StreamError)
    )
    if isinstance(error, anthropic.APIStatusError):
        status, detail = _status_detail(error)
        retry_after = _retry_after(error.response.headers.get("retry-after"))
    elif timed_out:
        detail = "the request timed out"
    elif lost:
        detail = f"the connection was lost ({type(error).__name__})"
    elif isinstance(error, json.JSONDecodeError):
        lost, detail = True, "the stream sent an event that is not JSON"
    else:
        detail = f"{type(error).__name__}: {error}"
    kind = classify(status, detail, timed_out=timed_out, connection_lost=lost)
    if key:
        detail = detail.replace(key, "[redacted]")
    return ModelFailure(candidate, kind, detail, status=status, retry_after=retry_after)


def _status_detail(error: anthropic.APIStatusError) -> tuple[int, str]:
    """The status an HTTP error or an in-stream `error` event stands for, and its words."""
    kind = error.type or ""
    said = error.api_message or _body_text(error.body)
    if error.status_code < 400:  # noqa: PLR2004 - an error event inside a 200 stream
        status = STREAM_ERROR_STATUSES.get(kind, 500)
        return status, f"{kind or 'error'} event in the stream: {said}"[:MESSAGE_LIMIT]
    detail = f"{kind}: {said}" if kind else said
    return error.status_code, detail[:MESSAGE_LIMIT]


def _body_text(body: Any) -> str:  # noqa: ANN401 - the SDK keeps whatever the body was
    if body is None:
        return "no error body"
    return str(body).strip() or "an empty error body"


def _retry_after(value: str | None) -> float | None:
    """Seconds from a `retry-after` header; an HTTP date or garbage counts as not given."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
