"""A reply's finish reason, normalised across providers, and whether its calls run; domain layer.

Providers name the end of a reply differently (`tool_calls`, `tool_use`, `stop`, `end_turn`,
`length`, `max_tokens`, …), and some report tool calls with `stop`. The raw reason is kept
beside the normalised one; only a reply that ended as a tool turn runs its calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class FinishReason(StrEnum):
    """How a reply ended, the same for every provider."""

    TOOL_CALLS = "tool_calls"
    STOP = "stop"
    LENGTH = "length"
    """Cut by the output token limit: any tool call in it may be incomplete."""
    CONTENT_FILTER = "content_filter"
    BROKEN = "broken"
    """The stream ended without a finish reason (a dropped connection, a cut stream)."""


RAW_REASONS = {
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "tool_use": FinishReason.TOOL_CALLS,
    "stop": FinishReason.STOP,
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "eos": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "content_filter": FinishReason.CONTENT_FILTER,
    "refusal": FinishReason.CONTENT_FILTER,
    "safety": FinishReason.CONTENT_FILTER,
}


def normalise_finish(raw: str | None, *, has_tool_calls: bool) -> FinishReason:
    """The normalised finish reason of a reply from its raw one and whether it has calls.

    A reply with calls that says `stop` (some OpenAI-compatible servers do) is a tool turn;
    an unknown raw reason counts as `stop` when the reply has no calls and as `tool_calls`
    when it has; no reason at all is a broken stream.
    """
    if raw is None or not raw.strip():
        return FinishReason.BROKEN
    reason = RAW_REASONS.get(raw.strip().lower())
    if reason is None or reason is FinishReason.STOP:
        return FinishReason.TOOL_CALLS if has_tool_calls else FinishReason.STOP
    return reason


@dataclass(frozen=True)
class BatchPlan:
    """Whether a reply's calls run, and if so whether together or one by one."""

    runs: bool
    parallel: bool = False


def plan_batch(
    finish: FinishReason, tool_names: Sequence[str], parallel_safe: Callable[[str], bool]
) -> BatchPlan:
    """The plan of a reply's calls: only a tool turn runs them, together only if all are safe.

    A reply cut by its length limit, filtered or broken never runs its calls, since their
    arguments may be incomplete; its calls get synthetic results instead.
    """
    if finish is not FinishReason.TOOL_CALLS or not tool_names:
        return BatchPlan(runs=False)
    together = len(tool_names) > 1 and all(parallel_safe(name) for name in tool_names)
    return BatchPlan(runs=True, parallel=together)
