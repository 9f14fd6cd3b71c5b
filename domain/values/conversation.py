"""Transcript messages and the tool calls a model asks for in them; domain layer.

A tool call request is what the model wrote, not proof that anything ran; what ran is told
by the attempt and its receipt.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import Field, model_validator

from domain.base import Value
from domain.ids import CallId
from domain.text import JsonArguments, Text

ToolName = Annotated[str, Field(pattern=r"^[A-Za-z0-9_.\-/]{1,128}$")]


class MessageRole(StrEnum):
    """The author of one transcript message."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class ToolCallRequest(Value):
    """A model-authored tool call: a request, not proof that anything ran."""

    call_id: CallId
    name: ToolName
    arguments: JsonArguments = Field(default_factory=dict)


class ChatMessage(Value):
    """One durable transcript message."""

    role: MessageRole
    content: Text = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    call_id: CallId | None = None
    """For a tool message: the call it answers."""

    @model_validator(mode="after")
    def _check_shape(self) -> Self:
        if self.tool_calls and self.role is not MessageRole.ASSISTANT:
            msg = "only an assistant message carries tool calls"
            raise ValueError(msg)
        if (self.role is MessageRole.TOOL) != (self.call_id is not None):
            msg = "a tool message, and only a tool message, names the call it answers"
            raise ValueError(msg)
        return self
