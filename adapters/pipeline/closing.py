"""Journal commands ending an attempt the pipeline could not take to a receipt; adapter layer.

A call that is cancelled ends with a `cancelled` receipt (who cancelled it, when known). A
call that failed inside the pipeline ends as `unknown` once it was allowed (it may have
run), else as denied without asking (it did not). Both leave an attempt that already ended
as it is.
"""

from __future__ import annotations

from collections.abc import Callable

from adapters.pipeline.context import RunScope
from domain.ids import AttemptId
from domain.session.aggregate import Session
from domain.values.attempts import AttemptEnd, AttemptStatus
from domain.values.authorization import DenialCategory
from domain.values.receipts import CancelReason, OutcomeCategory, ToolReceipt


def cancel(
    run: RunScope, attempt_id: AttemptId, reason: CancelReason | None = None
) -> Callable[[Session], None]:
    """End the attempt of a cancelled call with a `cancelled` receipt, if still open."""

    def command(session: Session) -> None:
        attempt = session.attempts.get(attempt_id)
        if attempt is not None and attempt.status is not AttemptStatus.ENDED:
            receipt = ToolReceipt(outcome=OutcomeCategory.CANCELLED, cancel_reason=reason)
            session.record_receipt(run.run_id, attempt_id, receipt)

    return command


def abandon(run: RunScope, attempt_id: AttemptId) -> Callable[[Session], AttemptEnd | None]:
    """End the attempt of a call that failed: unknown once allowed, else denied unasked."""

    def command(session: Session) -> AttemptEnd | None:
        attempt = session.attempts.get(attempt_id)
        if attempt is None or attempt.status is AttemptStatus.ENDED:
            return None if attempt is None else attempt.end
        if attempt.status is AttemptStatus.ALLOWED:
            session.mark_attempt_unknown(attempt_id, "the call failed after it was allowed")
            return AttemptEnd.UNKNOWN
        detail = "the call failed before its approval was decided"
        session.deny_attempt(run.run_id, attempt_id, DenialCategory.NO_APPROVER, detail)
        return AttemptEnd.DENIED

    return command
