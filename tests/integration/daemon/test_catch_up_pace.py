"""The wait between the daemon's projection catch-ups; tests of the pacing rule."""

from __future__ import annotations

from adapters.daemon.catch_up_pace import BUSY_LAG_SECONDS, CatchUpPace


def test_a_quiet_daemon_catches_up_every_interval() -> None:
    """With nothing found, or no call arriving, the wait stays the configured interval."""
    pace = CatchUpPace(0.1)
    waits = [
        pace.after(applied=0, calls_arrived=True),
        pace.after(applied=5, calls_arrived=False),
        pace.after(applied=0, calls_arrived=False),
    ]
    assert [0.1, 0.1, 0.1] == waits


def test_the_wait_doubles_while_calls_flow_up_to_the_ceiling() -> None:
    """Each catch-up that found work while calls arrived doubles the wait, up to one second."""
    pace = CatchUpPace(0.1)
    waits = [pace.after(applied=3, calls_arrived=True) for _ in range(6)]
    assert [0.2, 0.4, 0.8, BUSY_LAG_SECONDS, BUSY_LAG_SECONDS, BUSY_LAG_SECONDS] == waits


def test_the_wait_drops_back_once_the_calls_stop() -> None:
    """The first catch-up after the calls stop brings the wait back to the interval."""
    pace = CatchUpPace(0.5)
    assert BUSY_LAG_SECONDS == pace.after(applied=40, calls_arrived=True)
    assert 0.5 == pace.after(applied=2, calls_arrived=False)


def test_a_long_interval_is_never_shortened_or_lengthened() -> None:
    """An interval longer than the ceiling is the wait, busy or not."""
    pace = CatchUpPace(5.0)
    assert [5.0, 5.0] == [pace.after(applied=9, calls_arrived=True) for _ in range(2)]
