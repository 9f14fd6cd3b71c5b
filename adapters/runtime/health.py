"""What every hosting process reports about its sessions and calls; adapter layer."""

from __future__ import annotations

import os
from typing import Any

from adapters.runtime.approvals import PendingApprovals
from adapters.runtime.session_host import SessionHost


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
