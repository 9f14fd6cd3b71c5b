"""The system's clocks behind the `Clock` port; adapter layer.

`SYSTEM_CLOCK` is what the product runs on. Code that records a time or bounds a wait on
the wall clock takes a `Clock` (defaulting to this one), so a test can hand it a fake and
decide what time it is: the approvals' `asked_at`, a device's revocation time, the ages
(`7d`, `24h`) of the audit filters, and the journal's conflict timeout. Waits on the event
loop (approval timeouts, idle sessions) stay on anyio's own clock.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime


class SystemClock:
    """The operating system's wall clock (in UTC) and its monotonic clock."""

    def now(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """Seconds on the monotonic clock."""
        return time.monotonic()


SYSTEM_CLOCK = SystemClock()
"""The one system clock every default uses."""
