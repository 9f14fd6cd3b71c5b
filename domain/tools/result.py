"""The one result every tool call gets, whatever ended it; domain layer."""

from __future__ import annotations

from domain.base import Value
from domain.ids import AttemptId, CallId, SpillId
from domain.values.attempts import AttemptEnd
from domain.values.authorization import DenialCategory
from domain.values.conversation import ToolName
from domain.values.receipts import OutcomeCategory, RemediationCode


class ToolResult(Value):
    """The model-facing text of one call and the trusted facts of how its attempt ended."""

    call_id: CallId
    attempt_id: AttemptId
    tool_name: ToolName
    text: str
    end: AttemptEnd
    outcome: OutcomeCategory | None = None
    denial: DenialCategory | None = None
    remediation: RemediationCode | None = None
    spill_id: SpillId | None = None

    @property
    def is_error(self) -> bool:
        """Whether the model should read this as a failure."""
        return not (self.end is AttemptEnd.RECEIPT and self.outcome is OutcomeCategory.SUCCESS)
