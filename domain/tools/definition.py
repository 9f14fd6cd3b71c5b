"""What a tool is to the model and to the pipeline: its definition; domain layer."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, JsonValue

from domain.base import Value
from domain.session.values import ApprovalMode, ToolName
from domain.text import ShortText, Text


class Loading(StrEnum):
    """Whether a tool is in the first model request or waits to be loaded."""

    CORE = "core"
    DEFERRED = "deferred"


class Concurrency(StrEnum):
    """Whether a tool may run beside other calls of the same batch."""

    SEQUENTIAL = "sequential"
    PARALLEL_SAFE = "parallel_safe"


class ToolDefinition(Value):
    """The name, description and argument schema a model sees, plus how the pipeline treats it.

    `approval_mode` is the default for calls of this tool; None means the tool needs no
    operator consent once its paths are allowed. Configuration can override it per tool.
    """

    name: ToolName
    description: Text = Field(min_length=1, max_length=4000)
    parameters: dict[str, JsonValue]
    loading: Loading = Loading.CORE
    concurrency: Concurrency = Concurrency.SEQUENTIAL
    feature_gates: frozenset[ShortText] = frozenset()
    approval_mode: ApprovalMode | None = None

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
