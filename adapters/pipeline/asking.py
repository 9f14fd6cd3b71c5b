"""Asking an operator about a call that needs consent, and journaling the answer; adapter layer.

The question waits at most the configured approval timeout; an answer that arrives after it
is too late and the request expires. An approver that fails, or finds no one to ask, did not
answer: the call is denied `no_approver`. A standing scope is kept only for a request that
can be granted standing (one with a grant key); any other answer counts once.
"""

from __future__ import annotations

import anyio

from adapters.pipeline.authorization import Authorization
from adapters.pipeline.run_journal import RunJournal
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.ports import Approver
from domain.tools import endings
from domain.tools.output import redact
from domain.tools.result import ToolResult
from domain.values.authorization import (
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    denial_for_verdict,
)


async def ask(
    approver: Approver,
    journal: RunJournal,
    authorization: Authorization,
    request: ApprovalRequest,
) -> ToolResult | None:
    """Ask the operator; None when approved, else the denial's result."""
    policy, run_id = authorization.policy, journal.run.run_id
    call, attempt_id = authorization.call, request.attempt_id
    answer: ApprovalAnswer | None = None
    failure = ""
    with anyio.move_on_after(policy.approval_timeout_seconds) as waited:
        try:
            answer = await approver.ask(request)
        except Exception as error:  # noqa: BLE001 - an approver that fails did not answer
            failure = f"the approver failed: {type(error).__name__}: {error}"[:2000]
    if waited.cancelled_caught or anyio.current_time() >= waited.deadline:
        # An answer that arrives after the deadline is too late to count.
        answer = ApprovalAnswer(verdict=ApprovalVerdict.EXPIRED, decided_by="timeout")
    if answer is None:
        detail = redact(failure, policy.secrets) or "no one answered the approval request"
        await journal.write(
            lambda s: s.deny_attempt(run_id, attempt_id, DenialCategory.NO_APPROVER, detail)
        )
        return endings.denied(call, attempt_id, DenialCategory.NO_APPROVER, detail)
    scope, directory = answer.scope, answer.directory
    if scope is not ApprovalScope.ONCE and not request.grant_key:
        scope, directory = ApprovalScope.ONCE, None
    await journal.write(
        lambda s: s.decide_approval(attempt_id, answer.verdict, answer.decided_by, scope, directory)
    )
    if answer.verdict is ApprovalVerdict.APPROVED:
        return None
    detail = f"approval {answer.verdict} by {answer.decided_by}"
    return endings.denied(call, attempt_id, denial_for_verdict(answer.verdict), detail)
