"""How an authorization attempt ends: its one terminal outcome; domain layer.

An attempt ends exactly once: with a receipt, a denial, a correction, or an unknown outcome
(its run ended while it was allowed, or it was found open after a crash). The journal keeps
every attempt; the aggregate keeps the open ones and the latest ended.
"""

from __future__ import annotations

from typing import ClassVar

from domain.ids import AttemptId, RunId
from domain.session import errors
from domain.session.events import (
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    CorrectionIssued,
    ToolReceiptRecorded,
)
from domain.session.part import Appliers, SessionPart
from domain.values.attempts import RECENT_ATTEMPTS_LIMIT, AttemptEnd, AttemptStatus
from domain.values.authorization import DenialCategory
from domain.values.receipts import NOT_RUN_OUTCOMES, RemediationCode, ToolReceipt
from domain.values.runs import RunEndReason


class OutcomesPart(SessionPart):
    """Receipts, corrections, denials and unknown outcomes that end attempts."""

    def issue_correction(
        self, run_id: RunId, attempt_id: AttemptId, remediation: RemediationCode, detail: str
    ) -> None:
        """End an attempt with a remediation instead of running it."""
        self._open_attempt(run_id, attempt_id)
        self.trigger_event(
            CorrectionIssued,
            run_id=run_id,
            attempt_id=attempt_id,
            remediation=remediation,
            detail=detail,
        )

    def deny_attempt(
        self, run_id: RunId, attempt_id: AttemptId, category: DenialCategory, detail: str
    ) -> None:
        """Deny an attempt, for example when its target changed after approval."""
        self._open_attempt(run_id, attempt_id)
        self.trigger_event(
            AttemptDenied, run_id=run_id, attempt_id=attempt_id, category=category, detail=detail
        )

    def record_receipt(self, run_id: RunId, attempt_id: AttemptId, receipt: ToolReceipt) -> None:
        """Record an attempt's receipt and, if it has a state effect, the new context.

        Only an allowed attempt can have run its tool; before the allow decision a receipt
        says the tool did not run (invalid input, cancelled). A subagent keeps its working
        context for the run only, so its stream records no context change.
        """
        attempt = self._open_attempt(run_id, attempt_id)
        ran = attempt.status is AttemptStatus.ALLOWED
        if not ran and receipt.outcome not in NOT_RUN_OUTCOMES:
            msg = f"attempt {attempt_id} has no allow decision (status {attempt.status})"
            raise errors.ReceiptWithoutAllowError(msg)
        self.trigger_event(
            ToolReceiptRecorded, run_id=run_id, attempt_id=attempt_id, **dict(receipt)
        )
        self._follow_receipt(run_id, receipt)

    def mark_attempt_unknown(self, attempt_id: AttemptId, reason: str) -> None:
        """Give an open attempt the outcome `unknown`; it is never executed again."""
        attempt = self.attempts.get(attempt_id)
        if attempt is None:
            msg = f"no attempt {attempt_id} in this session"
            raise errors.UnknownAttemptError(msg)
        if attempt.status is AttemptStatus.ENDED:
            msg = f"attempt {attempt_id} already ended ({attempt.end})"
            raise errors.AttemptAlreadyEndedError(msg)
        self.trigger_event(
            AttemptOutcomeMarkedUnknown, run_id=attempt.run_id, attempt_id=attempt_id, reason=reason
        )

    def _end_run_attempts(self, run_id: RunId, reason: RunEndReason) -> None:
        for attempt in self.open_attempts():
            if attempt.run_id != run_id:
                continue
            if attempt.status is AttemptStatus.ALLOWED:
                self.trigger_event(
                    AttemptOutcomeMarkedUnknown,
                    run_id=run_id,
                    attempt_id=attempt.attempt_id,
                    reason=f"run ended: {reason}",
                )
            else:
                self.trigger_event(
                    AttemptDenied,
                    run_id=run_id,
                    attempt_id=attempt.attempt_id,
                    category=DenialCategory.RUN_ENDED,
                    detail=f"run ended ({reason}) before the attempt was allowed",
                )

    # -- state changes ---------------------------------------------------------------------

    def _correction_issued(self, event: CorrectionIssued) -> None:
        self._end_attempt(event.attempt_id, AttemptEnd.CORRECTED)

    def _attempt_denied(self, event: AttemptDenied) -> None:
        self._end_attempt(event.attempt_id, AttemptEnd.DENIED)

    def _receipt_recorded(self, event: ToolReceiptRecorded) -> None:
        self._end_attempt(
            event.attempt_id, AttemptEnd.RECEIPT, outcome=event.outcome, spill_id=event.spill_id
        )

    def _outcome_marked_unknown(self, event: AttemptOutcomeMarkedUnknown) -> None:
        self._end_attempt(event.attempt_id, AttemptEnd.UNKNOWN)

    def _end_attempt(self, attempt_id: AttemptId, end: AttemptEnd, **changes: object) -> None:
        ended = self.attempts.pop(attempt_id).model_copy(
            update={"status": AttemptStatus.ENDED, "end": end, **changes}
        )
        # Ended attempts move to the end, so the first ended one is the longest ended; only
        # the latest few are kept, so state and snapshots stay small in long sessions.
        self.attempts[attempt_id] = ended
        if ended.spill_id is not None:
            self.spills = {**self.spills, ended.call_id: ended.spill_id}
        self.ended_attempts += 1
        if self.ended_attempts > RECENT_ATTEMPTS_LIMIT:
            oldest = next(a for a, state in self.attempts.items() if state.end is not None)
            del self.attempts[oldest]

    APPLIERS: ClassVar[Appliers] = (
        _correction_issued,
        _attempt_denied,
        _receipt_recorded,
        _outcome_marked_unknown,
    )
