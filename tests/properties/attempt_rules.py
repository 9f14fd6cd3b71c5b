"""The Session state machine's rules for authorization attempts; properties.

They start attempts and take them through policy, approval, receipt, correction and unknown
outcome, each refusal predicted by the model.
"""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import strategies as st
from hypothesis.stateful import MultipleResults, multiple, precondition, rule

from domain.ids import AttemptId, CallId, SessionId
from domain.session import errors
from domain.session.aggregate import Session
from domain.values.attempts import AttemptEnd, AttemptStatus
from domain.values.audience import SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    PolicyDecision,
)
from domain.values.receipts import NOT_RUN_OUTCOMES, OutcomeCategory, RemediationCode, ToolReceipt
from domain.values.storage import RECENT_FILES_LIMIT
from tests import strategies
from tests.properties.session_model import (
    ATTEMPTS,
    OPEN,
    RUNS,
    SESSIONS,
    AttemptRef,
    Refusal,
    RunRef,
    SessionModelMixin,
    Target,
    context_after,
)

FILES = [f"/srv/project/file{i}" for i in range(RECENT_FILES_LIMIT + 4)]
RECEIPTS = strategies.tool_receipts(
    paths=st.sampled_from(FILES[:3]) | st.sampled_from(FILES),
    max_files=RECENT_FILES_LIMIT + 2,
    outcomes=st.just(OutcomeCategory.SUCCESS) | st.sampled_from(OutcomeCategory),
)
"""Receipts, half of them successes, over a few files, so files recur and the list overflows."""
DECISIONS = st.sampled_from(
    [PolicyDecision.ALLOW, PolicyDecision.APPROVAL_REQUIRED]
) | st.sampled_from(PolicyDecision)
"""Policy decisions that lean towards the ones that keep an attempt open."""
MAX_OPEN_ATTEMPTS = 2
"""A bound that keeps a run of the machine on a few attempts, where lifecycles run to the end."""


class AttemptRulesMixin(SessionModelMixin):
    """Attempt rules, mixed into the Session machine, which supplies `_execute` and `_steer`."""

    _execute: Callable[[SessionId, Callable[[Session], object], Refusal], bool]
    """Run a command through the journal, or check that it is refused as predicted."""
    _steer: Callable[[st.DataObject, Target, list[Target]], Target]
    """Swap in a target the model expects to succeed, or keep the one drawn from a bundle."""

    def _attempt_actor(
        self,
        data: st.DataObject,
        attempt: Target,
        stranger: Target | None,
        ready: tuple[AttemptStatus, ...],
    ) -> Target:
        """The (session, run, attempt) a command acts as.

        Either an attempt in a `ready` status, acting as its own run; or the drawn attempt,
        acted on by its own run or by a stranger's run (perhaps of another session).
        """
        steered = self._steer(data, attempt, self._attempts_in(*ready))
        if steered is not attempt or stranger is None:
            return steered
        return (stranger[0], stranger[1], attempt[2])

    @precondition(lambda self: len(self._attempts_in(*OPEN)) < MAX_OPEN_ATTEMPTS)
    @rule(
        target=ATTEMPTS,
        run=RUNS,
        data=st.data(),
        attempt_id=strategies.attempt_ids(),
        call_id=strategies.call_ids(),
        tool_name=strategies.tool_names(),
    )
    def start_attempt(
        self,
        run: RunRef,
        data: st.DataObject,
        attempt_id: AttemptId,
        call_id: CallId,
        tool_name: str,
    ) -> AttemptRef | MultipleResults[AttemptRef]:
        """Only the writer starts an attempt, and an attempt id is used once per session."""
        session_id, run_id = self._steer(data, run, self._writers())
        return self._start_attempt((session_id, run_id, attempt_id), call_id, tool_name)

    def _start_attempt(
        self, actor: AttemptRef, call_id: CallId, tool_name: str
    ) -> AttemptRef | MultipleResults[AttemptRef]:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._writer_refusal(model, run_id)
        if refusal is None and attempt_id in model["attempts"]:
            refusal = errors.AttemptAlreadyStartedError
        if not self._execute(
            session_id, lambda s: s.start_attempt(run_id, attempt_id, call_id, tool_name), refusal
        ):
            return multiple()
        model["attempts"][attempt_id] = {
            "run": run_id,
            "status": AttemptStatus.STARTED,
            "decision": None,
            "end": None,
            "outcome": None,
        }
        model["version"] += 1
        return actor

    @precondition(lambda self: self._writers())
    @rule(
        target=ATTEMPTS,
        data=st.data(),
        attempt_id=strategies.attempt_ids(),
        call_id=strategies.call_ids(),
        tool_name=strategies.tool_names(),
    )
    def perform_a_tool_call(
        self, data: st.DataObject, attempt_id: AttemptId, call_id: CallId, tool_name: str
    ) -> AttemptRef | MultipleResults[AttemptRef]:
        """A writer takes one tool call through its lifecycle, one command per step.

        The granular rules interleave these steps with everything else; this rule makes
        sure whole lifecycles, approvals and receipts included, happen in most runs.
        """
        session_id, run_id = data.draw(st.sampled_from(self._writers()), label="writer")
        actor = (session_id, run_id, attempt_id)
        started = self._start_attempt(actor, call_id, tool_name)
        for _ in range(len(OPEN)):
            if self._status(self.model[session_id], attempt_id) not in OPEN:
                break
            self._advance(data, actor)
        return started

    def _evaluate(
        self, actor: Target, decision: PolicyDecision, denial: DenialCategory | None
    ) -> None:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if refusal is None and self._status(model, attempt_id) is not AttemptStatus.STARTED:
            refusal = errors.PolicyAlreadyEvaluatedError
        if refusal is None and decision is PolicyDecision.DENY and denial is None:
            refusal = errors.DenialCategoryMissingError
        if not self._execute(
            session_id,
            lambda s: s.evaluate_policy(run_id, attempt_id, decision, rule="r", denial=denial),
            refusal,
        ):
            return
        status = {
            PolicyDecision.ALLOW: AttemptStatus.ALLOWED,
            PolicyDecision.APPROVAL_REQUIRED: AttemptStatus.NEEDS_APPROVAL,
            PolicyDecision.DENY: AttemptStatus.STARTED,
        }[decision]
        self._update_attempt(model, attempt_id, status=status, decision=decision)
        if decision is PolicyDecision.DENY:
            self._end_attempt(model, attempt_id, AttemptEnd.DENIED)

    def _request_approval(self, actor: Target, mode: ApprovalMode) -> None:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if refusal is None and self._status(model, attempt_id) is not AttemptStatus.NEEDS_APPROVAL:
            refusal = errors.ApprovalNotRequiredError
        if self._execute(
            session_id,
            lambda s: s.request_approval(run_id, attempt_id, "may I?", mode, "tool"),
            refusal,
        ):
            self._update_attempt(model, attempt_id, status=AttemptStatus.APPROVAL_PENDING)

    def _decide(
        self,
        session_id: SessionId,
        attempt_id: AttemptId,
        verdict: ApprovalVerdict,
        scope: ApprovalScope,
    ) -> None:
        model = self.model[session_id]
        pending = self._status(model, attempt_id) is AttemptStatus.APPROVAL_PENDING
        refusal = None if pending else errors.ApprovalNotPendingError
        directory = "/work" if scope is ApprovalScope.DIRECTORY else None
        if not self._execute(
            session_id,
            lambda s: s.decide_approval(attempt_id, verdict, "operator", scope, directory),
            refusal,
        ):
            return
        approved = verdict is ApprovalVerdict.APPROVED
        status = AttemptStatus.ALLOWED if approved else AttemptStatus.APPROVAL_PENDING
        self._update_attempt(model, attempt_id, status=status)
        if not approved:
            self._end_attempt(model, attempt_id, AttemptEnd.DENIED)

    def _record_receipt(self, actor: Target, receipt: ToolReceipt) -> None:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        allowed = self._status(model, attempt_id) is AttemptStatus.ALLOWED
        if refusal is None and not allowed and receipt.outcome not in NOT_RUN_OUTCOMES:
            refusal = errors.ReceiptWithoutAllowError
        if not self._execute(
            session_id, lambda s: s.record_receipt(run_id, attempt_id, receipt), refusal
        ):
            return
        self._end_attempt(model, attempt_id, AttemptEnd.RECEIPT, outcome=receipt.outcome)
        success = receipt.outcome is OutcomeCategory.SUCCESS
        if (
            success
            and model["kind"] is SessionKind.MAIN
            and (receipt.file_activity or receipt.project_declaration)
        ):
            context = context_after(model["context"], receipt)
            if context != model["context"]:
                model["context"] = context
                model["version"] += 1

    @precondition(lambda self: self._attempts_in(*OPEN))
    @rule(data=st.data())
    def advance_an_open_attempt(self, data: st.DataObject) -> None:
        """An open attempt takes its next step: policy, approval request, decision or receipt.

        One rule for every step, favouring the attempts furthest along, keeps whole
        lifecycles within a run of the machine.
        """
        by_progress = [a for status in reversed(OPEN) for a in self._attempts_in(status)]
        self._advance(data, data.draw(st.sampled_from(by_progress), label="attempt"))

    def _advance(self, data: st.DataObject, actor: AttemptRef) -> None:
        """The next step of an open attempt, as the runtime would take it."""
        status = self.model[actor[0]]["attempts"][actor[2]]["status"]
        if status is AttemptStatus.STARTED:
            decision = data.draw(DECISIONS, label="decision")
            self._evaluate(actor, decision, data.draw(st.sampled_from(DenialCategory)))
        elif status is AttemptStatus.NEEDS_APPROVAL:
            self._request_approval(actor, data.draw(st.sampled_from(ApprovalMode), label="mode"))
        elif status is AttemptStatus.APPROVAL_PENDING:
            verdict = data.draw(st.sampled_from(ApprovalVerdict), label="verdict")
            self._decide(actor[0], actor[2], verdict, ApprovalScope.ONCE)
        else:
            self._record_receipt(actor, data.draw(RECEIPTS, label="receipt"))

    @rule(
        attempt=ATTEMPTS,
        stranger=st.none() | RUNS,
        data=st.data(),
        decision=st.sampled_from(PolicyDecision),
        denial=st.none() | st.sampled_from(DenialCategory),
    )
    def evaluate_policy(
        self,
        attempt: AttemptRef,
        stranger: RunRef | None,
        data: st.DataObject,
        decision: PolicyDecision,
        denial: DenialCategory | None,
    ) -> None:
        """Policy decides an open attempt once; a deny needs a category and ends the attempt."""
        started = (AttemptStatus.STARTED,)
        self._evaluate(self._attempt_actor(data, attempt, stranger, started), decision, denial)

    @rule(
        attempt=ATTEMPTS,
        stranger=st.none() | RUNS,
        data=st.data(),
        mode=st.sampled_from(ApprovalMode),
    )
    def request_approval(
        self, attempt: AttemptRef, stranger: RunRef | None, data: st.DataObject, mode: ApprovalMode
    ) -> None:
        """Approval is requested only for an open attempt whose policy asked for it."""
        waiting = (AttemptStatus.NEEDS_APPROVAL,)
        self._request_approval(self._attempt_actor(data, attempt, stranger, waiting), mode)

    @rule(
        attempt=ATTEMPTS,
        elsewhere=st.none() | SESSIONS,
        data=st.data(),
        verdict=st.sampled_from(ApprovalVerdict),
        scope=st.sampled_from(ApprovalScope),
    )
    def decide_approval(
        self,
        attempt: AttemptRef,
        elsewhere: SessionId | None,
        data: st.DataObject,
        verdict: ApprovalVerdict,
        scope: ApprovalScope,
    ) -> None:
        """Only a pending request is decided; a rejection or expiry denies the attempt."""
        steered = self._steer(data, attempt, self._attempts_in(AttemptStatus.APPROVAL_PENDING))
        session_id = steered[0] if steered is not attempt or elsewhere is None else elsewhere
        self._decide(session_id, steered[2], verdict, scope)

    @rule(
        attempt=ATTEMPTS,
        stranger=st.none() | RUNS,
        data=st.data(),
        receipt=RECEIPTS,
    )
    def record_receipt(
        self,
        attempt: AttemptRef,
        stranger: RunRef | None,
        data: st.DataObject,
        receipt: ToolReceipt,
    ) -> None:
        """Only an allowed attempt of the writer gets a receipt, which may move the context."""
        allowed = (AttemptStatus.ALLOWED,)
        self._record_receipt(self._attempt_actor(data, attempt, stranger, allowed), receipt)

    # Corrections and unknown outcomes end attempts. Steering them to open attempts only
    # would cut most lifecycles short, so they are steered to any attempt of a current
    # writer, ended ones included, where the refusal is AttemptAlreadyEndedError.

    @precondition(lambda self: self._writer_attempts())
    @rule(
        attempt=ATTEMPTS,
        stranger=st.none() | RUNS,
        data=st.data(),
        remediation=st.sampled_from(RemediationCode),
        detail=strategies.details(),
    )
    def issue_correction(
        self,
        attempt: AttemptRef,
        stranger: RunRef | None,
        data: st.DataObject,
        remediation: RemediationCode,
        detail: str,
    ) -> None:
        """Any open attempt of the writer can end with a correction instead of running."""
        session_id, run_id, attempt_id = self._steer(data, attempt, self._writer_attempts())
        if stranger is not None:
            session_id, run_id = stranger
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if self._execute(
            session_id,
            lambda s: s.issue_correction(run_id, attempt_id, remediation, detail),
            refusal,
        ):
            self._end_attempt(model, attempt_id, AttemptEnd.CORRECTED)

    @precondition(lambda self: self._writer_attempts())
    @rule(
        attempt=ATTEMPTS,
        elsewhere=st.none() | SESSIONS,
        data=st.data(),
        reason=strategies.short_texts(),
    )
    def mark_unknown(
        self, attempt: AttemptRef, elsewhere: SessionId | None, data: st.DataObject, reason: str
    ) -> None:
        """Any open attempt can get the outcome unknown; an ended or foreign one cannot."""
        session_id, _, attempt_id = self._steer(data, attempt, self._writer_attempts())
        if elsewhere is not None:
            session_id = elsewhere
        model = self.model[session_id]
        status = self._status(model, attempt_id)
        refusal: Refusal = None
        if status is None:
            refusal = errors.UnknownAttemptError
        elif status is AttemptStatus.ENDED:
            refusal = errors.AttemptAlreadyEndedError
        if self._execute(session_id, lambda s: s.mark_attempt_unknown(attempt_id, reason), refusal):
            self._end_attempt(model, attempt_id, AttemptEnd.UNKNOWN)
