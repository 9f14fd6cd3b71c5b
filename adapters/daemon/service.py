"""The daemon: one process per home hosting sessions for MCP clients; adapter layer.

Start-up: the lock (a second daemon exits naming the first), logging, the journal,
recovery of sessions whose host died, then the HTTP server on 127.0.0.1: `/healthz`,
`/mcp` (device token), `/control` (local-control proof), `/pair`. While it runs, the
projections are caught up continuously (less often while calls flow: see
adapters/daemon/catch_up_pace.py) and stateless MCP sessions end when idle (after
`stateless_idle_timeout_seconds`). On SIGINT or SIGTERM it admits nothing new, lets
running calls finish within the grace period, cancels the rest (each gets its `cancelled`
receipt), closes every session as `daemon_stopped` (its run ends as `shutdown`) and exits 0.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import anyio.to_thread
import uvicorn
from anyio.abc import TaskGroup
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from adapters.control.embedded import HOST, EmbeddedServer
from adapters.control.pair_route import pair_route
from adapters.control.parts import HostingParts
from adapters.control.plane import ControlPlane
from adapters.daemon.catch_up_pace import CatchUpPace
from adapters.home import Home, ensure_home
from adapters.hosting.daemon_lock import DaemonLock
from adapters.mcp.callers import HTTP_STATELESS
from adapters.mcp.server import build_server
from adapters.mcp.session_key import SessionKeyCheck
from adapters.projections.runner import ProjectionRunner
from adapters.runtime.agent_host import AgentHost
from adapters.runtime.approvals import PendingApprovals
from adapters.runtime.health import host_health
from adapters.runtime.session_host import SessionHost
from adapters.security.bearer import BearerGuard
from adapters.security.loopback import LoopbackOnly
from adapters.security.pairing import PairingCodes, TokenAuthenticator
from adapters.security.registry_head import RegistryHead
from adapters.settings.config_file import Config
from adapters.upstream.manager import UpstreamManager
from domain.errors import LedgerclawError
from domain.ids import DeviceId
from domain.ports import Journal
from domain.values.runs import SessionCloseReason

log = logging.getLogger(__name__)


class DaemonStartError(LedgerclawError):
    """The daemon could not start serving (its port is taken, say); nothing was served."""

    exit_code = 3


def check_port(port: int) -> None:
    """Raise a DaemonStartError naming the port if nothing could listen on it now.

    The probe is closed again and uvicorn binds the port itself: a socket handed to
    uvicorn measured about ten times slower per request on loopback (bench/mcp_calls.py).
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
            probe.listen(1)
        except OSError as error:
            msg = (
                f"cannot listen on {HOST}:{port}: {error.strerror or error}; choose another"
                " port with --port or [daemon] port"
            )
            raise DaemonStartError(msg) from None


@dataclass
class Daemon:
    """Everything one running daemon holds."""

    home: Home
    config: Config
    port: int
    parts: HostingParts
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    stopping: anyio.Event = field(default_factory=anyio.Event)
    stop_reason: str = ""
    recovered: int = 0
    host: SessionHost = field(init=False)
    approvals: PendingApprovals = field(init=False)
    guard: BearerGuard = field(init=False)
    authenticator: TokenAuthenticator = field(init=False)
    control: ControlPlane = field(init=False)
    codes: PairingCodes = field(init=False)
    agents: AgentHost | None = None
    upstream: UpstreamManager | None = None

    def __post_init__(self) -> None:
        self.codes = PairingCodes(ttl_seconds=self.config.daemon.pairing_code_seconds)

    async def run(self, ready: Callable[[Daemon], None] | None = None) -> int:
        """Serve until a signal (or `stop`) arrives; the exit status (0 on a clean stop)."""
        ensure_home(self.home)
        lock = DaemonLock(self.home)
        lock.acquire(self.port)
        try:
            check_port(self.port)
            return await self._serve(ready)
        finally:
            lock.release()

    def stop(self, reason: str) -> None:
        """Begin a graceful stop."""
        if not self.stopping.is_set():
            self.stop_reason = reason
            self.stopping.set()

    async def _serve(self, ready: Callable[[Daemon], None] | None) -> int:
        settings = self.config.daemon
        journal = self.parts.open_journal()
        head = RegistryHead(self.home.database)
        try:
            runner, report = await self.parts.recover(journal)
            self.recovered = len(report.recovered)
            upstream = self.upstream = self.parts.upstream(journal)
            host, approvals = self.parts.assemble(journal, upstream)
            self.host, self.approvals = host, approvals
            self.agents = self.parts.agent_host(journal, approvals, self._publish, upstream)
            app, manager, guard = self._app(journal, host, approvals, head)
            self.guard = guard
            server = EmbeddedServer(
                uvicorn.Config(
                    app,
                    host=HOST,
                    port=self.port,
                    lifespan="on",
                    log_config=None,
                    timeout_graceful_shutdown=3,
                    ws="websockets-sansio",
                )
            )
            served = anyio.Event()
            async with anyio.create_task_group() as tasks, manager.run():
                if upstream is not None:
                    await tasks.start(upstream.run)
                await self._start_agents(tasks)
                tasks.start_soon(self._signals)
                tasks.start_soon(self._http, server, served)
                tasks.start_soon(self._projections, runner, host)
                tasks.start_soon(self._reap, host)
                tasks.start_soon(self._watch_revocations, host)
                while not server.started:
                    if served.is_set():
                        msg = f"the HTTP server on {HOST}:{self.port} did not start; see the log"
                        raise DaemonStartError(msg)
                    await anyio.sleep(0.02)
                log.info("daemon %d listening on http://%s:%d", os.getpid(), HOST, self.port)
                if ready is not None:
                    ready(self)
                await self.stopping.wait()
                await self._wind_down(host, runner, float(settings.grace_seconds))
                if upstream is not None:
                    await upstream.stop()
                server.should_exit = True
                with anyio.move_on_after(10):
                    await served.wait()
                tasks.cancel_scope.cancel()
        finally:
            head.close()
            journal.close()
        log.info("daemon stopped")
        return 0

    @staticmethod
    async def _http(server: EmbeddedServer, served: anyio.Event) -> None:
        """Serve HTTP until told to exit; `served` is set once it has stopped (or never began)."""
        try:
            await server.serve()
        except SystemExit:
            # uvicorn exits when it cannot bind (taken since check_port): say so.
            log.exception("the HTTP server could not start")
        finally:
            served.set()

    def _app(
        self, journal: Journal, host: SessionHost, approvals: PendingApprovals, head: RegistryHead
    ) -> tuple[Starlette, StreamableHTTPSessionManager, BearerGuard]:
        settings = self.config.daemon
        server = build_server(host, "http")
        manager = StreamableHTTPSessionManager(
            app=server, session_idle_timeout=float(settings.idle_timeout_seconds)
        )
        # Tokens are checked on the event loop against the kept registry whenever the head
        # (one indexed read that never waits) shows it current: see registry_head.py.
        authenticator = TokenAuthenticator(journal, head=head.version)
        self.authenticator = authenticator

        async def revoked(device: DeviceId) -> None:
            for hosted in list(host.sessions.values()):
                if hosted.device_id == device:
                    await host.close(hosted.key, SessionCloseReason.REVOKED)

        guard = BearerGuard(
            SessionKeyCheck(StreamableHTTPASGIApp(manager)),
            authenticator.authenticate,
            revoked,
            authenticate_kept=authenticator.authenticate_kept,
        )
        control = self.parts.control_plane(
            self.health,
            approvals,
            authenticator.authenticate,
            self.codes,
            device_scopes=authenticator.scopes_of,
            agents=self.agents,
            upstream=self.upstream,
        )
        self.control = control

        async def healthz(_request: Request) -> JSONResponse:
            return JSONResponse(self.health())

        routes = [
            Route("/healthz", healthz),
            Route("/mcp", guard),
            control.route("/control"),
            pair_route(self.codes, journal),
        ]

        @contextlib.asynccontextmanager
        async def lifespan(_app: Starlette) -> AsyncIterator[None]:
            yield

        app = Starlette(routes=routes, lifespan=lifespan)
        app.add_middleware(LoopbackOnly)
        return app, manager, guard

    async def _wind_down(self, host: SessionHost, runner: ProjectionRunner, grace: float) -> None:
        """Admit nothing new, let runs and calls finish within `grace`, catch the models up."""
        log.info("stopping (%s): no new calls admitted", self.stop_reason)
        await self._stop_agents(grace)
        cancelled = await host.stop(grace)
        if cancelled:
            log.warning("%d call(s) still running or waiting were cancelled", cancelled)
        try:
            await anyio.to_thread.run_sync(runner.catch_up)
        except LedgerclawError as error:
            log.error("the last projection catch-up failed: %s", error)  # noqa: TRY400 - expected, one line

    async def _start_agents(self, tasks: TaskGroup) -> None:
        """Start hosting agent sessions, if a model is configured, before anything is served."""
        if self.agents is None:
            return
        ready = anyio.Event()
        tasks.start_soon(self.agents.serve, ready.set)
        await ready.wait()

    async def _stop_agents(self, grace: float) -> None:
        """Let agent runs finish within `grace`, then end the rest."""
        if self.agents is None:
            return
        ended = await self.agents.stop(grace)
        if ended:
            log.warning("%d agent run(s) still working were ended", ended)

    async def _publish(self, event: str, payload: dict[str, Any]) -> None:
        await self.control.publish(event, payload)

    def health(self) -> dict[str, Any]:
        """What `/healthz` and `daemon status` report."""
        return {
            **host_health(self.host, self.approvals),
            "status": "stopping" if self.stopping.is_set() else "ok",
            "port": self.port,
            "started_at": self.started_at.isoformat(),
            "unauthorized": self.guard.refused + self.control.refused,
            "recovered_sessions": self.recovered,
        }

    async def _signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
            async for signum in received:
                self.stop(signal.Signals(signum).name)

    async def _projections(self, runner: ProjectionRunner, host: SessionHost) -> None:
        pace = CatchUpPace(float(self.config.daemon.projection_interval_seconds))
        said: str | None = None
        served = host.calls_served
        while True:
            applied = 0
            try:
                applied = await anyio.to_thread.run_sync(runner.catch_up)
            except LedgerclawError as error:
                # An expected failure (a damaged or busy journal) is one line, said once
                # until it changes, not a trace every interval.
                if str(error) != said:
                    log.error("projection catch-up failed: %s", error)  # noqa: TRY400 - an expected failure is one line, without its trace
                said = str(error)
            except Exception:
                log.exception("projection catch-up failed; retrying")
            else:
                if said is not None:
                    log.info("projection catch-up works again")
                said = None
            arrived = host.calls_served != served or host.in_flight > 0
            served = host.calls_served
            await anyio.sleep(pace.after(applied=applied, calls_arrived=arrived))

    async def _watch_revocations(self, host: SessionHost) -> None:
        """Close a revoked device's sessions as soon as the revocation is journaled.

        `devices revoke` writes the journal from another process; without this, a call of
        that device already waiting (for its turn, or for an approval) would outlive it.
        While the kept registry is current (asked without waiting), nothing was revoked
        since it was read, and the look costs no worker thread.
        """
        interval = float(self.config.daemon.projection_interval_seconds)
        looked: int | None = None
        """The registry version whose revocations were last acted on."""
        while True:
            await anyio.sleep(interval)
            hosted_devices = {h.device_id for h in host.sessions.values() if h.device_id}
            if not hosted_devices:
                continue
            current = self.authenticator.current_version()
            if current is not None and current == looked:
                continue
            try:
                revoked, looked = await anyio.to_thread.run_sync(self.authenticator.revoked)
            except LedgerclawError as error:
                log.warning("could not read the device registry: %s", error)
                continue
            for hosted in list(host.sessions.values()):
                if hosted.device_id in revoked:
                    await host.close(hosted.key, SessionCloseReason.REVOKED)

    async def _reap(self, host: SessionHost) -> None:
        """Close stateless sessions idle for `stateless_idle_timeout_seconds` as `idle`."""
        idle = float(self.config.daemon.stateless_idle_timeout_seconds)
        while True:
            await anyio.sleep(min(idle / 4, 30.0))
            await host.close_idle(idle, HTTP_STATELESS)
