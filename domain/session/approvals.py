"""Asking an operator about an attempt, and recording the answer; domain layer.

An approval beyond one call leaves a standing grant. A rejected or expired approval denies
its attempt in the same save.
"""

from __future__ import annotations

from typing import ClassVar

from domain.ids import AttemptId, RunId
from domain.session import errors
from domain.session.events import ApprovalDecided, ApprovalRequested, AttemptDenied
from domain.session.part import Appliers, SessionPart
from domain.values.attempts import AttemptStatus
from domain.values.authorization import (
    ApprovalGrant,
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    denial_for_verdict,
)


class ApprovalsPart(SessionPart):
    """Approval requests and decisions of the attempts that need consent."""

    def request_approval(
        self,
        run_id: RunId,
        attempt_id: AttemptId,
        summary: str,
        mode: ApprovalMode,
        grant_key: str = "",
    ) -> None:
        """Ask an operator; the attempt stays open until the decision."""
        attempt = self._open_attempt(run_id, attempt_id)
        if attempt.status is not AttemptStatus.NEEDS_APPROVAL:
            msg = f"attempt {attempt_id} does not need approval (status {attempt.status})"
            raise errors.ApprovalNotRequiredError(msg)
        self.trigger_event(
            ApprovalRequested,
            run_id=run_id,
            attempt_id=attempt_id,
            summary=summary,
            mode=mode,
            grant_key=grant_key,
        )

    def decide_approval(
        self,
        attempt_id: AttemptId,
        verdict: ApprovalVerdict,
        decided_by: str,
        scope: ApprovalScope = ApprovalScope.ONCE,
        directory: str | None = None,
    ) -> None:
        """Record the operator's answer; a rejection or expiry also denies the attempt.

        A directory-scoped answer names its directory, and only a request with a grant key
        can be approved beyond this one call.
        """
        attempt = self.attempts.get(attempt_id)
        if attempt is None or attempt.status is not AttemptStatus.APPROVAL_PENDING:
            msg = f"attempt {attempt_id} has no pending approval request"
            raise errors.ApprovalNotPendingError(msg)
        if (scope is ApprovalScope.DIRECTORY) != (directory is not None):
            msg = "a directory-scoped approval, and only it, names a directory"
            raise errors.InvalidApprovalScopeError(msg)
        if scope is not ApprovalScope.ONCE and not attempt.grant_key:
            msg = f"attempt {attempt_id} can only be approved once"
            raise errors.InvalidApprovalScopeError(msg)
        self.trigger_event(
            ApprovalDecided,
            run_id=attempt.run_id,
            attempt_id=attempt_id,
            verdict=verdict,
            scope=scope,
            decided_by=decided_by,
            directory=directory,
        )
        if verdict is not ApprovalVerdict.APPROVED:
            self.trigger_event(
                AttemptDenied,
                run_id=attempt.run_id,
                attempt_id=attempt_id,
                category=denial_for_verdict(verdict),
                detail=f"approval {verdict} by {decided_by}",
            )

    # -- state changes ---------------------------------------------------------------------

    def _approval_requested(self, event: ApprovalRequested) -> None:
        self._update_attempt(
            event.attempt_id, status=AttemptStatus.APPROVAL_PENDING, grant_key=event.grant_key
        )

    def _approval_decided(self, event: ApprovalDecided) -> None:
        approved = event.verdict is ApprovalVerdict.APPROVED
        status = AttemptStatus.ALLOWED if approved else AttemptStatus.APPROVAL_PENDING
        self._update_attempt(event.attempt_id, status=status)
        if approved and event.scope is not ApprovalScope.ONCE:
            key = self.attempts[event.attempt_id].grant_key
            grant = ApprovalGrant(key=key, directory=event.directory)
            if grant not in self.approval_grants:
                self.approval_grants = (*self.approval_grants, grant)

    APPLIERS: ClassVar[Appliers] = (_approval_requested, _approval_decided)
