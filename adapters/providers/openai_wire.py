"""Translation between model requests and OpenAI's chat-completions wire; adapter layer.

Builds the messages and tools a request sends, and reads a failed answer (an error body, a
timeout, a lost connection) into the classified ModelFailure the failover decides on, with the
API key taken out of every message.
"""

from __future__ import annotations

import json
import math
import re

import httpx2
import openai
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)
from pydantic import JsonValue

from domain.agent.failover import Candidate, FailureKind, classify
from domain.agent.replies import ModelFailure, ModelRequest
from domain.values.conversation import ChatMessage, MessageRole

DETAIL_LIMIT = 500
"""The most characters of a server's error text a failure message keeps."""
EMPTY_PARAMETERS: dict[str, JsonValue] = {"type": "object", "properties": {}}
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s\"',;}\]]+")


def system_text(request: ModelRequest) -> str:
    """The system message: the stable prefix, then the volatile suffix after a blank line."""
    return f"{request.prefix}\n\n{request.suffix}" if request.suffix else request.prefix


def wire_messages(request: ModelRequest) -> list[ChatCompletionMessageParam]:
    """The request's system prompt and transcript as chat-completions messages, in order."""
    messages: list[ChatCompletionMessageParam] = [
        {"role": "system", "content": system_text(request)}
    ]
    messages.extend(_wire_message(message) for message in request.messages)
    return messages


def wire_tools(request: ModelRequest) -> list[ChatCompletionFunctionToolParam]:
    """The request's tools as function tools; none when the request offers none."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": _parameters(tool.parameters),
            },
        }
        for tool in request.tools
    ]


def _parameters(schema: dict[str, JsonValue]) -> dict[str, object]:
    # Some servers refuse a function whose schema is `{}`: say "no arguments" plainly.
    return dict(schema or EMPTY_PARAMETERS)


def _wire_message(message: ChatMessage) -> ChatCompletionMessageParam:
    if message.role is MessageRole.SYSTEM:
        return {"role": "system", "content": message.content}
    if message.role is MessageRole.USER:
        return {"role": "user", "content": message.content}
    if message.role is MessageRole.TOOL:
        return {"role": "tool", "tool_call_id": message.call_id or "", "content": message.content}
    assistant: ChatCompletionAssistantMessageParam = {"role": "assistant"}
    if message.tool_calls:
        calls: list[ChatCompletionMessageFunctionToolCallParam] = [
            {
                "id": call.call_id,
                "type": "function",
                "function": {
                    "name": call.name,
                    "arguments": json.dumps(call.arguments, ensure_ascii=False),
                },
            }
            for call in message.tool_calls
        ]
        assistant["tool_calls"] = calls
        # OpenAI's own replies carry null content beside their calls; echo that shape back.
        assistant["content"] = message.content or None
    else:
        assistant["content"] = message.content
    return assistant


# -- failures ------------------------------------------------------------------------------


def redacted(text: str, key: str) -> str:
    """`text` without the API key, and without any bearer token a server echoed back."""
    text = _BEARER.sub("Bearer [redacted]", text)
    return text.replace(key, "[redacted]") if key else text


def error_detail(body: object) -> tuple[str, str]:
    """The text a user reads from an error body, and the text that classifies it.

    The second adds the body's `type` and `code` (OpenAI says `insufficient_quota` there,
    not in its message), so wording anywhere in the body decides the failure class.
    """
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail")
        if isinstance(message, dict):
            return error_detail(message)
        shown = message if isinstance(message, str) else json.dumps(body, ensure_ascii=False)
        labels = [
            str(body[name])
            for name in ("type", "code")
            if isinstance(body.get(name), str) and str(body[name]) not in shown
        ]
        if labels:
            shown = f"{shown} ({', '.join(dict.fromkeys(labels))})"
        return shown, shown
    shown = "" if body is None else str(body)
    return shown, shown


def retry_after(headers: httpx2.Headers) -> float | None:
    """The wait a server asked for, in seconds: `retry-after`, else `retry-after-ms`.

    An HTTP date in `retry-after` is ignored (None): the server's clock is not ours.
    """
    for name, scale in (("retry-after", 1.0), ("retry-after-ms", 1000.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            return None
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None


def model_ids(data: object) -> list[str]:
    """The ids of a GET /models answer, in its order (a bare list is read too)."""
    listed = data.get("data") if isinstance(data, dict) else data
    entries = listed if isinstance(listed, list) else []
    return [e["id"] for e in entries if isinstance(e, dict) and isinstance(e.get("id"), str)]


def exchange_failure(
    candidate: Candidate, error: Exception, key: str, timeout: float, cut: str
) -> ModelFailure:
    """An SDK or HTTP error as a ModelFailure; `cut` says what broke if a connection did."""
    if isinstance(error, openai.APIStatusError):
        return status_failure(candidate, error, key)
    if isinstance(error, (openai.APITimeoutError, httpx2.TimeoutException)):
        return timeout_failure(candidate, timeout)
    if isinstance(error, openai.APIConnectionError):
        return connection_failure(candidate, "cannot reach the server", error, key)
    return connection_failure(candidate, cut, error, key)


def status_failure(candidate: Candidate, error: openai.APIStatusError, key: str) -> ModelFailure:
    """An HTTP error answer as a ModelFailure classified by its status and wording."""
    shown, wording = error_detail(error.body)
    shown = redacted(shown, key)[:DETAIL_LIMIT] or f"HTTP {error.status_code}"
    return ModelFailure(
        candidate,
        classify(error.status_code, wording),
        shown,
        status=error.status_code,
        retry_after=retry_after(error.response.headers),
    )


def timeout_failure(candidate: Candidate, timeout: float) -> ModelFailure:
    """A request that got no answer in time: transient."""
    message = f"the server sent nothing for {timeout:g} s"
    return ModelFailure(candidate, classify(None, message, timed_out=True), message)


def connection_failure(
    candidate: Candidate, what: str, error: BaseException, key: str
) -> ModelFailure:
    """A connection that failed or broke (`what` says when): transient."""
    cause = error.__cause__ or error
    reason = redacted(str(cause) or type(cause).__name__, key)[:DETAIL_LIMIT]
    message = f"{what}: {reason}"
    return ModelFailure(candidate, classify(None, message, connection_lost=True), message)


def stream_error_failure(candidate: Candidate, error: object, key: str) -> ModelFailure:
    """An error event inside a stream that had begun as a success.

    It has no HTTP status of its own, so it counts as a server error unless its wording says
    the context or the quota ran out.
    """
    shown, wording = error_detail(error)
    status = error.get("code") if isinstance(error, dict) else None
    status = status if isinstance(status, int) and not isinstance(status, bool) else None
    kind = classify(status or 500, wording)
    message = redacted(f"the stream reported an error: {shown}", key)[:DETAIL_LIMIT]
    return ModelFailure(candidate, kind, message, status=status)


def credential_failure(candidate: Candidate, error: Exception) -> ModelFailure:
    """A profile that cannot give a key: an auth failure naming the profile."""
    message = str(error)
    if candidate.profile not in message:
        message = f"credential profile {candidate.profile}: {message}"
    return ModelFailure(candidate, FailureKind.AUTH, message)
