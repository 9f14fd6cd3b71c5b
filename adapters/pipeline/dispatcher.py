"""The dispatcher: one pipeline for every tool call, native or model-authored; adapter layer.

decode -> authorize (exposure, tool policy, relative base, paths, approval mode; stored with
the attempt's start before anything runs) -> ask an operator if needed (same attempt) ->
re-check every target -> run in the managed temporary directory -> redact exact secrets ->
bound, spilling the rest -> receipt (and working context) -> remediation presenter.

Every call returns exactly one ToolResult. A caller that cancels gets its cancellation back,
and the attempt ends with a `cancelled` receipt first. Journal writes are never interrupted
by a cancellation: they are shielded and their outcome is always known.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
from pydantic import ValidationError

from adapters.journal.writer import SessionWriter
from adapters.pipeline.authorization import Authorization, DecodedCall, Plan
from adapters.pipeline.context import PipelinePolicy, RunScope
from adapters.pipeline.receipts import classify, input_problems, receipt_of
from adapters.pipeline.resolution import PathScope, resolve_targets
from adapters.pipeline.spills import read_spill, write_spill
from adapters.pipeline.toolset import ToolSet
from adapters.tools.contract import BoundTarget, ToolOutput, ToolRun
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.authorization.path_access import PathAccessDecision
from domain.ids import AttemptId, CallId, SpillId
from domain.ports import Approver
from domain.session.aggregate import Session
from domain.tools.arguments import record_arguments
from domain.tools.concurrency import batches
from domain.tools.exposure import Visibility, exposure, visibility
from domain.tools.output import bound, redact, spill_notice
from domain.tools.remediation import present
from domain.tools.result import ToolResult
from domain.values.attempts import AttemptEnd, AttemptStatus
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
)
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import (
    CancelReason,
    InputProblem,
    OutcomeCategory,
    RecordedArguments,
    RemediationCode,
    ToolReceipt,
)

T = TypeVar("T")
log = logging.getLogger(__name__)
TEMP_VARIABLES = ("TMPDIR", "TMP", "TEMP")
EXPOSURE_CACHE = 256
"""Distinct (audience, loaded tools) pairs whose exposure a dispatcher remembers."""

_REJECTED = {
    ApprovalVerdict.REJECTED: DenialCategory.APPROVAL_REJECTED,
    ApprovalVerdict.EXPIRED: DenialCategory.APPROVAL_EXPIRED,
}


class Dispatcher:
    """Runs tool calls through the governed pipeline and journals every step."""

    def __init__(
        self,
        writer: SessionWriter,
        tools: ToolSet,
        policy: PipelinePolicy,
        approver: Approver | None = None,
    ) -> None:
        self.writer = writer
        self.tools = tools
        self.policy = policy
        self.approver = approver
        self._environment = dict(os.environ)
        # Exposure depends only on configuration, audience and loaded tools.
        self._exposure_cache: dict[tuple[Audience, frozenset[str]], dict[str, Visibility]] = {}

    # -- entry points ----------------------------------------------------------------------

    async def call(
        self,
        run: RunScope,
        call: ToolCallRequest,
        *,
        cancel_reason: Callable[[], CancelReason | None] | None = None,
        refused: str = "",
    ) -> ToolResult:
        """Run one call through the whole pipeline; the one result it gets.

        `cancel_reason` says, when the call is cancelled, who cancelled it; the caller
        knows (a client, its session closing, the daemon stopping), the pipeline does not.
        `refused` says why the client's arguments could not be taken into `call` (see
        adapters/pipeline/requests.py): the call is then answered as invalid input.
        """
        decoded = replace(self._decode(call, refused), recorded=await self._record(run, call))
        can_ask = self.approver is not None and self.approver.available()
        authorization = Authorization(self.policy, self._views, run, decoded, can_ask=can_ask)
        plan = await self._write(run, authorization)
        if plan.result is not None:
            return plan.result
        try:
            return await self._after_authorization(run, authorization, plan)
        except anyio.get_cancelled_exc_class():
            reason = cancel_reason() if cancel_reason is not None else None
            await self._write(run, _cancel(run, decoded.attempt_id, reason))
            raise
        except Exception as error:
            # Whatever failed, the attempt must not stay open until its run ends, and the
            # caller gets a result that says so (the details go to the log, not the model).
            log.exception("call %s failed inside the pipeline", decoded.call.call_id)
            end = await self._write(run, _abandon(run, decoded.attempt_id))
            return _failed(decoded, end, error)

    async def call_batch(self, run: RunScope, calls: Sequence[ToolCallRequest]) -> list[ToolResult]:
        """Run calls in order; neighbouring parallel-safe calls run together."""
        results: list[ToolResult] = []
        for group in batches(self.tools.registry, calls):
            if len(group) == 1:
                results.append(await self.call(run, group[0]))
            else:
                results.extend(await self._together(run, group))
        return results

    async def _together(self, run: RunScope, group: Sequence[ToolCallRequest]) -> list[ToolResult]:
        found: dict[int, ToolResult] = {}

        async def one(index: int, call: ToolCallRequest) -> None:
            found[index] = await self.call(run, call)

        async with anyio.create_task_group() as tasks:
            for index, call in enumerate(group):
                tasks.start_soon(one, index, call)
        return [found[index] for index in range(len(group))]

    def views(self, audience: Audience, loaded: frozenset[str]) -> dict[str, Visibility]:
        """Every tool's visibility for an audience and loaded set (what a session can see)."""
        return self._views(audience, loaded)

    def _views(self, audience: Audience, loaded: frozenset[str]) -> dict[str, Visibility]:
        """Every tool's visibility for an audience and loaded set, computed once per pair."""
        key = (audience, loaded)
        found = self._exposure_cache.get(key)
        if found is None:
            views = exposure(self.tools.registry, self.policy.exposure, audience, loaded)
            found = {view.name: view for view in views}
            if len(self._exposure_cache) < EXPOSURE_CACHE:
                self._exposure_cache[key] = found
        return found

    # -- steps -----------------------------------------------------------------------------

    def _decode(self, call: ToolCallRequest, refused: str = "") -> DecodedCall:
        attempt_id = AttemptId.new()
        tool = self.tools.get(call.name)
        if tool is None:
            return DecodedCall(attempt_id, call, None)
        if refused:
            problem = InputProblem(field="arguments", message=redact(refused, self.policy.secrets))
            return DecodedCall(attempt_id, call, tool, decode_error=refused, problems=(problem,))
        try:
            arguments = tool.arguments.model_validate(call.arguments)
        except ValidationError as error:
            problems = input_problems(error, self.policy.secrets)
            text = "; ".join(f"{p.field}: {p.message}" for p in problems)
            return DecodedCall(attempt_id, call, tool, decode_error=text, problems=problems)
        return DecodedCall(attempt_id, call, tool, arguments)

    async def _record(self, run: RunScope, call: ToolCallRequest) -> RecordedArguments:
        """The call's arguments as its attempt records them; bounded ones spilled whole first."""
        recorded, whole = record_arguments(call.arguments, self.policy.secrets)
        if whole is None:
            return recorded
        spill_id = SpillId.new()
        try:
            await anyio.to_thread.run_sync(write_spill, run.envelope.spills, spill_id, whole)
        except OSError:
            log.exception("the arguments of call %s could not be kept whole", call.call_id)
            return recorded
        return recorded.model_copy(update={"spill_id": spill_id})

    async def _after_authorization(
        self, run: RunScope, authorization: Authorization, plan: Plan
    ) -> ToolResult:
        attempt_id, call = authorization.attempt_id, authorization.call
        if plan.approval is not None:
            denied = await self._ask(run, plan.approval)
            if denied is not None:
                return denied
        if plan.report is not None and self.approver is not None:
            # Report mode never blocks the call, so neither does a notice that fails.
            with contextlib.suppress(Exception):
                await self.approver.report(plan.report)
        scope = plan.scope or authorization.scope(plan)
        targets = plan.targets
        if plan.approval is not None:
            # Time passed while a person decided: resolve and check every target again.
            checked = await self._revalidate(run, authorization, plan, scope)
            if isinstance(checked, ToolResult):
                return checked
            targets = checked
        output = await self._execute(run, authorization, targets, plan, scope)
        return await self._finish(run, attempt_id, call, output, plan.visible)

    async def _ask(self, run: RunScope, request: ApprovalRequest) -> ToolResult | None:
        """Ask the operator; None when approved, else the denial's result."""
        assert self.approver is not None  # noqa: S101 - planned only when one can be asked
        answer: ApprovalAnswer | None = None
        failure = ""
        with anyio.move_on_after(self.policy.approval_timeout_seconds) as waited:
            try:
                answer = await self.approver.ask(request)
            except Exception as error:  # noqa: BLE001 - an approver that fails did not answer
                failure = f"the approver failed: {type(error).__name__}: {error}"[:2000]
        if waited.cancelled_caught or anyio.current_time() >= waited.deadline:
            # An answer that arrives after the deadline is too late to count.
            answer = ApprovalAnswer(verdict=ApprovalVerdict.EXPIRED, decided_by="timeout")
        if answer is None:
            detail = redact(failure, self.policy.secrets) or "no one answered the approval request"
            await self._write(
                run,
                lambda s: s.deny_attempt(
                    run.run_id, request.attempt_id, DenialCategory.NO_APPROVER, detail
                ),
            )
            return _denied(request, DenialCategory.NO_APPROVER, detail)
        scope, directory = answer.scope, answer.directory
        if scope is not ApprovalScope.ONCE and not request.grant_key:
            scope, directory = ApprovalScope.ONCE, None
        await self._write(
            run,
            lambda s: s.decide_approval(
                request.attempt_id, answer.verdict, answer.decided_by, scope, directory
            ),
        )
        if answer.verdict is ApprovalVerdict.APPROVED:
            return None
        category = _REJECTED[answer.verdict]
        return _denied(request, category, f"approval {answer.verdict} by {answer.decided_by}")

    async def _revalidate(
        self, run: RunScope, authorization: Authorization, plan: Plan, scope: PathScope
    ) -> tuple[BoundTarget, ...] | ToolResult:
        """Resolve every target again right before running; any change denies the call."""
        fresh = resolve_targets(plan.assessment.targets, scope)
        before = [(t.path, t.real) for t in plan.targets]
        after = [(t.path, t.real) for t in fresh.bound]
        if fresh.denied is None and not fresh.no_base and before == after:
            return fresh.bound
        detail = redact(
            fresh.denied.detail
            if fresh.denied is not None
            else "a target resolves differently than when it was authorized",
            self.policy.secrets,
        )
        attempt_id = authorization.attempt_id
        await self._write(
            run,
            lambda s: s.deny_attempt(
                run.run_id, attempt_id, DenialCategory.TARGET_CHANGED, detail[:2000]
            ),
        )
        return ToolResult(
            call_id=authorization.call.call_id,
            attempt_id=attempt_id,
            tool_name=authorization.call.name,
            text=f"Denied ({DenialCategory.TARGET_CHANGED}): {detail}",
            end=AttemptEnd.DENIED,
            denial=DenialCategory.TARGET_CHANGED,
        )

    async def _execute(
        self,
        run: RunScope,
        authorization: Authorization,
        targets: tuple[BoundTarget, ...],
        plan: Plan,
        scope: PathScope,
    ) -> ToolOutput:
        tool = authorization.tool
        assert tool is not None  # noqa: S101 - an authorized call has a tool
        run.tmp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        environment = {**self._environment, **dict.fromkeys(TEMP_VARIABLES, str(run.tmp_dir))}

        def check_path(path: str, operation: FileOperation) -> PathAccessDecision:
            return scope.decide(path, operation)

        def tool_visibility(name: str) -> Visibility | None:
            definition = self.tools.registry.get(name) if name in self.tools.registry else None
            if definition is None:
                return None
            return visibility(definition, self.policy.exposure, plan.audience, plan.loaded_tools)

        tool_run = ToolRun(
            call_id=authorization.call.call_id,
            session_id=run.session_id,
            run_id=run.run_id,
            targets={target.argument: target for target in targets},
            base=None if scope.base is None else Path(scope.base),
            tmp_dir=run.tmp_dir,
            environment=environment,
            check_path=check_path,
            visibility=tool_visibility,
            read_spill=self._spill_reader(run),
            secrets=self.policy.secrets,
            audience=plan.audience,
            roots=scope.roots,
            protected=scope.protected,
        )
        try:
            return await tool.run(authorization.arguments, tool_run)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:  # noqa: BLE001 - a failing tool becomes a classified result
            return classify(error)

    def _spill_reader(
        self, run: RunScope
    ) -> Callable[[str, int, int], tuple[str, int | None, int] | None]:
        def reader(call_id: str, start: int, limit: int) -> tuple[str, int | None, int] | None:
            # Read rarely, so the session is loaded afresh rather than kept per call.
            session = self.writer.journal.session(run.session_id)
            spill_id = session.spills.get(CallId(call_id))
            if spill_id is None:
                return None
            try:
                return read_spill(run.envelope.spills, spill_id, start, limit)
            except OSError:
                log.exception("spill %s of call %s cannot be read", spill_id, call_id)
                return None

        return reader

    async def _finish(
        self,
        run: RunScope,
        attempt_id: AttemptId,
        call: ToolCallRequest,
        output: ToolOutput,
        visible: frozenset[str],
    ) -> ToolResult:
        text = redact(output.text, self.policy.secrets)
        shown = bound(text, self.policy.inline_limit)
        spill_id: SpillId | None = None
        if shown.spilled:
            spill_id = SpillId.new()
            try:
                await anyio.to_thread.run_sync(write_spill, run.envelope.spills, spill_id, text)
                notice = spill_notice(call.call_id, len(shown.inline), shown.total_chars)
            except OSError:
                log.exception("spill of call %s could not be kept", call.call_id)
                spill_id = None
                notice = (
                    f"[output truncated: showed {len(shown.inline)} of {shown.total_chars} "
                    "characters; the rest could not be kept]"
                )
            text = f"{shown.inline}\n{notice}"
        receipt = receipt_of(output, spill_id, self.policy.secrets)
        loaded = output.loaded_tool if receipt.outcome is OutcomeCategory.SUCCESS else None

        def record(session: Session) -> None:
            session.record_receipt(run.run_id, attempt_id, receipt)
            if loaded is not None:
                session.load_tool_schema(run.run_id, loaded)

        await self._write(run, record)
        if run.kind is SessionKind.SUBAGENT and receipt.has_state_effect:
            run.working_context = run.working_context.after(receipt)
        code = receipt.remediation or (
            RemediationCode.READ_SPILLED_OUTPUT if spill_id is not None else None
        )
        if loaded is not None:
            visible = visible | {loaded}
        return ToolResult(
            call_id=call.call_id,
            attempt_id=attempt_id,
            tool_name=call.name,
            text=present(text, code, visible),
            end=AttemptEnd.RECEIPT,
            outcome=receipt.outcome,
            remediation=receipt.remediation,
            spill_id=spill_id,
        )

    async def _write(self, run: RunScope, command: Callable[[Session], T]) -> T:
        """A journal update that a cancellation cannot interrupt halfway."""
        with anyio.CancelScope(shield=True):
            result = await self.writer.update(run.session_id, command)
        return result  # noqa: RET504 - returned after the shield closes, as mypy needs


def _cancel(
    run: RunScope, attempt_id: AttemptId, reason: CancelReason | None = None
) -> Callable[[Session], None]:
    def command(session: Session) -> None:
        attempt = session.attempts.get(attempt_id)
        if attempt is not None and attempt.status is not AttemptStatus.ENDED:
            receipt = ToolReceipt(outcome=OutcomeCategory.CANCELLED, cancel_reason=reason)
            session.record_receipt(run.run_id, attempt_id, receipt)

    return command


def _abandon(run: RunScope, attempt_id: AttemptId) -> Callable[[Session], AttemptEnd | None]:
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


def _failed(decoded: DecodedCall, end: AttemptEnd | None, error: Exception) -> ToolResult:
    """The one result of a call the runtime failed to finish."""
    denied = end is AttemptEnd.DENIED
    text = f"The call could not be completed: the runtime failed ({type(error).__name__}). " + (
        "It did not run."
        if denied
        else "Its outcome is unknown, and it will not be run again automatically."
    )
    return ToolResult(
        call_id=decoded.call.call_id,
        attempt_id=decoded.attempt_id,
        tool_name=decoded.call.name,
        text=text,
        end=end or AttemptEnd.UNKNOWN,
        denial=DenialCategory.NO_APPROVER if denied else None,
    )


def _denied(request: ApprovalRequest, category: DenialCategory, detail: str) -> ToolResult:
    return ToolResult(
        call_id=request.call_id,
        attempt_id=request.attempt_id,
        tool_name=request.tool_name,
        text=f"Denied ({category}): {detail}",
        end=AttemptEnd.DENIED,
        denial=category,
    )
