"""Reaching the home's daemon as a gateway client: is it there, does it host agents; adapter layer.

The daemon is found through its state file, trusted only while the daemon holds its lock
(`daemon_port`), and the connection signs a local-control proof for the `gateway` operation
with the home's host key. Every open reads the state anew, so a client that reconnects finds
a daemon restarted on another port.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.control.client import ControlError, DaemonNotRunningError, daemon_port
from adapters.control.gateway_async import AsyncGatewayClient
from adapters.control.gateway_client import GatewayClient, GatewayError, GatewayGoneError
from adapters.control.gateway_wire import DEFAULT_TIMEOUT
from adapters.home import Home
from adapters.security.host_key import HostKeyError, load_host_key

AGENT_METHOD = "sessions.create"
"""Offered only by a daemon that hosts agent sessions."""
CHAT_CLIENT = "ledgerclaw-chat"
"""The name the terminal chat connects with (decisions it makes are journaled under it)."""


@dataclass(frozen=True)
class HomeGateway:
    """The gateway of the daemon running for `home`."""

    home: Home
    timeout: float = DEFAULT_TIMEOUT

    async def open(self) -> AsyncGatewayClient:
        """A connection that may call every method, or DaemonNotRunningError when none runs."""
        port = daemon_port(self.home)
        key = load_host_key(self.home)
        try:
            return await AsyncGatewayClient.open(
                port, key=key, timeout=self.timeout, client_name=CHAT_CLIENT
            )
        except (ConnectionRefusedError, FileNotFoundError):
            msg = f"the daemon for home {self.home.root} is not listening on port {port}"
            raise DaemonNotRunningError(msg) from None

    def hosted_session(self, session_id: str) -> str:
        """`session_id` once the daemon says it is one of its agent sessions.

        Raises:
            ControlError: `session_not_hosted` (not an agent session of the daemon) or
                `unknown_session`, with the daemon's words.
        """
        try:
            with self.connection() as gateway:
                return str(gateway.call("sessions.get", {"session": session_id})["session_id"])
        except GatewayError as refusal:
            raise ControlError(refusal.code, str(refusal)) from None
        except GatewayGoneError as gone:
            msg = f"the daemon for home {self.home.root} broke off: {gone}"
            raise ControlError("daemon_gone", msg) from None

    def connection(self, timeout: float | None = None) -> GatewayClient:
        """A synchronous connection that may call every method."""
        port = daemon_port(self.home)
        key = load_host_key(self.home)
        try:
            return GatewayClient.open(port, key=key, timeout=timeout or self.timeout)
        except (ConnectionRefusedError, FileNotFoundError):
            msg = f"the daemon for home {self.home.root} is not listening on port {port}"
            raise DaemonNotRunningError(msg) from None


def agent_gateway(home: Home, probe_timeout: float = 3.0) -> HomeGateway | None:
    """The gateway of the home's daemon when one runs and hosts agents; None otherwise.

    A daemon that does not answer within `probe_timeout` seconds counts as none.
    """
    gateway = HomeGateway(home)
    try:
        with gateway.connection(probe_timeout) as probe:
            methods = probe.hello.get("methods", [])
    except (DaemonNotRunningError, GatewayError, GatewayGoneError, HostKeyError, OSError):
        return None
    return gateway if AGENT_METHOD in methods else None
