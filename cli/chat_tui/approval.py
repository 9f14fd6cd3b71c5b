"""The answers an approval prompt offers, and the gateway request each one sends; CLI layer.

A prompt offers: approve once, for the rest of this session, for this directory (only when
the request can be granted wider and names paths: the directory is their common parent), or
deny. The daemon's `approvals.resolve` takes the choice as it is; a daemon without it is
answered through `approvals.decide` with the same meaning.
"""

from __future__ import annotations

import posixpath
from enum import StrEnum
from typing import Any

from cli.chat_tui.entries import ApprovalPrompt

RESOLVE, DECIDE = "approvals.resolve", "approvals.decide"


class Choice(StrEnum):
    """One answer to an approval prompt, named as `approvals.resolve` names it."""

    ONCE = "once"
    SESSION = "session"
    DIRECTORY = "directory"
    DENY = "deny"


LABELS = {
    Choice.ONCE: "approve once",
    Choice.SESSION: "this session",
    Choice.DIRECTORY: "this directory",
    Choice.DENY: "deny",
}


def common_parent(targets: tuple[str, ...]) -> str | None:
    """The deepest directory holding every target (the parent of each path); None if none."""
    parents = [posixpath.dirname(posixpath.normpath(t)) for t in targets if t.startswith("/")]
    if not parents:
        return None
    return posixpath.commonpath(parents)


def directory_of(prompt: ApprovalPrompt) -> str | None:
    """The directory a `this directory` answer would cover, when the prompt offers it."""
    return common_parent(prompt.targets) if prompt.can_widen else None


def choices(prompt: ApprovalPrompt) -> list[Choice]:
    """The answers the prompt offers, in the order they are shown."""
    offered = [Choice.ONCE]
    if prompt.can_widen:
        offered.append(Choice.SESSION)
        if directory_of(prompt) is not None:
            offered.append(Choice.DIRECTORY)
    offered.append(Choice.DENY)
    return offered


def answer_request(
    prompt: ApprovalPrompt, choice: Choice, methods: frozenset[str]
) -> tuple[str, dict[str, Any]]:
    """The method and params that answer `prompt` with `choice` on a daemon offering `methods`."""
    if choice not in choices(prompt):
        msg = f"{choice} is not offered for approval {prompt.approval_id}"
        raise ValueError(msg)
    directory = directory_of(prompt) if choice is Choice.DIRECTORY else None
    if RESOLVE in methods or DECIDE not in methods:
        params: dict[str, Any] = {"id": prompt.approval_id, "decision": str(choice)}
        if directory is not None:
            params["directory"] = directory
        return RESOLVE, params
    verdict = "rejected" if choice is Choice.DENY else "approved"
    scope = "once" if choice is Choice.DENY else str(choice)
    params = {"id": prompt.approval_id, "verdict": verdict, "scope": scope}
    if directory is not None:
        params["directory"] = directory
    return DECIDE, params
