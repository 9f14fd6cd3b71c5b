"""One result per tool call of a reply, in the model's order, whatever happened; domain layer.

A transcript whose assistant message asks for a tool call that never gets a result is
refused by providers for good, so every call of a reply gets exactly one: the executed
result, or a synthetic one that says why the call did not run. Pairing is per assistant
message: the same call id may come back in a later turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class NotRun(StrEnum):
    """Why a call of a reply got a synthetic result instead of running."""

    STEERING = "steering"
    """The user spoke before the batch launched."""
    ROUND_LIMIT = "round_limit"
    TRUNCATED_REPLY = "truncated_reply"
    """The reply was cut by its length limit or a broken stream: its calls never run."""
    CANCELLED = "cancelled"
    """The run was aborted."""
    UNKNOWN = "unknown"
    """The process stopped while the call ran: whether it took effect is not known."""


SYNTHETIC_TEXT = {
    NotRun.STEERING: "Skipped: the user sent a new message before this call started.",
    NotRun.ROUND_LIMIT: "Skipped: the run reached its limit of turns before this call.",
    NotRun.TRUNCATED_REPLY: "Skipped: the reply was cut off, so its tool calls were not run.",
    NotRun.CANCELLED: "Cancelled: the run was aborted.",
    NotRun.UNKNOWN: "Unknown: the runtime stopped while this call ran; it may or may not "
    "have taken effect.",
}


@dataclass(frozen=True)
class CallResultMessage:
    """The result message a call of a reply gets: its text, and why it did not run if so."""

    call_id: str
    text: str
    not_run: NotRun | None = None
    is_error: bool = False


def paired_results(
    call_ids: Sequence[str],
    executed: Mapping[int, CallResultMessage],
    missing: NotRun,
) -> list[CallResultMessage]:
    """One result per call of the reply, in its order: executed ones as given, the rest synthetic.

    `executed` is keyed by the call's position in the reply, not its id, since a reply may
    repeat an id. A result given for a position the reply does not have is refused.
    """
    extra = sorted(set(executed) - set(range(len(call_ids))))
    if extra:
        msg = f"results were given for calls the reply does not have: positions {extra}"
        raise ValueError(msg)
    results = []
    for position, call_id in enumerate(call_ids):
        found = executed.get(position)
        if found is None:
            found = CallResultMessage(call_id, SYNTHETIC_TEXT[missing], missing, is_error=True)
        results.append(found)
    return results
