"""Story tests for what an attempt records: its arguments, input problems, shell facts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from domain.ids import SpillId
from domain.session.events import AuthorizationAttemptStarted, ToolReceiptRecorded
from domain.values.authorization import PolicyDecision
from domain.values.receipts import (
    InputProblem,
    OutcomeCategory,
    RecordedArguments,
    RemediationCode,
    ShellRun,
    ToolReceipt,
)
from tests.unit.session_story import (
    ATTEMPT,
    CALL,
    RUN,
    TOOL,
    attempt_started,
    evaluated,
    history,
    when,
    writer,
)

SPILL = SpillId("spl_" + "0" * 31 + "7")
DIGEST = {"sha256": "ab" * 32, "size": 5000, "head": "lorem"}
SHELL = ShellRun(
    command="touch made.txt",
    cwd="/work",
    exit_code=0,
    duration_ms=12,
    output_bytes=0,
    candidates=("/work", "/work/made.txt"),
)


def test_an_attempt_records_the_arguments_it_was_given() -> None:
    """The start carries the recorded arguments, their bounded pointers and spill."""
    recorded = RecordedArguments(
        arguments={"path": "a.txt", "content": DIGEST}, bounded=("/content",), spill_id=SPILL
    )
    given = history(writer())

    [started] = when(given, lambda s: s.start_attempt(RUN, ATTEMPT, CALL, TOOL, recorded))

    assert isinstance(started, AuthorizationAttemptStarted)
    assert ({"path": "a.txt", "content": DIGEST}, ("/content",), SPILL) == (
        started.arguments,
        started.bounded_arguments,
        started.arguments_spill_id,
    )


def test_an_attempt_started_without_arguments_says_nothing_about_them() -> None:
    """No recorded arguments given: the event holds None, not an empty object."""
    [started] = when(history(writer()), attempt_started())

    assert (None, (), None) == (
        started.arguments,
        started.bounded_arguments,
        started.arguments_spill_id,
    )


def test_an_invalid_input_receipt_records_each_field_and_message() -> None:
    """The receipt of arguments that did not decode names the fields and why."""
    problems = (
        InputProblem(field="path", message="Field required"),
        InputProblem(field="limit", message="Input should be a valid integer"),
    )
    receipt = ToolReceipt(outcome=OutcomeCategory.INVALID_INPUT, problems=problems)

    [recorded] = when(
        history(writer(), attempt_started()), lambda s: s.record_receipt(RUN, ATTEMPT, receipt)
    )

    assert isinstance(recorded, ToolReceiptRecorded)
    assert problems == recorded.problems


def test_a_shell_receipt_records_the_command_and_how_it_ran() -> None:
    """A command's receipt keeps its text, directory, exit, duration, output size, candidates."""
    receipt = ToolReceipt(outcome=OutcomeCategory.SUCCESS, shell=SHELL)
    given = history(writer(), evaluated(PolicyDecision.ALLOW))

    [recorded] = when(given, lambda s: s.record_receipt(RUN, ATTEMPT, receipt))

    assert SHELL == recorded.shell


def test_a_timed_out_command_keeps_its_shell_facts_without_an_exit_code() -> None:
    """A timeout is a transient failure whose shell facts say it did not exit by itself."""
    facts = SHELL.model_copy(update={"exit_code": None, "timed_out": True})

    receipt = ToolReceipt(outcome=OutcomeCategory.TRANSIENT_FAILURE, shell=facts)

    assert receipt.shell is not None
    assert (None, True) == (receipt.shell.exit_code, receipt.shell.timed_out)


@pytest.mark.parametrize(
    "outcome", [o for o in OutcomeCategory if o is not OutcomeCategory.INVALID_INPUT]
)
def test_only_an_invalid_input_receipt_lists_input_problems(outcome: OutcomeCategory) -> None:
    """Problems on any other outcome are refused when the receipt is built."""
    problem = InputProblem(field="path", message="Field required")

    correction = outcome is OutcomeCategory.RECOVERABLE_CORRECTION
    remediation = RemediationCode.LOAD_TOOL if correction else None

    with pytest.raises(ValidationError, match="only an invalid-input receipt"):
        ToolReceipt(outcome=outcome, problems=(problem,), remediation=remediation)


@pytest.mark.parametrize(("exit_code", "timed_out"), [(None, False), (0, True)])
def test_a_command_has_an_exit_code_unless_it_timed_out(
    exit_code: int | None, *, timed_out: bool
) -> None:
    """Shell facts that say both or neither of exited and timed out are refused."""
    with pytest.raises(ValidationError, match="no exit code"):
        ShellRun(command="sleep 9", cwd="/work", exit_code=exit_code, timed_out=timed_out)


@pytest.mark.parametrize(
    "outcome",
    [
        OutcomeCategory.INVALID_INPUT,
        OutcomeCategory.NOT_FOUND,
        OutcomeCategory.CANCELLED,
        OutcomeCategory.UNKNOWN,
    ],
)
def test_only_a_command_that_ran_has_shell_facts(outcome: OutcomeCategory) -> None:
    """A receipt of a command that never started carries no shell facts."""
    with pytest.raises(ValidationError, match="shell facts"):
        ToolReceipt(outcome=outcome, shell=SHELL)
