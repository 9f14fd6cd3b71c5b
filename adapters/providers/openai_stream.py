"""The assembly of an OpenAI-compatible chat-completions stream into one reply; adapter layer.

Chunks are folded in as they come: text pieces pass straight on, tool-call fragments are
kept by `index` (the first fragment's id and name win) and their arguments are parsed only
once the stream has ended. Where a server bends the wire, the reading that is safe is taken
and named in the reply's notes; a call whose arguments do not parse never becomes runnable.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass, field

import anyio
import orjson
from pydantic import JsonValue

from domain.agent.finish import RAW_REASONS, FinishReason, normalise_finish
from domain.agent.replies import ModelReply, Usage
from domain.ids import CallId
from domain.values.conversation import ToolCallRequest

DONE = "[DONE]"
RAW_FINISH_LIMIT = 200
"""The journal keeps a raw finish reason of at most this many characters."""
NAME_LIMIT = 128
"""The most characters of a server-given tool name a note repeats (a valid name has no more)."""
DRAIN_SECONDS = 0.1
"""How long the rest of a body after `[DONE]` is read, so that the connection is reused."""


class StreamEventError(Exception):
    """A stream event that ends the reply: an error the server sent, or data that is not JSON."""

    def __init__(self, error: object | None) -> None:
        super().__init__("the stream carried an error" if error is not None else "not JSON")
        self.error = error
        """The event's `error` object; None when the event was not JSON at all."""


async def sse_data(lines: AsyncIterator[str]) -> AsyncGenerator[str, None]:
    """The data of each server-sent event in `lines`, in order; comments are skipped."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))
    if data:
        yield "\n".join(data)


async def fold_stream(
    lines: AsyncIterator[str], assembler: StreamAssembler, on_text: Callable[[str], None] | None
) -> bool:
    """Fold a stream's chunks into `assembler`, passing text on; whether `[DONE]` ended it.

    Raises StreamEventError for an error event or an event that is not JSON.
    """
    done = False
    with anyio.CancelScope() as drain:
        async with aclosing(sse_data(lines)) as events:
            async for data in events:
                if done:
                    continue
                if data.strip() == DONE:
                    done = True
                    drain.deadline = anyio.current_time() + DRAIN_SECONDS
                    continue
                try:
                    chunk: object = orjson.loads(data)
                except orjson.JSONDecodeError:
                    raise StreamEventError(None) from None
                if isinstance(chunk, dict) and chunk.get("error"):
                    raise StreamEventError(chunk["error"])
                piece = assembler.feed(chunk)
                if piece and on_text is not None:
                    on_text(piece)
    return done


@dataclass
class _CallDraft:
    call_id: str | None = None
    name: str | None = None
    parts: list[str] = field(default_factory=list)


class StreamAssembler:
    """Folds the chunks of one streamed reply, then builds the reply once the stream ended."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[int, _CallDraft] = {}
        self._index = 0
        self._raw_finish: str | None = None
        self._usage: Usage | None = None
        self._notes: dict[str, None] = {}

    @property
    def has_content(self) -> bool:
        """Whether any text or tool-call fragment has come."""
        return bool(self._text or self._calls)

    @property
    def finished(self) -> bool:
        """Whether the reply's choice has said how it ended."""
        return self._raw_finish is not None

    def note(self, text: str) -> None:
        """Record something that was worked around (once, however often it happened)."""
        self._notes[text] = None

    def feed(self, chunk: object) -> str:
        """Fold in one chunk; the text it adds, to pass on as it comes (empty if none).

        A usage chunk may come with `choices: []`, `choices: null` (vLLM) or not at all.
        """
        if not isinstance(chunk, dict):
            return ""
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = _usage(usage)
        choices = chunk.get("choices")
        pieces: list[str] = []
        for choice in choices if isinstance(choices, list) else ():
            # Only the first choice is asked for; a server that sends more is read for one.
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                pieces.append(self._delta(delta))
            finish = choice.get("finish_reason")
            if isinstance(finish, str) and finish.strip():
                self._raw_finish = finish[:RAW_FINISH_LIMIT]
        return "".join(pieces)

    def reply(self) -> ModelReply:
        """The whole reply, its finish normalised and any unparseable call made harmless."""
        calls, broken = self._built_calls()
        raw = self._raw_finish
        finish = normalise_finish(raw, has_tool_calls=bool(calls))
        if raw is None:
            self.note("the reply ended without a finish reason: none of its calls will run")
        elif broken:
            finish = FinishReason.BROKEN
        elif calls and finish is FinishReason.TOOL_CALLS:
            if RAW_REASONS.get(raw.strip().lower()) is not FinishReason.TOOL_CALLS:
                self.note(
                    f"the server ended a reply with tool calls as {raw!r}: read as a tool turn"
                )
        elif calls and finish is FinishReason.LENGTH:
            self.note("the reply was cut by its output limit: its tool calls will not run")
        return ModelReply(
            text=self._whole_text(),
            tool_calls=tuple(calls),
            raw_finish=raw,
            finish=finish,
            usage=self._usage,
            notes=tuple(self._notes),
        )

    def _whole_text(self) -> str:
        text = "".join(self._text)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            self.note("the text held characters that are not UTF-8: they were replaced")
            return text.encode("utf-8", "replace").decode("utf-8")
        return text

    # -- folding ---------------------------------------------------------------------------

    def _delta(self, delta: dict[str, object]) -> str:
        content = delta.get("content")
        fragments = delta.get("tool_calls")
        for fragment in fragments if isinstance(fragments, list) else ():
            if isinstance(fragment, dict):
                self._fragment(fragment)
        if isinstance(content, str) and content:
            self._text.append(content)
            return content
        return ""

    def _fragment(self, fragment: dict[str, object]) -> None:
        given = fragment.get("id")
        call_id = given if isinstance(given, str) else None
        function = fragment.get("function")
        function = function if isinstance(function, dict) else {}
        index = fragment.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # No index: a fragment naming a new call starts one, any other continues the last.
            self.note("the server gave tool-call fragments no index: read them in order")
            current = self._calls.get(self._index)
            starts = current is not None and bool(call_id) and call_id != current.call_id
            index = self._index + 1 if starts and function.get("name") else self._index
        self._index = index
        draft = self._calls.setdefault(index, _CallDraft())
        if call_id:
            if draft.call_id is None:
                draft.call_id = call_id
            elif call_id != draft.call_id:
                self.note("the server sent a new id on a later fragment of a call: kept the first")
        name = function.get("name")
        if isinstance(name, str) and name and draft.name is None:
            draft.name = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            draft.parts.append(arguments)
        elif isinstance(arguments, dict):
            draft.parts.append(json.dumps(arguments, ensure_ascii=False))

    # -- building --------------------------------------------------------------------------

    def _built_calls(self) -> tuple[list[ToolCallRequest], bool]:
        calls: list[ToolCallRequest] = []
        broken = False
        for position, index in enumerate(sorted(self._calls)):
            draft = self._calls[index]
            call_id = _call_id(draft.call_id, position)
            if call_id != draft.call_id:
                self.note(f"call {position + 1} had no usable id: named it {call_id}")
            arguments = _arguments("".join(draft.parts))
            if arguments is None:
                broken = True
                name = (draft.name or "")[:NAME_LIMIT]
                text = f"the arguments of call {call_id} ({name}) are not a JSON object"
                self.note(f"{text}: it will not run")
            try:
                call = ToolCallRequest(
                    call_id=call_id, name=draft.name or "", arguments=arguments or {}
                )
            except ValueError:
                broken = True
                self.note(f"call {call_id} has no usable tool name or arguments: it was dropped")
                continue
            calls.append(call)
        return calls, broken


def completion_as_chunk(data: object) -> dict[str, object]:
    """A non-streaming completion as the one chunk that would have streamed it."""
    if not isinstance(data, dict):
        return {}
    choices: list[object] = []
    for choice in data.get("choices") or ():
        if not isinstance(choice, dict):
            continue
        message = choice.get("message")
        delta = dict(message) if isinstance(message, dict) else {}
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            delta["tool_calls"] = [
                {**call, "index": index} if isinstance(call, dict) else call
                for index, call in enumerate(calls)
            ]
        choices.append(
            {
                "index": choice.get("index"),
                "delta": delta,
                "finish_reason": choice.get("finish_reason"),
            }
        )
    return {"choices": choices, "usage": data.get("usage")}


def _call_id(given: str | None, position: int) -> CallId:
    try:
        return CallId(given or "")
    except ValueError:
        return CallId(f"call_{position + 1}")


def _arguments(text: str) -> dict[str, JsonValue] | None:
    if not text.strip():
        # A call of a tool without parameters: some servers send nothing rather than "{}".
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _usage(data: dict[str, object]) -> Usage:
    details = data.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=_count(data.get("prompt_tokens")),
        output_tokens=_count(data.get("completion_tokens")),
        cache_read_tokens=_count(cached),
    )


def _count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
