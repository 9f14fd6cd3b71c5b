"""The result of each way a call ends, as domain/tools/endings.py words it."""

from __future__ import annotations

from domain.ids import AttemptId, CallId, SpillId
from domain.tools import endings
from domain.values.attempts import AttemptEnd
from domain.values.authorization import DenialCategory
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import OutcomeCategory, RemediationCode

CALL = ToolCallRequest(call_id=CallId("call_1"), name="read_file", arguments={"path": "a"})
ATTEMPT = AttemptId.new()


def test_a_denial_names_its_category_and_detail() -> None:
    """A denied call says why, and is an error the model reads."""
    result = endings.denied(CALL, ATTEMPT, DenialCategory.OUTSIDE_ROOTS, "/x is outside")
    assert "Denied (outside_roots): /x is outside" == result.text
    assert (AttemptEnd.DENIED, DenialCategory.OUTSIDE_ROOTS) == (result.end, result.denial)
    assert (CALL.call_id, ATTEMPT, CALL.name) == (
        result.call_id,
        result.attempt_id,
        result.tool_name,
    )
    assert result.is_error


def test_invalid_input_ends_with_a_receipt() -> None:
    """Arguments that do not decode end the attempt with an invalid_input receipt."""
    result = endings.invalid_input(CALL, ATTEMPT, "path: required")
    assert "Invalid arguments for read_file: path: required" == result.text
    assert (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT) == (result.end, result.outcome)


def test_a_correction_adds_its_instruction_only_when_its_tool_is_visible() -> None:
    """The correction's instruction names a tool the model can see, or is left out."""
    code = RemediationCode.SET_WORKING_DIRECTORY
    shown = endings.corrected(CALL, ATTEMPT, code, "no base", {"set_working_directory"})
    hidden = endings.corrected(CALL, ATTEMPT, code, "no base", set())
    assert shown.text.startswith("no base")
    assert "set_working_directory" in shown.text
    assert "no base" == hidden.text
    assert (AttemptEnd.CORRECTED, code) == (shown.end, shown.remediation)


def test_a_receipt_keeps_its_outcome_remediation_and_spill() -> None:
    """A finished call carries what its receipt recorded."""
    spill = SpillId.new()
    result = endings.finished(CALL, ATTEMPT, "text", OutcomeCategory.SUCCESS, spill_id=spill)
    assert (AttemptEnd.RECEIPT, OutcomeCategory.SUCCESS, spill) == (
        result.end,
        result.outcome,
        result.spill_id,
    )
    assert not result.is_error


def test_a_runtime_failure_says_whether_the_call_ran() -> None:
    """Denied before it ran, or unknown once it may have."""
    denied = endings.failed(CALL, ATTEMPT, AttemptEnd.DENIED, "OSError")
    unknown = endings.failed(CALL, ATTEMPT, None, "OSError")
    assert denied.text.endswith("It did not run.")
    assert (AttemptEnd.DENIED, DenialCategory.NO_APPROVER) == (denied.end, denied.denial)
    assert "will not be run again automatically" in unknown.text
    assert (AttemptEnd.UNKNOWN, None) == (unknown.end, unknown.denial)


def test_a_cancellation_says_why_and_how_it_is_recorded() -> None:
    """A host's cancellation names its reason and the attempt's recorded end."""
    result = endings.cancelled(
        CALL, ATTEMPT, "the daemon is stopping", AttemptEnd.RECEIPT, OutcomeCategory.CANCELLED
    )
    assert (
        "Cancelled: the daemon is stopping. The call was stopped; it is recorded as cancelled."
        == result.text
    )
    assert (AttemptEnd.RECEIPT, OutcomeCategory.CANCELLED) == (result.end, result.outcome)
