"""`ledgerclaw mcp serve`: the governed tools over stdio, one process, one session.

For clients that spawn their server. It works whether or not a daemon runs: the process
hosts its own session and holds that session's claim, so no other process (the daemon's
recovery included) writes to it. Its pending approvals are listed and decided with the
same `ledgerclaw approvals` commands: the process serves the control plane on a loopback
port it registers in the home. Nothing but MCP messages is written to stdout; logs go to
the home's log file and stderr. Adapter layer.

SIGINT and SIGTERM stop it while the client still holds stdin open: stdin is read by a
daemon thread (adapters/stdio/stdin.py), so no blocked read keeps the process alive.
"""

from __future__ import annotations

import logging
import signal
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import uvicorn
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from starlette.applications import Starlette

from adapters.control.embedded import HOST, EmbeddedServer
from adapters.control.parts import HostingParts
from adapters.home import Home, ensure_home
from adapters.hosting.hosts import register_host
from adapters.mcp.callers import STDIO
from adapters.mcp.server import build_server
from adapters.runtime.health import host_health
from adapters.runtime.session_host import HostedSession, SessionHost
from adapters.security.loopback import LoopbackOnly
from adapters.security.pairing import TokenAuthenticator
from adapters.settings.config_file import Config
from adapters.stdio.stdin import StdinLines, stdin_claimed
from adapters.tools.session_tools import SetWorkingDirectory
from domain.values.runs import SessionCloseReason

log = logging.getLogger(__name__)
SET_WORKING_DIRECTORY = SetWorkingDirectory.definition.name


async def serve_stdio(
    home: Home, config: Config, parts: HostingParts, project: Path | None = None
) -> int:
    """Serve one MCP client on stdin/stdout until it disconnects or a signal arrives.

    With `project`, the session declares it as its project directory as it opens, before
    its first request is served: a `set_working_directory` call through the pipeline,
    authorized and journaled as if the client had made it.
    """
    ensure_home(home)
    started_at = datetime.now(UTC)
    journal = parts.open_journal()
    try:
        await parts.recover(journal)
        host, approvals = parts.assemble(journal)
        if project is not None:
            host.on_open = partial(_declare_project, host, project)

        def health() -> dict[str, Any]:
            return {
                **host_health(host, approvals),
                "kind": STDIO,
                "started_at": started_at.isoformat(),
            }

        tokens = TokenAuthenticator(journal)
        control = parts.control_plane(
            health, approvals, tokens.authenticate, device_scopes=tokens.scopes_of
        )
        web = EmbeddedServer(
            uvicorn.Config(
                LoopbackOnly(Starlette(routes=[control.route("/control")])),
                host=HOST,
                port=0,
                log_config=None,
                lifespan="off",
                ws="websockets-sansio",
            )
        )
        server = build_server(host, STDIO)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(web.serve)
            while not web.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
                await anyio.sleep(0.01)
            port = web.servers[0].sockets[0].getsockname()[1]
            registration = register_host(home, port, STDIO)
            try:
                tasks.start_soon(_stop_on_signal, tasks.cancel_scope, host, config)
                with stdin_claimed() as wire:
                    stdin = StdinLines(wire)
                    stdin.start()
                    async with stdio_server(stdin=stdin) as (read, write):

                        async def answer(error: types.JSONRPCError) -> None:
                            await write.send(SessionMessage(error))

                        stdin.answer = answer
                        await server.run(read, write, server.create_initialization_options())
                # stdin ended: the client went away. A handshake-era connection closes the
                # session itself as it ends; modern-era requests share no connection that
                # ends with the client. Closing twice is harmless.
                await host.close(STDIO, SessionCloseReason.CLIENT_CLOSED)
            finally:
                registration.close()
                await _stop(host, float(config.daemon.grace_seconds))
                web.should_exit = True
                tasks.cancel_scope.cancel()
    finally:
        journal.close()
    return 0


async def _declare_project(host: SessionHost, project: Path, hosted: HostedSession) -> None:
    """Declare `project` in a new session; a refusal is one warning, and the session goes on."""
    result = await host.call(hosted, SET_WORKING_DIRECTORY, {"path": str(project)})
    if result.is_error:
        log.warning("--project %s was not declared: %s", project, result.text.split("\n")[0])


async def _stop(host: SessionHost, grace: float) -> None:
    with anyio.CancelScope(shield=True):
        await host.stop(grace)


async def _stop_on_signal(scope: anyio.CancelScope, host: SessionHost, config: Config) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
        async for signum in received:
            log.info("stdio server stopping on %s", signal.Signals(signum).name)
            await _stop(host, float(config.daemon.grace_seconds))
            scope.cancel()
            return
