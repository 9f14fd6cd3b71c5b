"""Runnable tools: a registry of definitions beside their implementations; adapter layer."""

from __future__ import annotations

from collections.abc import Iterable

from adapters.tools.contract import Tool
from domain.tools.registry import ToolRegistry


class ToolSet:
    """Definitions in a registry (a duplicate name fails) beside the tools that run them."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self.registry = ToolRegistry()
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register one tool; its name must be new."""
        self.registry.register(tool.definition)
        self._tools[tool.definition.name] = tool

    def get(self, name: str) -> Tool | None:
        """The tool named `name`, if registered."""
        return self._tools.get(name)
