"""What the terminal chat shows, entry by entry, as plain data; CLI layer.

Each entry has a stable `key` and a `version` that grows on every change, so the view can
mount a widget per key and redraw only what changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

USER, ASSISTANT = "user", "assistant"


@dataclass
class Entry:
    """Something shown in the conversation."""

    key: str
    version: int = field(default=0, kw_only=True)

    def touch(self) -> None:
        """Note a change, so the view redraws this entry."""
        self.version += 1


@dataclass
class Said(Entry):
    """A message of the user or the assistant; `state` is empty once it is journaled."""

    role: str
    text: str
    state: str = ""
    """For a message not journaled yet: `sending`, `steering`, `waiting for the daemon`, …"""
    client_run_id: str | None = None


@dataclass
class Streaming(Entry):
    """The answer as it streams, until the journaled message replaces it."""

    run_id: str
    text: str = ""


@dataclass
class ToolCall(Entry):
    """One tool call the model asked for, and what became of it."""

    run_id: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    attempt_id: str | None = None
    status: str = "asked"
    """`asked`, `running`, `awaiting approval`, then its outcome (`success`, …)."""
    answered: bool = False
    failed: bool = False
    result: str | None = None
    """What the tool answered the model (the journaled tool message)."""
    notes: list[str] = field(default_factory=list)
    """Approvals, denials and corrections on its way, in order."""
    targets: tuple[str, ...] = ()
    expanded: bool = False


@dataclass
class ApprovalPrompt(Entry):
    """A call waiting for consent, answered inline."""

    approval_id: str
    tool: str
    summary: str
    targets: tuple[str, ...] = ()
    can_widen: bool = False
    covers: str | None = None
    """Whom approving it for the session covers, when the daemon says."""
    asked_by: str | None = None
    answering: str | None = None
    """The choice sent, while its answer is awaited."""
    problem: str = ""
    """Why the last answer was refused."""
    run_id: str | None = None


@dataclass
class Attachment(Entry):
    """A file the agent sent, or one received with a message: its name and what is known."""

    event: str
    name: str
    media_type: str | None = None
    size: int | None = None
    sha256: str | None = None
    refused: str | None = None
    """For a file received with a message and not admitted: why."""


@dataclass
class Notice(Entry):
    """A line about the conversation rather than in it: a run's end, a failure, a reconnect."""

    text: str
    tone: str = "info"
    """`info`, `warning` or `error`."""
