"""The CLI's synchronous client of the running daemon: control calls and pairing; adapter layer.

`call_daemon` answers the daemon's challenge with a local-control proof signed by the home's
host key, so only a process that can read the key can drive the daemon.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

import orjson

from adapters.control.gateway_client import GatewayClient, GatewayError, GatewayGoneError
from adapters.home import Home
from adapters.hosting.daemon_lock import is_daemon_running
from adapters.hosting.daemon_state import read_daemon_state
from adapters.security.host_key import load_host_key
from adapters.security.pairing import PairingCodeExpiredError, PairingCodeInvalidError
from domain.errors import LedgerclawError

DEFAULT_TIMEOUT = 10.0
MAX_ANSWER_BYTES = 16 * 1024 * 1024
_PAIRING_ERRORS: dict[str, type[LedgerclawError]] = {
    "pairing_code_expired": PairingCodeExpiredError,
    "pairing_code_invalid": PairingCodeInvalidError,
}
_EXIT_CODES = {
    "unknown_session": 6,
    "ambiguous_session": 6,
    "invalid_proof": 3,
    "bad_control_request": 2,
}
"""Exit codes for refusals that a local error class would have given its own code."""


class DaemonNotRunningError(LedgerclawError):
    """No daemon answers for this home."""

    exit_code = 3


class DaemonNotRespondingError(LedgerclawError):
    """The daemon accepted the connection but did not answer in time, or not as a daemon."""

    exit_code = 3


class ControlError(LedgerclawError):
    """The daemon refused the request; `code` names why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.exit_code = _EXIT_CODES.get(code, 1)


def daemon_port(home: Home) -> int:
    """The port of the daemon running for `home`, from its state file."""
    state = read_daemon_state(home)
    # The state outlives a killed daemon: trust its port only while its lock is held, so a
    # signed proof is never sent to whatever listens on a dead daemon's port.
    if state is None or not is_daemon_running(home):
        raise _not_running(home)
    return state.port


def call_daemon(
    home: Home,
    operation: str,
    params: dict[str, Any] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    port: int | None = None,
) -> dict[str, Any]:
    """Run one control operation in the home's daemon and return its answer's payload.

    The daemon is found through its state file unless `port` names the control plane's port.
    """
    port = daemon_port(home) if port is None else port
    key = load_host_key(home)
    try:
        with GatewayClient.open(port, key=key, operation=operation, timeout=timeout) as client:
            return client.call(operation, params or {})
    except (ConnectionRefusedError, FileNotFoundError):
        raise _not_running(home) from None
    except GatewayError as refusal:
        raise ControlError(refusal.code, str(refusal)) from None
    except GatewayGoneError as gone:
        if "in time" in str(gone):
            msg = f"the daemon for home {home.root} did not answer within {timeout:g} seconds"
        else:
            msg = f"the daemon on port {port} broke off the conversation: {gone}"
        raise DaemonNotRespondingError(msg) from None


def exchange_pairing_code(
    home_or_port: Home | int, code: str, name: str | None = None, *, timeout: float = 10.0
) -> tuple[str, str]:
    """Exchange a pairing code for a new device's id and token, over HTTP to the daemon."""
    port = home_or_port if isinstance(home_or_port, int) else daemon_port(home_or_port)
    body = {"code": code} if name is None else {"code": code, "name": name}
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/pair",
        data=orjson.dumps(body),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    # No proxy: the daemon listens on this host, and a proxy must never see the token.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            answer = orjson.loads(response.read(MAX_ANSWER_BYTES))
    except urllib.error.HTTPError as error:
        raise _pairing_error(error) from None
    except (urllib.error.URLError, ConnectionError) as error:
        reason = getattr(error, "reason", error)
        if isinstance(reason, ConnectionRefusedError):
            msg = f"no daemon listens on port {port}; start one with `ledgerclaw daemon run`"
            raise DaemonNotRunningError(msg) from None
        msg = f"the daemon on port {port} did not answer: {reason}"
        raise DaemonNotRespondingError(msg) from None
    except (TimeoutError, orjson.JSONDecodeError) as error:
        msg = f"the daemon on port {port} did not answer: {error}"
        raise DaemonNotRespondingError(msg) from None
    if not isinstance(answer, dict) or not all(
        isinstance(answer.get(k), str) for k in ("device_id", "token")
    ):
        msg = "the daemon's pairing answer has no device id and token"
        raise DaemonNotRespondingError(msg)
    return answer["device_id"], answer["token"]


def _pairing_error(error: urllib.error.HTTPError) -> LedgerclawError:
    try:
        with error:
            found = orjson.loads(error.read(64 * 1024)).get("error", {})
        code, message = str(found["code"]), str(found["message"])
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, OSError):
        code, message = "http_error", f"the daemon answered HTTP {error.code}"
    kind = _PAIRING_ERRORS.get(code)
    return kind(message) if kind else ControlError(code, message)


def _not_running(home: Home) -> DaemonNotRunningError:
    msg = f"no daemon is running for home {home.root}; start one with `ledgerclaw daemon run`"
    return DaemonNotRunningError(msg)
