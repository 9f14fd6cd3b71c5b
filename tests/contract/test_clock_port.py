"""Contract of the Clock port, on the fake clock and on the system's clocks; contract tests.

Every test but the last takes the parametrized `clock` fixture, so the fake tells the time
the way the system clock does; the last shows what the fake adds: time a test moves.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.fakes import FakeClock


def test_now_is_an_aware_time_in_utc(clock):
    """now() carries a timezone, and it is UTC."""
    now = clock.now()

    assert isinstance(now, datetime)
    assert timedelta(0) == now.utcoffset()
    assert UTC == now.tzinfo


def test_monotonic_never_goes_back(clock):
    """Successive monotonic readings never decrease."""
    readings = [clock.monotonic() for _ in range(50)]

    assert readings == sorted(readings)
    assert all(isinstance(reading, float) for reading in readings)


def test_now_never_goes_back_across_a_few_readings(clock):
    """Readings taken one after another do not go back."""
    first, second = clock.now(), clock.now()

    assert first <= second


def test_the_fake_moves_both_clocks_by_advance_and_never_back():
    """advance() moves the wall clock and the monotonic clock together; no step back."""
    clock = FakeClock(datetime(2026, 3, 1, tzinfo=UTC), monotonic=10.0)

    clock.advance(90)

    assert (datetime(2026, 3, 1, 0, 1, 30, tzinfo=UTC), 100.0) == (clock.now(), clock.monotonic())
    with pytest.raises(ValueError, match="never goes back"):
        clock.advance(-1)
