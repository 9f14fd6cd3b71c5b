"""Runnable tools: a registry of definitions beside their implementations; adapter layer.

First-party tools are added once. Upstream tools come and go with their servers' catalogs:
`replace_group` swaps one group's tools at once, and `generation` counts every change so
that whatever was computed from the set (exposure, the prompt's tool list) is made again.
"""

from __future__ import annotations

from collections.abc import Iterable

from adapters.tools.contract import Tool
from domain.tools.registry import ToolRegistry


class ToolSet:
    """Definitions in a registry (a duplicate name fails) beside the tools that run them."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self.registry = ToolRegistry()
        self._tools: dict[str, Tool] = {}
        self._groups: dict[str, tuple[str, ...]] = {}
        self.generation = 0
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        """Register one tool; its name must be new."""
        self.registry.register(tool.definition)
        self._tools[tool.definition.name] = tool
        self.generation += 1

    def get(self, name: str) -> Tool | None:
        """The tool named `name`, if registered."""
        return self._tools.get(name)

    def replace_group(self, group: str, tools: Iterable[Tool]) -> None:
        """Make `tools` the whole of `group` (an upstream server's tools), in one change.

        A name another group or a first-party tool already holds is left to its holder.
        """
        for name in self._groups.pop(group, ()):
            self.registry.unregister(name)
            self._tools.pop(name, None)
        added: list[str] = []
        for tool in tools:
            name = tool.definition.name
            if name in self._tools:
                continue
            self.registry.register(tool.definition)
            self._tools[name] = tool
            added.append(name)
        self._groups[group] = tuple(added)
        self.generation += 1

    def group(self, group: str) -> tuple[str, ...]:
        """The names of the tools `group` holds now."""
        return self._groups.get(group, ())
