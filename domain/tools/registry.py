"""The registry of tool definitions, where a duplicate name fails; domain layer."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from domain.tools.definition import ToolDefinition
from domain.tools.errors import DuplicateToolError, UnknownToolError


class ToolRegistry:
    """Every tool the runtime can dispatch, in registration order."""

    def __init__(self, definitions: Iterable[ToolDefinition] = ()) -> None:
        self._definitions: dict[str, ToolDefinition] = {}
        for definition in definitions:
            self.register(definition)

    def register(self, definition: ToolDefinition) -> None:
        """Add a definition; a second tool with the same name is refused."""
        if definition.name in self._definitions:
            msg = f"a tool named {definition.name!r} is already registered"
            raise DuplicateToolError(msg)
        self._definitions[definition.name] = definition

    def unregister(self, name: str) -> None:
        """Remove the definition named `name`, if there is one."""
        self._definitions.pop(name, None)

    def get(self, name: str) -> ToolDefinition:
        """The definition named `name`, or UnknownToolError."""
        try:
            return self._definitions[name]
        except KeyError:
            msg = f"no tool named {name!r} is registered"
            raise UnknownToolError(msg) from None

    def __contains__(self, name: object) -> bool:
        return name in self._definitions

    def __iter__(self) -> Iterator[ToolDefinition]:
        return iter(self._definitions.values())

    def __len__(self) -> int:
        return len(self._definitions)
