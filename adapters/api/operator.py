"""What the operator's commands do against running hosts and the journal; adapter layer.

Pending approvals live in the processes that host sessions: the daemon and any stdio
server. Listing asks each of them; deciding asks each until one knows the id. Devices are
read and revoked in the journal itself, so that works with or without a daemon, and a
running daemon refuses a revoked token on its next request.
"""

from __future__ import annotations

from typing import Any

from adapters.clock import SYSTEM_CLOCK
from adapters.control.client import ControlError, DaemonNotRunningError, call_daemon
from adapters.control.plane import error_code
from adapters.home import Home
from adapters.hosting.daemon_lock import is_daemon_running
from adapters.hosting.daemon_state import read_daemon_state
from adapters.hosting.hosts import live_hosts
from adapters.runtime.approvals import UnknownApprovalError
from adapters.wiring.home import open_journal
from domain.devices.aggregate import REGISTRY_ID, DeviceRecord
from domain.devices.errors import UnknownDeviceError
from domain.id_prefixes import by_prefix
from domain.ids import DeviceId
from domain.ports import Clock, Journal
from domain.values.authorization import ApprovalScope, ApprovalVerdict

DAEMON = "daemon"


def _hosts(home: Home) -> list[tuple[str, int | None]]:
    """Every live host as (label, port); the daemon's port None means "from its state"."""
    found: list[tuple[str, int | None]] = []
    if is_daemon_running(home) and read_daemon_state(home) is not None:
        found.append((DAEMON, None))
    found.extend((f"stdio pid {entry.pid}", entry.port) for entry in live_hosts(home))
    return found


def _nobody(home: Home) -> DaemonNotRunningError:
    msg = (
        f"no daemon or stdio server is running for home {home.root}; start one with"
        " `ledgerclaw daemon run`"
    )
    return DaemonNotRunningError(msg)


def pending_approvals(home: Home) -> list[dict[str, Any]]:
    """Every pending approval of every live host, oldest first, each naming its host."""
    hosts = _hosts(home)
    if not hosts:
        raise _nobody(home)
    rows: list[dict[str, Any]] = []
    for label, port in hosts:
        answer = call_daemon(home, "approvals.list", {}, port=port)
        rows.extend({**row, "host": label} for row in answer.get("approvals", []))
    return sorted(rows, key=lambda row: str(row.get("asked_at", "")))


def decide_approval(
    home: Home,
    approval_id: str,
    verdict: ApprovalVerdict,
    scope: ApprovalScope = ApprovalScope.ONCE,
    directory: str | None = None,
) -> dict[str, Any]:
    """Decide the pending approval `approval_id` in whichever host holds it."""
    hosts = _hosts(home)
    if not hosts:
        raise _nobody(home)
    params: dict[str, Any] = {"id": approval_id, "verdict": str(verdict), "scope": str(scope)}
    if directory is not None:
        params["directory"] = directory
    for label, port in hosts:
        try:
            answer = call_daemon(home, "approvals.decide", params, port=port)
        except ControlError as error:
            if error.code == error_code(UnknownApprovalError):
                continue
            raise
        return {**answer, "host": label}
    msg = f"{approval_id!r} matches no pending approval; see `ledgerclaw approvals list`"
    raise UnknownApprovalError(msg)


def issue_pairing_code(
    home: Home, name: str | None, scopes: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """A new single-use pairing code from the running daemon, for a device with `scopes`."""
    params: dict[str, Any] = {} if name is None else {"name": name}
    if scopes is not None:
        params["scopes"] = [s if s.startswith("operator.") else f"operator.{s}" for s in scopes]
    return call_daemon(home, "pair.code", params)


def daemon_status(home: Home) -> dict[str, Any]:
    """The running daemon's health."""
    return call_daemon(home, "status", {})


def list_devices(home: Home) -> list[dict[str, Any]]:
    """Every paired device of the home, oldest first."""
    journal = open_journal(home)
    try:
        return device_rows(journal)
    finally:
        journal.close()


def revoke(home: Home, device: str) -> dict[str, Any]:
    """Revoke a device of the home by id or unique prefix; its token stops working at once."""
    journal = open_journal(home)
    try:
        return revoke_device(journal, device)
    finally:
        journal.close()


def device_rows(journal: Journal) -> list[dict[str, Any]]:
    """Every paired device, oldest first."""
    if not journal.stream_version(REGISTRY_ID):
        return []
    records = sorted(journal.devices().devices.values(), key=lambda r: r.paired_at)
    return [_device_row(record) for record in records]


def _device_row(record: DeviceRecord) -> dict[str, Any]:
    return {
        "device_id": str(record.device_id),
        "name": record.display_name,
        "status": "active" if record.active else "revoked",
        "paired_at": record.paired_at.isoformat(),
        "last_seen_at": record.last_seen_at.isoformat() if record.last_seen_at else None,
        "revoked_at": record.revoked_at.isoformat() if record.revoked_at else None,
    }


def revoke_device(journal: Journal, device: str, clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """Revoke a device by id or unique prefix; its token stops working at once."""
    rows = device_rows(journal)
    matches = by_prefix(device.strip(), [row["device_id"] for row in rows])
    if len(matches) != 1:
        how = "matches several devices" if matches else "matches no paired device"
        msg = f"{device!r} {how}; see `ledgerclaw devices list`"
        raise UnknownDeviceError(msg)
    device_id = DeviceId(matches[0])
    now = clock.now()
    journal.update_devices(lambda registry: registry.revoke(device_id, now))
    return _device_row(journal.devices().devices[device_id])
