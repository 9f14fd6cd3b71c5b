"""Finish reasons normalised across providers, and which replies run their calls; unit tests."""

from __future__ import annotations

import pytest

from domain.agent.finish import BatchPlan, FinishReason, normalise_finish, plan_batch


@pytest.mark.parametrize(
    ("raw", "has_calls", "expected"),
    [
        ("tool_calls", True, FinishReason.TOOL_CALLS),
        ("tool_use", True, FinishReason.TOOL_CALLS),
        ("stop", True, FinishReason.TOOL_CALLS),
        ("stop", False, FinishReason.STOP),
        ("end_turn", False, FinishReason.STOP),
        ("length", True, FinishReason.LENGTH),
        ("max_tokens", True, FinishReason.LENGTH),
        ("content_filter", False, FinishReason.CONTENT_FILTER),
        ("refusal", False, FinishReason.CONTENT_FILTER),
        ("something_new", False, FinishReason.STOP),
        ("something_new", True, FinishReason.TOOL_CALLS),
        (None, True, FinishReason.BROKEN),
        ("", False, FinishReason.BROKEN),
    ],
)
def test_each_providers_raw_finish_reason_is_normalised(
    raw: str | None, has_calls: bool, expected: FinishReason
) -> None:
    """OpenAI, Anthropic and compatible servers' reasons map to one vocabulary."""
    assert expected == normalise_finish(raw, has_tool_calls=has_calls)


def safe(name: str) -> bool:
    """Read-only tools may run together in these tests."""
    return name in {"read_file", "grep"}


def test_a_batch_of_parallel_safe_tools_runs_together() -> None:
    """Two reads run at once."""
    assert BatchPlan(runs=True, parallel=True) == plan_batch(
        FinishReason.TOOL_CALLS, ["read_file", "grep"], safe
    )


def test_one_tool_that_is_not_parallel_safe_makes_the_whole_batch_sequential() -> None:
    """A write among reads sends every call one by one, in the model's order."""
    assert BatchPlan(runs=True, parallel=False) == plan_batch(
        FinishReason.TOOL_CALLS, ["read_file", "write_file", "grep"], safe
    )


@pytest.mark.parametrize(
    "finish", [FinishReason.LENGTH, FinishReason.BROKEN, FinishReason.CONTENT_FILTER]
)
def test_calls_of_a_reply_that_did_not_end_as_a_tool_turn_never_run(finish: FinishReason) -> None:
    """A cut, broken or filtered reply's calls may be incomplete: none runs."""
    assert BatchPlan(runs=False) == plan_batch(finish, ["read_file"], safe)
