"""A governed pipeline with upstream servers on a real journal, for tests."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from adapters.settings.mcp import ServerSettings
from adapters.upstream.link import LinkOptions
from adapters.upstream.manager import UpstreamManager
from domain.ports import Approver
from domain.upstream.aggregate import server_stream
from domain.upstream.events import UpstreamCatalogChanged, UpstreamStateChanged
from tests.pipeline import Pipeline, approving, make_pipeline


@dataclass
class UpstreamRig:
    """A pipeline whose tool set holds the upstream tools, and the manager behind them."""

    pipeline: Pipeline
    manager: UpstreamManager
    kept: dict[str, list[Any]] = field(default_factory=dict)
    """Each stream's events as they were when the rig closed its journal."""

    async def call(self, tool: str, /, **arguments: Any) -> Any:
        """One governed call."""
        return await self.pipeline.call(tool, **arguments)

    async def wait(self, check: Callable[[], bool], what: str, seconds: float = 20) -> None:
        """Poll `check` on the event loop until it holds."""
        deadline = time.monotonic() + seconds
        while not check():
            if time.monotonic() > deadline:
                msg = f"timed out waiting for {what}: {self.manager.status()}"
                raise AssertionError(msg)
            await anyio.sleep(0.02)

    async def state(self, server: str, state: str, seconds: float = 20) -> None:
        """Wait for `server` to reach `state`."""
        link = self.manager.links[server]
        await self.wait(lambda: str(link.state) == state, f"{server} {state}", seconds)

    def states(self, server: str) -> list[UpstreamStateChanged]:
        """The server's journaled state changes, oldest first."""
        return [e for e in self._stream(server) if isinstance(e, UpstreamStateChanged)]

    def catalogs(self, server: str) -> list[UpstreamCatalogChanged]:
        """The server's journaled catalog changes, oldest first."""
        return [e for e in self._stream(server) if isinstance(e, UpstreamCatalogChanged)]

    def receipts(self) -> list[Any]:
        """The session's receipts, oldest first."""
        events = self.kept.get("", None)
        if events is None:
            events = self.pipeline.events()
        return [e for e in events if type(e).__name__ == "ToolReceiptRecorded"]

    def _stream(self, server: str) -> list[Any]:
        if server in self.kept:
            return self.kept[server]
        return list(self.pipeline.journal.app.events.get(server_stream(server)))

    def keep(self) -> None:
        """Read every stream once more, before the journal closes."""
        self.kept = {name: self._stream(name) for name in self.manager.links}
        self.kept[""] = self.pipeline.events()


@asynccontextmanager
async def upstream_rig(
    root: Path,
    servers: dict[str, ServerSettings],
    *,
    approver: Approver | None = None,
    options: dict[str, LinkOptions] | None = None,
) -> AsyncIterator[UpstreamRig]:
    """A pipeline in `root` with `servers` running until the block ends."""
    pipeline = make_pipeline(root, approver=approver or approving())
    manager = UpstreamManager(pipeline.journal, servers, options or {})
    manager.attach(pipeline.dispatcher.tools)
    try:
        async with anyio.create_task_group() as tasks:
            await tasks.start(manager.run)
            rig = UpstreamRig(pipeline, manager)
            try:
                yield rig
            finally:
                await manager.stop()
                tasks.cancel_scope.cancel()
                rig.keep()
    finally:
        pipeline.close()
