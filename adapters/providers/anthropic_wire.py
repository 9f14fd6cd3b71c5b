"""A ModelRequest translated to Anthropic Messages parameters: system, messages, tools; adapters.

Anthropic wants roles to alternate, every tool result of an assistant turn in the next user
message, and no empty text block; the translation keeps the transcript's order and meaning
within those rules.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    TextBlockParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)

from domain.agent.replies import ModelRequest, ToolSpec
from domain.values.conversation import ChatMessage, MessageRole

Block = TextBlockParam | ToolUseBlockParam | ToolResultBlockParam
Role = Literal["user", "assistant"]

CACHE_BREAKPOINT: CacheControlEphemeralParam = {"type": "ephemeral"}
"""The one prompt-cache breakpoint of a request, at the end of the stable prefix."""


@dataclass(frozen=True)
class MessagesParameters:
    """What `messages.create` is given for one request, beside the model and the stream flag."""

    system: list[TextBlockParam]
    messages: list[MessageParam]
    tools: list[ToolParam]
    max_tokens: int


def request_parameters(request: ModelRequest) -> MessagesParameters:
    """The Messages API parameters of `request`."""
    return MessagesParameters(
        system=system_blocks(request.prefix, request.suffix),
        messages=message_params(request.messages),
        tools=[tool_param(tool) for tool in request.tools],
        max_tokens=request.max_output_tokens,
    )


def system_blocks(prefix: str, suffix: str) -> list[TextBlockParam]:
    """The system prompt as blocks: the stable prefix with the cache breakpoint, then the suffix.

    Anthropic caches in the order tools, system, messages, and a breakpoint caches everything
    before it. On the prefix block it therefore caches the tool definitions and the stable
    prefix together, which stay the same for the whole session; the volatile suffix (the date,
    the working context) comes after it and never spoils the cached part. One breakpoint is
    enough: a second one on the last tool would cache a strict subset of the same prefix.
    Empty parts are left out, since Anthropic refuses empty text blocks.
    """
    blocks: list[TextBlockParam] = []
    if prefix.strip():
        blocks.append({"type": "text", "text": prefix, "cache_control": CACHE_BREAKPOINT})
    if suffix.strip():
        blocks.append({"type": "text", "text": suffix})
    return blocks


def tool_param(tool: ToolSpec) -> ToolParam:
    """A tool definition; a schema without a type is an object, as Anthropic requires."""
    schema: dict[str, object] = {"type": "object", "properties": {}}
    schema.update(tool.parameters)
    return {"name": tool.name, "description": tool.description, "input_schema": schema}


@dataclass
class _Turn:
    role: Role
    blocks: list[Block] = field(default_factory=list)


def message_params(messages: Sequence[ChatMessage]) -> list[MessageParam]:
    """The transcript as alternating user and assistant messages of content blocks.

    Consecutive messages that land on the same role are joined into one message, in order:
    the results of one assistant turn's calls become one user message, and a user message
    that follows them joins it as a text block after the results. A message left with no
    block (an assistant message with neither text nor calls, a blank user message) is
    dropped: Anthropic refuses empty content, and such a message says nothing. A system
    message in the transcript is sent as user text, since the Messages API takes the system
    prompt only at the top.
    """
    turns: list[_Turn] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if turns and turns[-1].role == role:
            turns[-1].blocks.extend(blocks)
        else:
            turns.append(_Turn(role, blocks))
    return [_message(turn) for turn in turns]


def _message(turn: _Turn) -> MessageParam:
    if turn.role == "assistant":
        return {"role": "assistant", "content": turn.blocks}
    return {"role": "user", "content": turn.blocks}


def _blocks(message: ChatMessage) -> tuple[Role, list[Block]]:
    if message.role is MessageRole.TOOL:
        result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": message.call_id or ""}
        if message.content:
            # An empty result goes without content: Anthropic refuses an empty text block.
            result["content"] = message.content
        return "user", [result]
    blocks: list[Block] = []
    if message.content.strip():
        blocks.append({"type": "text", "text": message.content})
    if message.role is not MessageRole.ASSISTANT:
        return "user", blocks
    blocks.extend(
        {"type": "tool_use", "id": call.call_id, "name": call.name, "input": dict(call.arguments)}
        for call in message.tool_calls
    )
    return "assistant", blocks
