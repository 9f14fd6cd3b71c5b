"""The authorization attempt of a tool call: its start and its policy decision; domain layer.

An attempt starts with what the call asked and gets one policy decision: allowed, denied
(which ends it in the same save), or in need of approval (`domain.session.approvals`). How
it ends is told in `domain.session.outcomes`.
"""

from __future__ import annotations

from typing import ClassVar

from domain.ids import AttemptId, CallId, RunId
from domain.session import errors
from domain.session.events import (
    AttemptDenied,
    AuthorizationAttemptStarted,
    PolicyEvaluated,
)
from domain.session.part import Appliers, SessionPart
from domain.values.attempts import AttemptState, AttemptStatus
from domain.values.authorization import ApprovalMode, DenialCategory, PolicyDecision
from domain.values.receipts import (
    FileActivity,
    RecordedArguments,
)

_DECIDED_STATUS = {
    PolicyDecision.ALLOW: AttemptStatus.ALLOWED,
    PolicyDecision.DENY: AttemptStatus.STARTED,
    PolicyDecision.APPROVAL_REQUIRED: AttemptStatus.NEEDS_APPROVAL,
}
"""Where a policy decision leaves an attempt; a deny's own event ends it."""


class AttemptsPart(SessionPart):
    """Starting the attempts of tool calls and recording their policy decisions."""

    def start_attempt(
        self,
        run_id: RunId,
        attempt_id: AttemptId,
        call_id: CallId,
        tool_name: str,
        arguments: RecordedArguments | None = None,
    ) -> None:
        """Open the authorization attempt of one tool call, with what it asked.

        The arguments are recorded as given: redacting and bounding them is the caller's
        part (`domain.tools.arguments.record_arguments`), since only it knows the secrets.
        """
        self._require_writer(run_id)
        if attempt_id in self.attempts:
            msg = f"attempt {attempt_id} already started"
            raise errors.AttemptAlreadyStartedError(msg)
        recorded = arguments or RecordedArguments()
        # Without arguments given, the event says nothing about them rather than "none".
        self.trigger_event(
            AuthorizationAttemptStarted,
            run_id=run_id,
            attempt_id=attempt_id,
            call_id=call_id,
            tool_name=tool_name,
            arguments=None if arguments is None else recorded.arguments,
            bounded_arguments=recorded.bounded,
            arguments_spill_id=recorded.spill_id,
        )

    def evaluate_policy(  # noqa: PLR0913 - one argument per recorded fact
        self,
        run_id: RunId,
        attempt_id: AttemptId,
        decision: PolicyDecision,
        *,
        rule: str,
        detail: str = "",
        approval_mode: ApprovalMode | None = None,
        denial: DenialCategory | None = None,
        targets: tuple[FileActivity, ...] = (),
    ) -> None:
        """Record the policy decision; a deny also ends the attempt in the same save."""
        attempt = self._open_attempt(run_id, attempt_id)
        if attempt.status is not AttemptStatus.STARTED:
            msg = f"attempt {attempt_id} was already evaluated"
            raise errors.PolicyAlreadyEvaluatedError(msg)
        if decision is PolicyDecision.DENY and denial is None:
            msg = "a deny decision needs a denial category"
            raise errors.DenialCategoryMissingError(msg)
        self.trigger_event(
            PolicyEvaluated,
            run_id=run_id,
            attempt_id=attempt_id,
            decision=decision,
            rule=rule,
            detail=detail,
            approval_mode=approval_mode,
            targets=targets,
        )
        if decision is PolicyDecision.DENY:
            self.trigger_event(
                AttemptDenied,
                run_id=run_id,
                attempt_id=attempt_id,
                category=denial,
                detail=detail,
            )

    # -- state changes ---------------------------------------------------------------------

    def _attempt_started(self, event: AuthorizationAttemptStarted) -> None:
        self.attempts[event.attempt_id] = AttemptState(
            attempt_id=event.attempt_id,
            run_id=event.run_id,
            call_id=event.call_id,
            tool_name=event.tool_name,
        )

    def _policy_evaluated(self, event: PolicyEvaluated) -> None:
        status = _DECIDED_STATUS[event.decision]
        self._update_attempt(event.attempt_id, status=status, decision=event.decision)

    def _update_attempt(self, attempt_id: AttemptId, **changes: object) -> None:
        self.attempts[attempt_id] = self.attempts[attempt_id].model_copy(update=changes)

    APPLIERS: ClassVar[Appliers] = (_attempt_started, _policy_evaluated)
