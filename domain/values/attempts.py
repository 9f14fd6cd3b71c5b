"""Where one authorization attempt of a tool call stands, and how it ended; domain layer."""

from __future__ import annotations

from enum import StrEnum

from domain.base import Value
from domain.ids import AttemptId, CallId, RunId, SpillId
from domain.text import GrantKey
from domain.values.authorization import PolicyDecision
from domain.values.conversation import ToolName
from domain.values.receipts import OutcomeCategory

RECENT_ATTEMPTS_LIMIT = 64
"""How many ended attempts a session's state keeps beside its open ones; the journal keeps all."""


class AttemptStatus(StrEnum):
    """Where an authorization attempt stands."""

    STARTED = "started"
    ALLOWED = "allowed"
    NEEDS_APPROVAL = "needs_approval"
    APPROVAL_PENDING = "approval_pending"
    ENDED = "ended"


class AttemptEnd(StrEnum):
    """The one terminal outcome an attempt received."""

    RECEIPT = "receipt"
    DENIED = "denied"
    CORRECTED = "corrected"
    UNKNOWN = "unknown"


class AttemptState(Value):
    """The lifecycle of one authorization attempt."""

    attempt_id: AttemptId
    run_id: RunId
    call_id: CallId
    tool_name: ToolName
    status: AttemptStatus = AttemptStatus.STARTED
    decision: PolicyDecision | None = None
    end: AttemptEnd | None = None
    outcome: OutcomeCategory | None = None
    grant_key: GrantKey = ""
    spill_id: SpillId | None = None
