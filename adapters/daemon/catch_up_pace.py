"""How long the daemon waits between projection catch-ups (longer while calls flow); adapter layer.

A catch-up has a fixed cost (a connection, the positions, the tables' check, a write
transaction that every journal commit then queues behind) besides its cost per event. While
calls keep arriving there is always something to catch up, so catching up every
`projection_interval_seconds` pays that fixed cost many times a second for a few events
each time. Instead, after a catch-up that found work while calls were arriving, the wait
doubles, up to `BUSY_LAG_SECONDS` (or the interval, if that is longer); as soon as a
catch-up finds nothing or no call arrived, the wait is the interval again. Read models are
thus never more than that ceiling, plus one catch-up, behind the journal; a query run by
the command line catches up before it answers anyway.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BUSY_LAG_SECONDS = 1.0
"""The longest wait between catch-ups while calls flow (unless the interval is longer)."""


@dataclass
class CatchUpPace:
    """The wait before the next catch-up, from what the last one found."""

    interval: float
    """`projection_interval_seconds`: the wait while the daemon is quiet."""
    ceiling: float = field(init=False)
    wait: float = field(init=False)

    def __post_init__(self) -> None:
        self.ceiling = max(self.interval, BUSY_LAG_SECONDS)
        self.wait = self.interval

    def after(self, *, applied: int, calls_arrived: bool) -> float:
        """The wait after a catch-up that applied `applied` events; longer while calls flow."""
        if applied and calls_arrived:
            self.wait = min(self.wait * 2, self.ceiling)
        else:
            self.wait = self.interval
        return self.wait
