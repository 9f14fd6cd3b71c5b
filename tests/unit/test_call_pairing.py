"""Every call of a reply gets exactly one result, in the model's order; unit tests."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.agent.pairing import SYNTHETIC_TEXT, CallResultMessage, NotRun, paired_results


def test_calls_that_did_not_run_get_a_synthetic_result_in_their_place() -> None:
    """The second of three calls ran; the first and third say they were skipped for steering."""
    ran = CallResultMessage("b", "3 lines")

    results = paired_results(["a", "b", "c"], {1: ran}, NotRun.STEERING)

    assert ["a", "b", "c"] == [r.call_id for r in results]
    assert [NotRun.STEERING, None, NotRun.STEERING] == [r.not_run for r in results]
    assert SYNTHETIC_TEXT[NotRun.STEERING] == results[0].text
    assert (True, False) == (results[0].is_error, results[1].is_error)


def test_a_repeated_call_id_is_paired_by_position() -> None:
    """Two calls sharing an id each get their own result."""
    results = paired_results(["x", "x"], {0: CallResultMessage("x", "first")}, NotRun.CANCELLED)

    assert ["first", SYNTHETIC_TEXT[NotRun.CANCELLED]] == [r.text for r in results]


def test_a_result_for_a_call_the_reply_does_not_have_is_refused() -> None:
    """A result at a position past the reply's calls is a typed error, not a silent extra."""
    with pytest.raises(ValueError, match="positions \\[2\\]"):
        paired_results(["a"], {2: CallResultMessage("z", "?")}, NotRun.UNKNOWN)


@given(
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=8),
    st.sets(st.integers(0, 7)),
    st.sampled_from(list(NotRun)),
)
def test_every_call_gets_exactly_one_result_in_order(
    call_ids: list[str], ran: set[int], missing: NotRun
) -> None:
    """Whatever ran, there are as many results as calls, each with its call's id."""
    executed = {p: CallResultMessage(call_ids[p], "ok") for p in ran if p < len(call_ids)}

    results = paired_results(call_ids, executed, missing)

    assert call_ids == [r.call_id for r in results]
    assert sorted(executed) == [p for p, r in enumerate(results) if r.not_run is None]
