"""Every upstream server of a home: their links, the journal, the tool sets they fill.

Adapter layer. At start the last good catalog of each server is read from the journal and
offered at once, so a server that is still connecting (or down) keeps its tools visible, and
a call to one answers that the server is unavailable. Each link then runs in its own task.
A listing that differs from the last good one is journaled and replaces the server's tools in
every attached tool set; every state change is journaled as it happens.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread

from adapters.pipeline.toolset import ToolSet
from adapters.settings.mcp import ServerSettings
from adapters.tools.contract import ToolOutput, ToolRun
from adapters.upstream.link import LinkOptions, ServerLink
from adapters.upstream.tool import UpstreamToolAdapter
from domain.ports import Journal
from domain.upstream.aggregate import UpstreamServer
from domain.upstream.catalog import UpstreamTool, selected
from domain.upstream.states import FailureClass, ServerState

log = logging.getLogger(__name__)
STOP_SECONDS = 10.0


class UnknownServerError(LookupError):
    """No upstream server of that name is configured."""


class UpstreamManager:
    """The links of every configured server, journaling through `journal`."""

    def __init__(
        self,
        journal: Journal,
        servers: Mapping[str, ServerSettings],
        options: Mapping[str, LinkOptions],
    ) -> None:
        self.journal = journal
        self.settings = dict(servers)
        self.links = {
            name: ServerLink(name, settings, self, options.get(name, LinkOptions()))
            for name, settings in servers.items()
        }
        self.toolsets: list[ToolSet] = []
        self.on_change: list[Callable[[], Awaitable[None]]] = []
        """Awaited after a catalog change was offered (an MCP face tells its clients)."""
        self.catalogs: dict[str, tuple[UpstreamTool, ...]] = {}

    # -- set-up --------------------------------------------------------------------------

    def attach(self, tools: ToolSet) -> None:
        """Offer every server's tools in `tools`, now and after each catalog change."""
        self.toolsets.append(tools)
        for name, catalog in self.catalogs.items():
            self._offer(tools, name, catalog)

    async def load(self) -> None:
        """Read each server's last good catalog from the journal and offer it."""
        for name in self.links:
            kept = await anyio.to_thread.run_sync(_stored, self.journal, name)
            if kept is not None and kept.tools:
                settings = self.settings[name]
                tools = tuple(
                    t for t in kept.tools if selected(t.name, settings.allow, settings.deny)
                )
                self._install(name, tools)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run every link until `stop`; started once the stored catalogs are offered."""
        await self.load()
        async with anyio.create_task_group() as tasks:
            for link in self.links.values():
                tasks.start_soon(link.run)
            task_status.started()

    async def stop(self) -> None:
        """Stop every link and wait (bounded) for their sessions to close."""
        for link in self.links.values():
            link.stop()
        with anyio.move_on_after(STOP_SECONDS):
            for link in self.links.values():
                await link.stopped.wait()

    # -- what the CLI and the gateway ask --------------------------------------------------

    def reload(self, name: str | None = None) -> list[str]:
        """Reconnect one server (or all) now with the back-off reset; the names reloaded."""
        if name is not None and name not in self.links:
            raise UnknownServerError(name)
        chosen = [name] if name is not None else list(self.links)
        for each in chosen:
            self.links[each].reload()
        return chosen

    def status(self) -> list[dict[str, Any]]:
        """Each server's live state, as `mcp list` shows it."""
        return [self._row(name, link) for name, link in self.links.items()]

    def _row(self, name: str, link: ServerLink) -> dict[str, Any]:
        wait = link.wait_seconds()
        settings = self.settings[name]
        return {
            "name": name,
            "transport": settings.transport,
            "state": str(link.state),
            "reason": link.reason,
            "tools": len(self.catalogs.get(name, ())),
            "failures": link.failures,
            "next_retry_seconds": None if wait is None else round(wait, 1),
            "protocol": link.protocol,
            "oauth": link.oauth_managed,
        }

    # -- calls -----------------------------------------------------------------------------

    async def call(
        self, server: str, tool: str, arguments: dict[str, Any], run: ToolRun
    ) -> ToolOutput:
        """Send a call to `server`'s link."""
        return await self.links[server].call(tool, arguments, run)

    # -- the recorder the links use ---------------------------------------------------------

    async def state(  # noqa: PLR0913 - the facts of one change
        self,
        server: str,
        state: ServerState,
        reason: str,
        *,
        failure: FailureClass | None,
        next_retry_at: datetime | None,
        failures: int,
    ) -> None:
        """Journal one state change of `server` (a failure to journal is logged, not raised)."""
        at = datetime.now(UTC)

        def command(stream: UpstreamServer) -> bool:
            return stream.change_state(
                state, reason, at, failure=failure, next_retry_at=next_retry_at, failures=failures
            )

        try:
            await anyio.to_thread.run_sync(self.journal.update_upstream_server, server, command)
        except Exception:
            log.exception("the state of upstream %s could not be journaled", server)

    async def catalog(self, server: str, tools: tuple[UpstreamTool, ...]) -> None:
        """Journal a listing of `server` when it changed, then offer its tools."""
        at = datetime.now(UTC)

        def command(stream: UpstreamServer) -> object:
            return stream.record_catalog(tools, at)

        try:
            await anyio.to_thread.run_sync(self.journal.update_upstream_server, server, command)
        except Exception:
            log.exception("the catalog of upstream %s could not be journaled", server)
        before = self.catalogs.get(server)
        self._install(server, tools)
        if before != tools:
            for notify in list(self.on_change):
                try:
                    await notify()
                except Exception:
                    log.exception("a listener of upstream %s's catalog failed", server)

    def _install(self, server: str, tools: tuple[UpstreamTool, ...]) -> None:
        self.catalogs[server] = tools
        for toolset in self.toolsets:
            self._offer(toolset, server, tools)

    def _offer(self, toolset: ToolSet, server: str, tools: tuple[UpstreamTool, ...]) -> None:
        settings = self.settings[server]
        link = self.links[server]
        adapters = []
        for spec in tools:
            try:
                adapters.append(UpstreamToolAdapter(server, spec, settings, link.call))
            except ValueError as error:
                log.warning("upstream %s: tool %s cannot be offered: %s", server, spec.name, error)
        toolset.replace_group(f"upstream:{server}", adapters)


def _stored(journal: Journal, name: str) -> UpstreamServer | None:
    return journal.upstream_server(name)
