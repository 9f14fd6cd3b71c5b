"""The result of each way a tool call can end, worded in one place; domain layer.

Every call gets exactly one ToolResult. Whether the authorization command ends it (invalid
input, a denial, a correction), a later step does (an approval refused or expired, a target
that changed, a receipt), the runtime fails to finish it, or its host cancels it, the result
is built here, so the same ending reads the same wherever it is reached.
"""

from __future__ import annotations

from collections.abc import Container

from domain.ids import AttemptId, SpillId
from domain.tools.remediation import present
from domain.tools.result import ToolResult
from domain.values.attempts import AttemptEnd
from domain.values.authorization import DenialCategory
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import OutcomeCategory, RemediationCode


def denied(
    call: ToolCallRequest, attempt_id: AttemptId, category: DenialCategory, detail: str
) -> ToolResult:
    """A call that was denied (by exposure, policy, a path, approval or a changed target)."""
    return ToolResult(
        call_id=call.call_id,
        attempt_id=attempt_id,
        tool_name=call.name,
        text=f"Denied ({category}): {detail}",
        end=AttemptEnd.DENIED,
        denial=category,
    )


def invalid_input(call: ToolCallRequest, attempt_id: AttemptId, problem: str) -> ToolResult:
    """A call whose arguments did not decode: it ended with an `invalid_input` receipt."""
    return ToolResult(
        call_id=call.call_id,
        attempt_id=attempt_id,
        tool_name=call.name,
        text=f"Invalid arguments for {call.name}: {problem}",
        end=AttemptEnd.RECEIPT,
        outcome=OutcomeCategory.INVALID_INPUT,
    )


def corrected(
    call: ToolCallRequest,
    attempt_id: AttemptId,
    code: RemediationCode,
    detail: str,
    visible: Container[str],
) -> ToolResult:
    """A call answered with a correction: the detail, and how to fix it if that tool is seen."""
    return ToolResult(
        call_id=call.call_id,
        attempt_id=attempt_id,
        tool_name=call.name,
        text=present(detail, code, visible),
        end=AttemptEnd.CORRECTED,
        remediation=code,
    )


def finished(  # noqa: PLR0913 - the facts of one receipt
    call: ToolCallRequest,
    attempt_id: AttemptId,
    text: str,
    outcome: OutcomeCategory,
    *,
    remediation: RemediationCode | None = None,
    spill_id: SpillId | None = None,
) -> ToolResult:
    """A call that ran and ended with its receipt; `text` is already presented."""
    return ToolResult(
        call_id=call.call_id,
        attempt_id=attempt_id,
        tool_name=call.name,
        text=text,
        end=AttemptEnd.RECEIPT,
        outcome=outcome,
        remediation=remediation,
        spill_id=spill_id,
    )


def failed(
    call: ToolCallRequest, attempt_id: AttemptId, end: AttemptEnd | None, error: str
) -> ToolResult:
    """A call the runtime failed to finish (`error` names what failed): denied or unknown."""
    was_denied = end is AttemptEnd.DENIED
    text = f"The call could not be completed: the runtime failed ({error}). " + (
        "It did not run."
        if was_denied
        else "Its outcome is unknown, and it will not be run again automatically."
    )
    return ToolResult(
        call_id=call.call_id,
        attempt_id=attempt_id,
        tool_name=call.name,
        text=text,
        end=end or AttemptEnd.UNKNOWN,
        denial=DenialCategory.NO_APPROVER if was_denied else None,
    )


def cancelled(
    call: ToolCallRequest,
    attempt_id: AttemptId,
    why: str,
    end: AttemptEnd,
    outcome: OutcomeCategory | None,
) -> ToolResult:
    """A call its host cancelled (`why`: closing, stopping), with its end as recorded."""
    return ToolResult(
        call_id=call.call_id,
        attempt_id=attempt_id,
        tool_name=call.name,
        text=f"Cancelled: {why}. The call was stopped; it is recorded as {outcome or end}.",
        end=end,
        outcome=outcome,
    )
