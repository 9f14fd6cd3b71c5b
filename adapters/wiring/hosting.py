"""One hosting process's parts, wired the same way for the daemon and the stdio server.

`HomeParts` is what the daemon and `mcp serve` are given (see `adapters.control.parts`):
they run it, and only this module picks the classes behind it. Adapter layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import anyio.to_thread

from adapters.clock import SystemClock
from adapters.config.failover import loop_settings
from adapters.control.agent_methods import AGENT_EVENTS, AGENT_METHOD_SCOPES, agent_methods
from adapters.control.methods import (
    APPROVAL_EVENTS,
    LOCAL_ONLY,
    METHOD_SCOPES,
    approval_announcer,
    control_methods,
)
from adapters.control.plane import ControlPlane
from adapters.control.upstream_methods import UPSTREAM_METHOD_SCOPES, upstream_methods
from adapters.home import Home
from adapters.hosting.claims import SessionClaims
from adapters.journal.journal import SqliteJournal
from adapters.journal.position import KeptPosition
from adapters.projections.runner import ProjectionRunner
from adapters.runtime.agent_host import AgentHost, Publish
from adapters.runtime.approvals import PendingApprovals
from adapters.runtime.budget import Budget
from adapters.runtime.recovery import RecoveryReport, recover_orphans
from adapters.runtime.session_host import SessionHost
from adapters.security.host_key import ProofVerifier, load_or_create_host_key
from adapters.security.pairing import PairingCodes
from adapters.settings.config_file import Config
from adapters.upstream.manager import UpstreamManager
from adapters.wiring.home import open_event_log
from adapters.wiring.providers import ProviderSet
from adapters.wiring.tools import dispatcher, first_party_tools, pipeline_policy
from adapters.wiring.upstream import upstream_manager
from domain.ids import DeviceId
from domain.ports import Journal
from projections.registry import ALL_PROJECTIONS


class HomeParts:
    """The hosting parts of one home under its configuration."""

    def __init__(self, home: Home, config: Config) -> None:
        self.home, self.config = home, config

    def open_journal(self) -> Journal:
        """The home's writable SQLite journal."""
        return SqliteJournal(self.home.database, self.config.journal)

    async def recover(self, journal: Journal) -> tuple[ProjectionRunner, RecoveryReport]:
        """The home's projection runner, after settling every session whose host died."""
        runner = ProjectionRunner(
            self.home.database,
            ALL_PROJECTIONS,
            busy_timeout=float(self.config.journal.busy_timeout_seconds),
        )
        claims = SessionClaims(self.home)
        report = await anyio.to_thread.run_sync(recover_orphans, journal, runner, claims)
        return runner, report

    def upstream(self, journal: Journal) -> UpstreamManager | None:
        """The home's upstream MCP servers, None when none is configured."""
        return upstream_manager(self.home, self.config, journal)

    def assemble(
        self, journal: Journal, upstream: UpstreamManager | None = None
    ) -> tuple[SessionHost, PendingApprovals]:
        """The session host over the governed pipeline, and the approvals it waits on.

        Its MCP clients see upstream tools too only when `[mcp] proxy = true`.
        """
        home, config = self.home, self.config
        tools, policy = first_party_tools(config, home), pipeline_policy(home, config)
        if upstream is not None and config.mcp.proxy:
            upstream.attach(tools)
        approvals = PendingApprovals(timeout_seconds=policy.approval_timeout_seconds)
        host = SessionHost(
            journal,
            dispatcher(journal, tools, policy, approvals),
            home.root,
            SessionClaims(home),
            audience=config.daemon.audience,
            max_concurrent_calls=config.daemon.max_concurrent_calls,
            idle_seconds=float(config.daemon.idle_timeout_seconds),
        )
        if upstream is not None and config.mcp.proxy:
            upstream.on_change.append(host.tools_changed)
        return host, approvals

    def control_plane(  # noqa: PLR0913 - the plane's parts
        self,
        health: Callable[[], dict[str, Any]],
        approvals: PendingApprovals,
        authenticate: Callable[[str], DeviceId],
        codes: PairingCodes | None = None,
        *,
        device_scopes: Callable[[object], Iterable[str]] | None = None,
        agents: AgentHost | None = None,
        upstream: UpstreamManager | None = None,
    ) -> ControlPlane:
        """The control plane, checking proofs with the home's host key and devices' scopes."""
        log = open_event_log(self.home)
        methods = control_methods(health, approvals, codes) | upstream_methods(upstream)
        scopes, events = METHOD_SCOPES | UPSTREAM_METHOD_SCOPES, dict(APPROVAL_EVENTS)
        if agents is not None:
            methods |= agent_methods(agents, log)
            scopes |= AGENT_METHOD_SCOPES
            events |= AGENT_EVENTS
        plane = ControlPlane(
            methods,
            ProofVerifier(load_or_create_host_key(self.home)),
            authenticate,
            device_methods=frozenset(methods) - LOCAL_ONLY,
            method_scopes=scopes,
            device_scopes=device_scopes,
            journal_position=KeptPosition(self.home.database),
            events=events,
        )
        approvals.watchers.append(approval_announcer(plane.publish))
        return plane

    def agent_host(
        self,
        journal: Journal,
        approvals: PendingApprovals,
        publish: Publish,
        upstream: UpstreamManager | None = None,
    ) -> AgentHost | None:
        """The daemon's agent sessions over the governed pipeline, when a model is chosen."""
        home, config = self.home, self.config
        if config.agent.model is None:
            return None
        tools, policy = first_party_tools(config, home), pipeline_policy(home, config)
        if upstream is not None:
            upstream.attach(tools)
        return AgentHost(
            journal=journal,
            log=open_event_log(home),
            dispatcher=dispatcher(journal, tools, policy, approvals),
            home_root=home.root,
            claims=SessionClaims(home),
            settings=loop_settings(config),
            providers=ProviderSet(config, home),
            clock=SystemClock(),
            publish=publish,
            secrets=policy.secrets,
            audience=config.daemon.audience,
            attachments=config.attachments.limits(),
            budget=Budget(
                config.agent.concurrent_model_requests,
                config.agent.concurrent_tool_calls,
                config.agent.session_tool_calls,
            ),
        )
