"""Loop protection: repeated failures and the turn limit end a run, named; unit tests."""

from __future__ import annotations

import pytest

from domain.agent.loop_guard import (
    CallResult,
    LoopGuard,
    LoopLimits,
    Stop,
    call_signature,
)
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason

READ_MISSING = CallResult(
    call_signature("read_file", "d1"), OutcomeCategory.NOT_FOUND, "no such file: a.txt"
)
READ_OTHER = CallResult(
    call_signature("read_file", "d2"), OutcomeCategory.NOT_FOUND, "no such file: b.txt"
)
LISTED = CallResult(call_signature("list_directory", "d3"), OutcomeCategory.SUCCESS)


def turns(guard: LoopGuard, *batches: list[CallResult]) -> list[Stop | None]:
    """Each batch as one turn: asked once, then its results taken."""
    stops: list[Stop | None] = []
    for batch in batches:
        assert guard.before_turn() is None
        stops.append(guard.after_calls(batch))
    return stops


def test_the_same_call_failing_the_same_way_three_times_ends_the_run() -> None:
    """The third identical failure in a row stops the run as tool_loop_terminated."""
    stops = turns(LoopGuard(), [READ_MISSING], [READ_MISSING], [READ_MISSING])

    assert [None, None] == stops[:2]
    assert (
        Stop(
            RunEndReason.TOOL_LOOP_TERMINATED,
            "read_file failed the same way 3 times in a row (not_found)",
        )
        == stops[2]
    )


def test_a_success_between_failures_starts_the_count_again() -> None:
    """Failures that are not consecutive are not a loop."""
    guard = LoopGuard()

    stops = turns(guard, [READ_MISSING], [READ_MISSING, LISTED], [READ_MISSING], [READ_MISSING])

    assert [None] * 4 == stops


def test_five_turns_whose_calls_all_failed_end_the_run_even_when_the_calls_differ() -> None:
    """Different failing calls in five consecutive turns are a loop too."""
    guard = LoopGuard(LoopLimits(same_failure=10))

    stops = turns(guard, *([[READ_MISSING], [READ_OTHER]] * 2), [READ_MISSING])

    assert [None] * 4 == stops[:4]
    assert (
        Stop(RunEndReason.TOOL_LOOP_TERMINATED, "every call failed in 5 consecutive turns")
        == stops[4]
    )


def test_the_turn_limit_ends_the_run_as_a_strategy_stop_naming_the_limit() -> None:
    """The turn after the last allowed one is refused with the limit in words."""
    guard = LoopGuard(LoopLimits(turns=2))
    turns(guard, [LISTED], [LISTED])

    assert Stop(RunEndReason.STRATEGY_STOP, "the run reached its limit of 2 turns") == (
        guard.before_turn()
    )


def test_a_turn_without_calls_leaves_the_failed_turn_count_alone() -> None:
    """A turn that ran no call neither counts as failed nor resets the count."""
    guard = LoopGuard(LoopLimits(failed_turns=2, same_failure=10))

    stops = turns(guard, [READ_MISSING], [], [READ_OTHER])

    assert [None, None] == stops[:2]
    assert stops[2] is not None
    assert RunEndReason.TOOL_LOOP_TERMINATED == stops[2].reason


def test_a_limit_below_one_is_refused() -> None:
    """Limits of zero would end every run before it starts; they are a typed error."""
    with pytest.raises(ValueError, match="at least 1"):
        LoopLimits(turns=0)
