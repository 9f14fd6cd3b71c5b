"""What a model is asked and what it answers, the same for every provider; domain layer.

Providers translate their wire formats to and from these values; the loop, the journal and
replay see only these.
"""

from __future__ import annotations

from pydantic import Field, JsonValue

from domain.agent.failover import Candidate, FailureKind
from domain.agent.finish import FinishReason
from domain.base import Value
from domain.values.conversation import ChatMessage, ToolCallRequest


class ToolSpec(Value):
    """A tool as offered to a model: its name, description and JSON Schema of arguments."""

    name: str
    description: str
    parameters: dict[str, JsonValue] = Field(default_factory=dict)


class ModelRequest(Value):
    """One request to a model: the system prompt's two parts, the transcript, the tools."""

    prefix: str
    suffix: str = ""
    messages: tuple[ChatMessage, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    max_output_tokens: int = Field(default=4_096, ge=1)


class Usage(Value):
    """Tokens as the provider counted them; None where it did not say."""

    input_tokens: int | None = None
    """The whole prompt, its cached part included (providers that count it apart add it)."""
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


class ModelReply(Value):
    """A whole reply: its text, its tool calls, how it ended, and what it cost."""

    text: str = ""
    tool_calls: tuple[ToolCallRequest, ...] = ()
    raw_finish: str | None = None
    finish: FinishReason
    usage: Usage | None = None
    notes: tuple[str, ...] = ()
    """What the provider had to work around (a non-streaming fallback, a dropped fragment)."""


class ModelFailure(Exception):  # noqa: N818 - a failure the failover decides on, not a bug
    """A request that failed, classified for failover; its message never holds a credential."""

    def __init__(
        self,
        candidate: Candidate,
        kind: FailureKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.candidate = candidate
        self.kind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
