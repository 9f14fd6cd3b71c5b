"""What the receipt of one execution records, and how a tool's failure is classified; adapters.

The dispatcher calls these after a tool ran (or failed to decode): the receipt keeps only the
facts its outcome supports, input problems are redacted and bounded to the journal's limits,
and an exception a tool raised becomes a result the model can read.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from adapters.tools.contract import ToolOutput
from domain.ids import SpillId
from domain.tools.output import redact
from domain.values.receipts import (
    INPUT_PROBLEMS_LIMIT,
    RAN_OUTCOMES,
    InputProblem,
    OutcomeCategory,
    RemediationCode,
    ToolReceipt,
)


def receipt_of(output: ToolOutput, spill_id: SpillId | None, secrets: Iterable[str]) -> ToolReceipt:
    """The receipt of `output`: only the facts its outcome supports."""
    success = output.outcome is OutcomeCategory.SUCCESS
    correction = output.outcome is OutcomeCategory.RECOVERABLE_CORRECTION
    invalid = output.outcome is OutcomeCategory.INVALID_INPUT
    return ToolReceipt(
        outcome=output.outcome,
        file_activity=output.file_activity if success else (),
        project_declaration=output.project_declaration if success else None,
        remediation=(output.remediation or RemediationCode.REFRESH_FILE_REVISION)
        if correction
        else None,
        spill_id=spill_id,
        confinement=output.confinement,
        problems=(output.problems or _text_problem(output.text, secrets)) if invalid else (),
        shell=output.shell if output.outcome in RAN_OUTCOMES else None,
        upstream=output.upstream,
    )


def _text_problem(text: str, secrets: Iterable[str]) -> tuple[InputProblem, ...]:
    """A tool's invalid-input text as the receipt's one problem, when it named no field."""
    first = redact(text, secrets).strip().splitlines()
    message = first[0] if first else "the tool found its input invalid"
    return (InputProblem(field="arguments", message=message[:MESSAGE_LIMIT]),)


FIELD_LIMIT = 200
MESSAGE_LIMIT = 2000
"""The journal's limits for an input problem's field and message."""


def input_problems(error: ValidationError, secrets: Iterable[str]) -> tuple[InputProblem, ...]:
    """Each field that did not validate and its message, redacted, as the receipt keeps them."""
    found = []
    for problem in error.errors()[:INPUT_PROBLEMS_LIMIT]:
        where = ".".join(str(part) for part in problem["loc"]) or "arguments"
        field = redact(where, secrets)
        found.append(
            InputProblem(
                field=field if len(field) <= FIELD_LIMIT else field[: FIELD_LIMIT - 1] + "…",
                message=redact(problem["msg"], secrets)[:MESSAGE_LIMIT],
            )
        )
    return tuple(found)


def classify(error: Exception) -> ToolOutput:
    """A tool that raised: its failure as a result the model can read."""
    outcome = OutcomeCategory.TRANSIENT_FAILURE
    if isinstance(error, FileNotFoundError):
        outcome = OutcomeCategory.NOT_FOUND
    elif isinstance(error, PermissionError):
        outcome = OutcomeCategory.ACCESS_DENIED
    return ToolOutput(text=f"{type(error).__name__}: {error}", outcome=outcome)
