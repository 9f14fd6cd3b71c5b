"""What a hosting process is built from, as the composition root hands it over; adapter layer.

The daemon and `mcp serve` run the same parts: a journal, recovery of sessions whose host
died, the session host over the governed pipeline, and a control plane. Which classes make
those parts is decided by `adapters.wiring.hosting` alone; the processes only use them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from adapters.control.plane import ControlPlane
from adapters.projections.runner import ProjectionRunner
from adapters.runtime.agent_host import AgentHost, Publish
from adapters.runtime.approvals import PendingApprovals
from adapters.runtime.recovery import RecoveryReport
from adapters.runtime.session_host import SessionHost
from adapters.security.pairing import PairingCodes
from adapters.upstream.manager import UpstreamManager
from domain.ids import DeviceId
from domain.ports import Journal


class HostingParts(Protocol):
    """The parts of one hosting process for one home."""

    def open_journal(self) -> Journal:
        """The home's writable journal; the process closes it as it ends."""
        ...

    async def recover(self, journal: Journal) -> tuple[ProjectionRunner, RecoveryReport]:
        """The projection runner, after settling every session whose host died."""
        ...

    def upstream(self, journal: Journal) -> UpstreamManager | None:
        """The home's upstream MCP servers, None when none is configured."""
        ...

    def assemble(
        self, journal: Journal, upstream: UpstreamManager | None = None
    ) -> tuple[SessionHost, PendingApprovals]:
        """The session host over the governed pipeline, and the approvals it waits on."""
        ...

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
        """The control plane of the process, checking proofs and the devices' scopes."""
        ...

    def agent_host(
        self,
        journal: Journal,
        approvals: PendingApprovals,
        publish: Publish,
        upstream: UpstreamManager | None = None,
    ) -> AgentHost | None:
        """The daemon's agent sessions, or None when no `[agent] model` is configured."""
        ...
