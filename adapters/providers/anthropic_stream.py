"""Anthropic Messages stream events assembled into one ModelReply; adapter layer.

Events come as the JSON objects the server sent (`message_start`, `content_block_start`,
`content_block_delta`, `content_block_stop`, `message_delta`, `message_stop`); events, blocks
and deltas of other types (`ping`, `thinking`, citations, signatures) are passed over. Tool
inputs are parsed only once the stream has ended.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import ValidationError

from domain.agent.finish import FinishReason, normalise_finish
from domain.agent.replies import ModelReply, Usage
from domain.ids import CallId
from domain.values.conversation import ToolCallRequest

Event = Mapping[str, object]


@dataclass
class _ToolBlock:
    call_id: str
    name: str
    start_input: object
    pieces: list[str] = field(default_factory=list)


@dataclass
class StreamAssembly:
    """The reply being assembled from one stream's events, fed in the order they came."""

    on_text: Callable[[str], None] | None = None
    ended: bool = False
    """Whether `message_stop` came: only then is the reply whole."""
    _texts: list[str] = field(default_factory=list)
    _tools: dict[int, _ToolBlock] = field(default_factory=dict)
    _text_blocks: set[int] = field(default_factory=set)
    _order: list[int] = field(default_factory=list)
    _usage: dict[str, int] = field(default_factory=dict)
    _stop_reason: str | None = None

    def feed(self, event: Event) -> None:
        """Take one event into the reply; unknown events change nothing."""
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, Mapping):
                self._take_usage(message.get("usage"))
        elif kind == "content_block_start":
            self._start_block(event)
        elif kind == "content_block_delta":
            self._take_delta(event)
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and isinstance(delta.get("stop_reason"), str):
                self._stop_reason = str(delta["stop_reason"])
            self._take_usage(event.get("usage"))
        elif kind == "message_stop":
            self.ended = True

    def reply(self) -> ModelReply:
        """The reply as assembled so far; whole only when `ended`."""
        notes: list[str] = []
        calls: list[ToolCallRequest] = []
        broken = False
        for index in self._order:
            block = self._tools[index]
            call, note = _call(block)
            if note is not None:
                notes.append(note)
                broken = True
            if call is not None:
                calls.append(call)
        finish = normalise_finish(self._stop_reason, has_tool_calls=bool(calls))
        return ModelReply(
            text="".join(self._texts),
            tool_calls=tuple(calls),
            raw_finish=self._stop_reason,
            finish=FinishReason.BROKEN if broken else finish,
            usage=self._reported_usage(),
            notes=tuple(notes),
        )

    def _start_block(self, event: Event) -> None:
        index, block = event.get("index"), event.get("content_block")
        if not isinstance(index, int) or not isinstance(block, Mapping):
            return
        if block.get("type") == "text":
            self._text_blocks.add(index)
            # A start block may already carry text; Anthropic sends it empty, but a proxy
            # that replays a whole message sends it here.
            self._add_text(block.get("text"))
        elif block.get("type") == "tool_use" and index not in self._tools:
            self._tools[index] = _ToolBlock(
                str(block.get("id", "")), str(block.get("name", "")), block.get("input")
            )
            self._order.append(index)

    def _take_delta(self, event: Event) -> None:
        index, delta = event.get("index"), event.get("delta")
        if not isinstance(index, int) or not isinstance(delta, Mapping):
            return
        if delta.get("type") == "text_delta" and index in self._text_blocks:
            self._add_text(delta.get("text"))
        elif delta.get("type") == "input_json_delta" and index in self._tools:
            piece = delta.get("partial_json")
            if isinstance(piece, str):
                self._tools[index].pieces.append(piece)

    def _add_text(self, text: object) -> None:
        if isinstance(text, str) and text:
            self._texts.append(text)
            if self.on_text is not None:
                self.on_text(text)

    def _take_usage(self, usage: object) -> None:
        # message_start counts the input, message_delta the output so far; a later count of
        # the same field is cumulative and replaces the earlier one.
        if isinstance(usage, Mapping):
            for name, value in usage.items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self._usage[str(name)] = value

    def _reported_usage(self) -> Usage | None:
        if not self._usage:
            return None
        read = self._usage.get("cache_read_input_tokens")
        written = self._usage.get("cache_creation_input_tokens")
        uncached = self._usage.get("input_tokens")
        # Anthropic counts the cached part apart; the port's input is the whole prompt, as
        # OpenAI's prompt_tokens is, so a context decision reads the same for both.
        whole = None if uncached is None else uncached + (read or 0) + (written or 0)
        return Usage(
            input_tokens=whole,
            output_tokens=self._usage.get("output_tokens"),
            cache_read_tokens=read,
            cache_write_tokens=written,
        )


def _call(block: _ToolBlock) -> tuple[ToolCallRequest | None, str | None]:
    """The call of a tool block, and a note when its input could not be taken as it is."""
    arguments = _arguments(block)
    if arguments is None:
        note = f"the input of tool call {block.call_id} ({block.name}) is not a JSON object"
        return _request(block, {}), note + ": it was given no arguments and must not run"
    call = _request(block, arguments)
    if call is None:
        call = _request(block, {})
        if call is not None:
            note = f"the input of tool call {block.call_id} ({block.name}) cannot be stored"
            return call, note + ": it was given no arguments and must not run"
        return None, f"a tool call with an unusable id or name ({block.name!r}) was dropped"
    return call, None


def _arguments(block: _ToolBlock) -> dict[str, object] | None:
    text = "".join(block.pieces)
    if not text.strip():
        # No input streamed: a tool without arguments, or a server that put the whole input
        # in the start block.
        start = block.start_input
        return dict(start) if isinstance(start, Mapping) else {}
    try:
        parsed = json.loads(text, parse_constant=_refuse_constant)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _refuse_constant(name: str) -> object:
    msg = f"{name} is not JSON"
    raise ValueError(msg)


def _request(block: _ToolBlock, arguments: dict[str, object]) -> ToolCallRequest | None:
    try:
        return ToolCallRequest.model_validate(
            {"call_id": CallId(block.call_id), "name": block.name, "arguments": arguments}
        )
    except (ValidationError, ValueError):
        return None
