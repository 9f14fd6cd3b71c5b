"""An upstream server's tool as the pipeline runs it: `SERVER/TOOL`; adapter layer.

Its definition comes from the server's listing and the server's settings: deferred unless the
settings say core, seen only by the audiences the settings name, and asking for approval on
every call unless the server marks the tool read-only and the settings trust that. Running it
hands the validated arguments to the server's link (adapters/upstream/link.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

from adapters.settings.mcp import Loading as ServerLoading
from adapters.settings.mcp import ServerSettings
from adapters.tools.contract import CallAssessment, ToolOutput, ToolRun
from adapters.upstream.arguments import UpstreamArguments, arguments_model
from domain.tools.definition import Concurrency, Loading, ToolDefinition, ToolEffects
from domain.upstream.catalog import DESCRIPTION_LIMIT, UpstreamTool, qualified

TITLE_LIMIT = 200
Caller = Callable[[str, dict[str, Any], ToolRun], Awaitable[ToolOutput]]
"""Calls a tool by its upstream name with JSON arguments: the server's link."""


def _effects(spec: UpstreamTool) -> ToolEffects:
    if spec.read_only:
        return ToolEffects(read_only=True, destructive=False, idempotent=True, open_world=True)
    return ToolEffects(destructive=spec.destructive, idempotent=spec.idempotent)


def definition_of(server: str, spec: UpstreamTool, settings: ServerSettings) -> ToolDefinition:
    """The pipeline's definition of one upstream tool under `server`'s settings."""
    description = spec.description.strip() or f"The tool {spec.name} of the MCP server {server}."
    if len(description) > DESCRIPTION_LIMIT:
        description = description[: DESCRIPTION_LIMIT - 1] + "…"
    parameters = dict(spec.input_schema) or {"type": "object", "properties": {}}
    trusted = spec.read_only and settings.trust_read_only
    return ToolDefinition(
        name=qualified(server, spec.name),
        title=(spec.title or f"{server}: {spec.name}")[:TITLE_LIMIT],
        description=description,
        parameters=parameters,
        loading=Loading.CORE if settings.loading is ServerLoading.CORE else Loading.DEFERRED,
        concurrency=Concurrency.PARALLEL_SAFE if spec.read_only else Concurrency.SEQUENTIAL,
        approval_mode=None if trusted else settings.approval,
        effects=_effects(spec),
        audiences=frozenset(settings.audiences),
    )


class UpstreamToolAdapter:
    """One upstream tool, runnable through the governed pipeline."""

    definition: ToolDefinition
    arguments: type[UpstreamArguments]
    kind: ClassVar[str] = "upstream"

    def __init__(
        self, server: str, spec: UpstreamTool, settings: ServerSettings, call: Caller
    ) -> None:
        self.server, self.spec = server, spec
        self.definition = definition_of(server, spec, settings)
        self.arguments = arguments_model(self.definition.name, dict(spec.input_schema))
        self._call = call

    def assess(self, arguments: UpstreamArguments) -> CallAssessment:
        """No paths: an upstream tool reaches what its server reaches. Keyed by its name."""
        keys = ", ".join(sorted(arguments.root))
        summary = f"{self.definition.name}({keys})" if keys else self.definition.name
        return CallAssessment(summary=summary, grant_subject=self.definition.name)

    async def run(self, arguments: UpstreamArguments, run: ToolRun) -> ToolOutput:
        """Send the call to the server; its link classifies whatever comes back."""
        return await self._call(self.spec.name, dict(arguments.root), run)
