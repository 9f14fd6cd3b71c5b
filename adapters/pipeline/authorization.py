"""The authorization step of the pipeline, run as one journal command; adapter layer.

It runs inside the session's update, on the latest state, so the attempt's start and its
decision are stored together in one transaction, before anything executes. It decides in
this order: decoded arguments, exposure, the tool's own policy (shell hard deny), the relative
base, every path, then approval (mode, reviewed-safe, standing grants, an approver at all).
It reads nothing from the filesystem: it decides from the facts gathered for it beforehand
(adapters/pipeline/gathering.py), and asks for them again when they no longer hold.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from adapters.pipeline.context import PipelinePolicy, RunScope
from adapters.pipeline.decoding import DecodedCall
from adapters.pipeline.gathering import CallFacts
from adapters.pipeline.held import SessionFacts
from adapters.pipeline.resolution import PathScope, decide_targets, scope_of
from adapters.tools.contract import BoundTarget, CallAssessment
from domain.authorization.approvals import ApprovalRequest, covering_grant, grant_key
from domain.tools import endings
from domain.tools.exposure import NO_SUCH_TOOL, Visibility
from domain.tools.output import redact, redact_path
from domain.tools.result import ToolResult
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalMode, DenialCategory, FileOperation, PolicyDecision
from domain.values.receipts import (
    FileActivity,
    OutcomeCategory,
    RemediationCode,
    ToolReceipt,
)

RULE_LIMIT = 200
DETAIL_LIMIT = 2000
"""The journal's limits for a rule name and a detail."""


def _short(rule: str) -> str:
    """A rule that fits the journal: long ones are cut, with a mark that they were."""
    return rule if len(rule) <= RULE_LIMIT else rule[: RULE_LIMIT - 1] + "…"


def _activity(path: str, operation: FileOperation) -> FileActivity | None:
    """A target as the journal records it; None for a path it cannot hold (not canonical)."""
    try:
        return FileActivity(path=path, operation=operation)
    except ValueError:
        return None


def _targets(plan: Plan, secrets: Iterable[str]) -> tuple[FileActivity, ...]:
    """The decided paths of a plan (its bound targets, or the one denied), as journaled.

    A path is redacted of exact secrets (a shell word is a path too: `echo TOKEN`).
    """
    found = [(t.path, t.operation) for t in plan.targets]
    if plan.denied_target is not None:
        found.append((plan.denied_target.path, plan.denied_target.operation))
    recorded = (
        _activity(shown, operation)
        for path, operation in found
        if (shown := redact_path(path, secrets)) is not None
    )
    return tuple(dict.fromkeys(t for t in recorded if t is not None))


Views = Callable[[Audience, frozenset[str]], dict[str, Visibility]]
"""Every tool's visibility, by name, for an audience and a set of loaded tools."""
NO_BASE = "No project or session directory is available for a relative path."


@dataclass
class Plan:
    """What authorization concluded: an ended call, a call to run, or a question to ask."""

    visible: frozenset[str]
    audience: Audience
    project: str | None
    loaded_tools: frozenset[str]
    scope: PathScope | None = None
    """The roots and base the targets were decided against; revalidation reuses them."""
    denied_target: FileActivity | None = None
    """The path whose decision denied the call, for the journal."""
    result: ToolResult | None = None
    targets: tuple[BoundTarget, ...] = ()
    assessment: CallAssessment = field(default_factory=CallAssessment)
    approval: ApprovalRequest | None = None
    report: ApprovalRequest | None = None
    mode: ApprovalMode | None = None
    stale: bool = False
    """Set when the gathered facts no longer held: nothing was stored; gather them again."""


class Authorization:
    """The authorization command of one call, run by the journal on the latest session."""

    def __init__(  # noqa: PLR0913 - the command's inputs, each from its own step
        self,
        policy: PipelinePolicy,
        views: Views,
        run: RunScope,
        decoded: DecodedCall,
        facts: CallFacts | None = None,
        *,
        can_ask: bool,
    ) -> None:
        self.policy = policy
        self.views = views
        self.run = run
        self.attempt_id = decoded.attempt_id
        self.call = decoded.call
        self.tool = decoded.tool
        self.arguments = decoded.arguments
        self.decode_error = decoded.decode_error
        self.problems = decoded.problems
        self.recorded = decoded.recorded
        self.facts = facts
        """Gathered beforehand for a call whose tool is known and whose arguments decoded."""
        self.can_ask = can_ask

    # -- the command -----------------------------------------------------------------------

    def __call__(self, session: SessionFacts) -> Plan:
        """Start the attempt and record its decision on `session`."""
        run_id, attempt_id, call = self.run.run_id, self.attempt_id, self.call
        context = (
            session.working_context
            if session.kind is SessionKind.MAIN
            else self.run.working_context
        )
        project = context.project_directory
        if self.facts is not None and not self.facts.holds_for(project):
            return Plan(frozenset(), session.audience, project, session.loaded_tools, stale=True)
        session.start_attempt(run_id, attempt_id, call.call_id, call.name, self.recorded)
        views = self.views(session.audience, session.loaded_tools)
        visible = frozenset(name for name, v in views.items() if v.in_request)
        plan = Plan(
            visible=visible,
            audience=session.audience,
            project=project,
            loaded_tools=session.loaded_tools,
        )
        if self.decode_error:
            receipt = ToolReceipt(outcome=OutcomeCategory.INVALID_INPUT, problems=self.problems)
            session.record_receipt(run_id, attempt_id, receipt)
            plan.result = endings.invalid_input(call, attempt_id, self.decode_error)
            return plan
        view = views.get(call.name)
        if self.tool is None or view is None:
            return self._deny(session, plan, DenialCategory.NOT_EXPOSED, "exposure", NO_SUCH_TOOL)
        if not view.policy_visible:
            return self._deny(session, plan, DenialCategory.NOT_EXPOSED, "exposure", view.reason)
        if not view.in_request:
            detail = f"{call.name} is deferred and has not been loaded."
            return self._correct(session, plan, RemediationCode.LOAD_TOOL, detail)
        return self._paths(session, plan)

    def _paths(self, session: SessionFacts, plan: Plan) -> Plan:
        facts = self.facts
        assert facts is not None  # noqa: S101 - gathered for every call with a tool
        if facts.failure is not None:
            raise facts.failure
        assert facts.assessment is not None  # noqa: S101 - set unless the assessment failed
        plan.assessment = assessment = facts.assessment
        if assessment.deny is not None:
            category, detail = assessment.deny
            return self._deny(session, plan, category, "tool policy", detail)
        paths = facts.paths
        assert paths is not None  # noqa: S101 - gathered for an assessment that does not deny
        plan.scope = scope_of(plan.audience, paths.roots, paths.protected, paths.scope)
        resolution = decide_targets(paths.targets, plan.scope)
        if resolution.no_base:
            return self._correct(session, plan, RemediationCode.SET_WORKING_DIRECTORY, NO_BASE)
        if resolution.denied is not None:
            denied = resolution.denied
            rule = f"path access ({denied.operation})"
            plan.denied_target = _activity(denied.path, denied.operation)
            return self._deny(session, plan, denied.category, rule, denied.detail)
        plan.targets = resolution.bound
        return self._approval(session, plan)

    # -- approval --------------------------------------------------------------------------

    def _approval(self, session: SessionFacts, plan: Plan) -> Plan:
        assert self.tool is not None  # noqa: S101 - checked by the caller
        assessment = plan.assessment
        mode = plan.mode = self.policy.exposure.approval_mode(self.tool.definition)
        forced = bool(assessment.needs_approval)
        if mode is ApprovalMode.DENY:
            return self._deny(session, plan, DenialCategory.POLICY, "approval mode", "mode is deny")
        if forced and mode not in (ApprovalMode.REQUEST, ApprovalMode.DEFER):
            mode = plan.mode = ApprovalMode.REQUEST
        if mode is None:
            return self._allow(session, plan, "paths allowed")
        request = self._request(plan, mode, forced=forced)
        unasked = self._rule_without_asking(session, plan, request, forced=forced)
        if unasked:
            return self._allow(session, plan, unasked)
        if not self.can_ask:
            detail = "operator approval is needed and no one can be asked"
            return self._deny(session, plan, DenialCategory.NO_APPROVER, "approval", detail)
        session.evaluate_policy(
            self.run.run_id,
            self.attempt_id,
            PolicyDecision.APPROVAL_REQUIRED,
            rule=_short(
                redact(
                    f"approval required ({assessment.needs_approval or f'mode {mode}'})",
                    self.policy.secrets,
                )
            ),
            approval_mode=mode,
            targets=_targets(plan, self.policy.secrets),
        )
        session.request_approval(
            self.run.run_id, self.attempt_id, request.summary, request.mode, request.grant_key
        )
        plan.approval = request
        return plan

    def _rule_without_asking(
        self, session: SessionFacts, plan: Plan, request: ApprovalRequest, *, forced: bool
    ) -> str:
        """The rule that lets the call run without a question now, or "" to ask."""
        if plan.mode is ApprovalMode.DEFER and not forced:
            # Deferred to the execution boundary: the tool's own policy asks when it must.
            return "deferred to the tool's own policy"
        if plan.mode is ApprovalMode.REPORT:
            plan.report = request
            return "report mode"
        return self._standing_rule(session, plan, request, forced=forced)

    def _standing_rule(
        self, session: SessionFacts, plan: Plan, request: ApprovalRequest, *, forced: bool
    ) -> str:
        """The rule that answers the approval question without asking, if any."""
        if plan.assessment.reviewed_safe and not forced:
            return f"reviewed-safe: {plan.assessment.reviewed_safe}"
        targets = [target.path for target in plan.targets]
        grant = covering_grant(session.approval_grants, request.grant_key, targets)
        if grant is None:
            return ""
        return "standing approval" + (f" under {grant.directory}" if grant.directory else "")

    def _request(self, plan: Plan, mode: ApprovalMode, *, forced: bool) -> ApprovalRequest:
        call, assessment = self.call, plan.assessment
        subject = assessment.grant_subject
        where = next((t.real for t in plan.targets if t.argument == "cwd"), None)
        if subject is not None and where is not None:
            # Keyed by where the command really runs, not by how cwd was spelled.
            subject = f"{subject} (in {where})"
        secrets = self.policy.secrets
        key = "" if forced else grant_key(call.name, subject)
        if redact(key, secrets) != key:
            # The journal keeps the key, so a key holding a secret is never made: once only.
            key = ""
        summary = assessment.summary or f"{call.name} {', '.join(t.path for t in plan.targets)}"
        return ApprovalRequest(
            session_id=self.run.session_id,
            attempt_id=self.attempt_id,
            call_id=call.call_id,
            tool_name=call.name,
            summary=redact(summary, secrets)[:DETAIL_LIMIT],
            targets=tuple(target.path for target in plan.targets),
            mode=mode,
            grant_key=key,
        )

    # -- endings ---------------------------------------------------------------------------

    def _allow(self, session: SessionFacts, plan: Plan, rule: str) -> Plan:
        rule = redact(rule, self.policy.secrets)
        session.evaluate_policy(
            self.run.run_id,
            self.attempt_id,
            PolicyDecision.ALLOW,
            rule=_short(rule),
            detail=rule[:DETAIL_LIMIT] if len(rule) > RULE_LIMIT else "",
            approval_mode=plan.mode,
            targets=_targets(plan, self.policy.secrets),
        )
        return plan

    def _deny(
        self, session: SessionFacts, plan: Plan, category: DenialCategory, rule: str, detail: str
    ) -> Plan:
        detail = redact(detail, self.policy.secrets)
        session.evaluate_policy(
            self.run.run_id,
            self.attempt_id,
            PolicyDecision.DENY,
            rule=_short(rule),
            detail=detail[:DETAIL_LIMIT],
            approval_mode=plan.mode,
            denial=category,
            targets=_targets(plan, self.policy.secrets),
        )
        plan.result = endings.denied(self.call, self.attempt_id, category, detail)
        return plan

    def _correct(
        self, session: SessionFacts, plan: Plan, code: RemediationCode, detail: str
    ) -> Plan:
        session.issue_correction(self.run.run_id, self.attempt_id, code, detail)
        plan.result = endings.corrected(self.call, self.attempt_id, code, detail, plan.visible)
        return plan
