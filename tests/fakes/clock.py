"""The Clock port as a test decides it: time stands still until the test moves it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

START = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


class FakeClock:
    """A wall clock and a monotonic clock that move only by `advance`, together."""

    def __init__(self, start: datetime = START, monotonic: float = 1000.0) -> None:
        self._now = start.astimezone(UTC)
        self._monotonic = monotonic

    def now(self) -> datetime:
        """The time the test set, in UTC."""
        return self._now

    def monotonic(self) -> float:
        """The monotonic seconds the test set."""
        return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both clocks forward by `seconds` (never back)."""
        if seconds < 0:
            msg = "a clock never goes back"
            raise ValueError(msg)
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds
