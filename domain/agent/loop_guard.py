"""Loop protection for an agent run: repeated failures and the turn limit end it; domain layer.

A model that calls the same tool the same way and fails the same way again is stuck, and so
is one whose every call keeps failing turn after turn. The guard watches the results of each
turn and names the reason to end the run; the limits come from the `[agent]` configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason


@dataclass(frozen=True)
class LoopLimits:
    """The limits of one run."""

    same_failure: int = 3
    """The same call failing the same way this many times in a row ends the run."""
    failed_turns: int = 5
    """This many consecutive turns whose calls all failed end the run."""
    turns: int = 50
    """The most turns of one run."""

    def __post_init__(self) -> None:
        if min(self.same_failure, self.failed_turns, self.turns) < 1:
            msg = "agent loop limits must each be at least 1"
            raise ValueError(msg)


@dataclass(frozen=True)
class CallResult:
    """What the guard needs to know of one executed call."""

    signature: str
    """The call's tool name and a digest of its arguments: equal for the same call."""
    outcome: OutcomeCategory
    detail: str = ""
    """What the failure said; equal details are the same failure."""

    @property
    def failed(self) -> bool:
        """Whether the call did not succeed."""
        return self.outcome is not OutcomeCategory.SUCCESS


@dataclass(frozen=True)
class Stop:
    """The reason to end a run and the limit that was reached, in words."""

    reason: RunEndReason
    detail: str


@dataclass
class LoopGuard:
    """The loop protection state of one run, fed each turn's call results."""

    limits: LoopLimits = field(default_factory=LoopLimits)
    turns: int = 0
    failed_turns: int = 0
    _last_failure: tuple[str, OutcomeCategory, str] | None = None
    _repeats: int = 0

    def before_turn(self) -> Stop | None:
        """Whether the run may ask the model once more; a stop names the turn limit."""
        if self.turns >= self.limits.turns:
            detail = f"the run reached its limit of {self.limits.turns} turns"
            return Stop(RunEndReason.STRATEGY_STOP, detail)
        self.turns += 1
        return None

    def after_calls(self, results: Sequence[CallResult]) -> Stop | None:
        """Take a turn's executed calls, in the model's order; a stop if the run is looping."""
        for result in results:
            stop = self._take(result)
            if stop is not None:
                return stop
        if results and all(result.failed for result in results):
            self.failed_turns += 1
        elif results:
            self.failed_turns = 0
        if self.failed_turns >= self.limits.failed_turns:
            detail = f"every call failed in {self.failed_turns} consecutive turns"
            return Stop(RunEndReason.TOOL_LOOP_TERMINATED, detail)
        return None

    def _take(self, result: CallResult) -> Stop | None:
        if not result.failed:
            self._last_failure, self._repeats = None, 0
            return None
        failure = (result.signature, result.outcome, result.detail)
        self._repeats = self._repeats + 1 if failure == self._last_failure else 1
        self._last_failure = failure
        if self._repeats >= self.limits.same_failure:
            name = result.signature.split(":", 1)[0]
            detail = f"{name} failed the same way {self._repeats} times in a row ({result.outcome})"
            return Stop(RunEndReason.TOOL_LOOP_TERMINATED, detail)
        return None


def call_signature(name: str, arguments_digest: str) -> str:
    """The signature the guard compares calls by: the tool's name and its arguments' digest."""
    return f"{name}:{arguments_digest}"
