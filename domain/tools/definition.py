"""What a tool is to the model and to the pipeline: its definition; domain layer."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import Field, JsonValue, model_validator

from domain.base import Value
from domain.text import ShortText, Text
from domain.values.audience import Audience
from domain.values.authorization import ApprovalMode
from domain.values.conversation import ToolName


class Loading(StrEnum):
    """Whether a tool is in the first model request or waits to be loaded."""

    CORE = "core"
    DEFERRED = "deferred"


class Concurrency(StrEnum):
    """Whether a tool may run beside other calls of the same batch."""

    SEQUENTIAL = "sequential"
    PARALLEL_SAFE = "parallel_safe"


class ToolEffects(Value):
    """What a call may do outside the session, as the MCP tool annotations state it.

    The defaults are the most cautious reading (the MCP defaults too): a tool that declares
    nothing may change and destroy things, is not safe to repeat, and reaches the open
    world. These are hints for clients; every call is authorized whatever they say.
    """

    read_only: bool = False
    """The call changes nothing outside the session (MCP `readOnlyHint`)."""
    destructive: bool = True
    """The call may overwrite or remove what exists (MCP `destructiveHint`)."""
    idempotent: bool = False
    """Repeating the call with the same arguments has no further effect (`idempotentHint`)."""
    open_world: bool = True
    """The call may reach beyond the trusted roots: network, processes (`openWorldHint`)."""

    @model_validator(mode="after")
    def _check_consistent(self) -> Self:
        if self.read_only and (self.destructive or not self.idempotent):
            msg = "a read-only tool is neither destructive nor unsafe to repeat"
            raise ValueError(msg)
        return self

    @property
    def stays_inside(self) -> bool:
        """Whether a call changes nothing and reaches nothing beyond the trusted roots.

        Such a call's attempt, decision and receipt are stored in one commit after it ran
        (ADR 0023): nothing it did or read has left the process before that commit.
        """
        return self.read_only and not self.open_world


class ToolDefinition(Value):
    """The name, description and argument schema a model sees, plus how the pipeline treats it.

    It is the one place a tool is described: MCP's title and annotations come from here too.

    `approval_mode` is the default for calls of this tool; None means the tool needs no
    operator consent once its paths are allowed. Configuration can override it per tool.
    """

    name: ToolName
    title: ShortText | None = None
    """The name a person reads in a client's tool list and approval prompt."""
    description: Text = Field(min_length=1, max_length=4000)
    parameters: dict[str, JsonValue]
    loading: Loading = Loading.CORE
    concurrency: Concurrency = Concurrency.SEQUENTIAL
    feature_gates: frozenset[ShortText] = frozenset()
    approval_mode: ApprovalMode | None = None
    effects: ToolEffects = Field(default_factory=ToolEffects)
    """What a call may do outside the session; clients read it as MCP annotations."""
    audiences: frozenset[Audience] | None = None
    """The audiences whose sessions may see the tool at all; None for every audience."""

    def model_schema(self) -> dict[str, JsonValue]:
        """The function definition a chat-completions request carries."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }
