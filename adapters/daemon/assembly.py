"""One hosting process's parts, wired the same way for the daemon and the stdio server.

Adapter layer.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from adapters import wiring
from adapters.config import Config
from adapters.daemon.approvals import PendingApprovals
from adapters.daemon.claims import SessionClaims
from adapters.daemon.control import ControlPlane
from adapters.daemon.control_methods import control_methods
from adapters.daemon.host import SessionHost
from adapters.daemon.host_key import ProofVerifier, load_or_create_host_key
from adapters.daemon.pairing import PairingCodes
from adapters.daemon.recovery import RecoveryReport, recover_orphans
from adapters.home import Home
from adapters.journal.journal import EventJournal
from adapters.journal.writer import SessionWriter
from adapters.projections.runner import ProjectionRunner
from adapters.tools.dispatcher import Dispatcher
from domain.ids import DeviceId
from projections.registry import ALL_PROJECTIONS


def assemble(
    home: Home, config: Config, journal: EventJournal
) -> tuple[SessionHost, PendingApprovals]:
    """The session host over the governed pipeline, and the approvals it waits on."""
    settings = config.daemon
    tools, policy = wiring.first_party_tools(config, home), wiring.pipeline_policy(home, config)
    approvals = PendingApprovals(timeout_seconds=policy.approval_timeout_seconds)
    dispatcher = Dispatcher(SessionWriter(journal), tools, policy, approvals)
    host = SessionHost(
        journal,
        dispatcher,
        home.root,
        SessionClaims(home),
        audience=settings.audience,
        max_concurrent_calls=settings.max_concurrent_calls,
        idle_seconds=float(settings.idle_timeout_seconds),
    )
    return host, approvals


async def recover(
    home: Home, config: Config, journal: EventJournal
) -> tuple[ProjectionRunner, RecoveryReport]:
    """The home's projection runner, after settling every session whose host died."""
    runner = ProjectionRunner(
        home.database, ALL_PROJECTIONS, busy_timeout=float(config.journal.busy_timeout_seconds)
    )
    report = await anyio.to_thread.run_sync(recover_orphans, journal, runner, SessionClaims(home))
    return runner, report


def control_plane(
    home: Home,
    health: Callable[[], dict[str, Any]],
    approvals: PendingApprovals,
    authenticate: Callable[[str], DeviceId],
    codes: PairingCodes | None = None,
) -> ControlPlane:
    """The control plane of a hosting process, checking proofs with the home's host key."""
    return ControlPlane(
        control_methods(health, approvals, codes),
        ProofVerifier(load_or_create_host_key(home)),
        authenticate,
    )


def host_health(host: SessionHost, approvals: PendingApprovals) -> dict[str, Any]:
    """What every hosting process reports about itself."""
    return {
        "status": "ok" if host.admitting else "stopping",
        "pid": os.getpid(),
        "sessions": len(host.sessions),
        "calls_in_flight": host.in_flight,
        "calls_served": host.calls_served,
        "approvals_pending": len(approvals.listing()),
    }
