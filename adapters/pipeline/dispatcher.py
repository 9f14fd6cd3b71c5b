"""The dispatcher: one pipeline for every tool call, native or model-authored; adapter layer.

decode -> gather the filesystem facts (in a worker thread) -> authorize (exposure, tool
policy, relative base, paths, approval mode; stored with the attempt's start before anything
runs, decided from the gathered facts alone) -> ask an operator if needed (same attempt) ->
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
from functools import partial
from pathlib import Path

import anyio
import anyio.to_thread

from adapters.pipeline.asking import ask
from adapters.pipeline.authorization import Authorization, Plan
from adapters.pipeline.closing import abandon, cancel
from adapters.pipeline.context import PipelinePolicy, RunScope
from adapters.pipeline.decoding import DecodedCall, decode, record
from adapters.pipeline.finishing import finish
from adapters.pipeline.gathering import CallFacts, gather_call, keep_run_facts, needs_facts
from adapters.pipeline.held import HeldSession
from adapters.pipeline.ports import SessionUpdates
from adapters.pipeline.receipts import classify
from adapters.pipeline.resolution import PathScope
from adapters.pipeline.revalidation import revalidate
from adapters.pipeline.run_journal import RunJournal
from adapters.pipeline.spills import spill_reader
from adapters.pipeline.toolset import ToolSet
from adapters.tools.contract import BoundTarget, ToolOutput, ToolRun
from domain.authorization.path_access import PathAccessDecision
from domain.ports import Approver
from domain.session.aggregate import Session
from domain.tools import endings
from domain.tools.concurrency import batches
from domain.tools.exposure import Visibility, exposure, visibility
from domain.tools.result import ToolResult
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalMode, FileOperation
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import (
    CancelReason,
)

log = logging.getLogger(__name__)
EXPOSURE_CACHE = 256
"""Distinct (audience, loaded tools) pairs whose exposure a dispatcher remembers."""


def _project(session: Session) -> str | None:
    return session.working_context.project_directory


def _given(project: str | None) -> str | None:
    return project


def _nothing(session: Session) -> None:
    """A command of its own: the held writes before it are the whole update."""


def _decide_held(authorization: Authorization, session: Session) -> tuple[HeldSession, Plan]:
    held = HeldSession(session)
    return held, authorization(held)


def _runs_unasked(plan: Plan) -> bool:
    """Whether an allowed call runs with no one told or asked before it (its mode's say)."""
    return plan.approval is None and plan.report is None and plan.mode is not ApprovalMode.DEFER


class Dispatcher:
    """Runs tool calls through the governed pipeline and journals every step."""

    def __init__(
        self,
        writer: SessionUpdates,
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
        self._cache_generation = tools.generation

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
        secrets = self.policy.secrets
        decoded = decode(self.tools, call, secrets, refused)
        decoded = replace(decoded, recorded=await record(run, call, secrets))
        journal = RunJournal(self.writer, run)
        authorization, plan = await self._authorize(journal, decoded)
        if plan.result is not None:
            return plan.result
        try:
            return await self._after_authorization(journal, authorization, plan)
        except anyio.get_cancelled_exc_class():
            reason = cancel_reason() if cancel_reason is not None else None
            await journal.write(cancel(run, decoded.attempt_id, reason))
            raise
        except Exception as error:
            # Whatever failed, the attempt must not stay open until its run ends, and the
            # caller gets a result that says so (the details go to the log, not the model).
            log.exception("call %s failed inside the pipeline", decoded.call.call_id)
            end = await journal.write(abandon(run, decoded.attempt_id))
            return endings.failed(decoded.call, decoded.attempt_id, end, type(error).__name__)

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
        if self._cache_generation != self.tools.generation:
            # The tool set changed (an upstream catalog): every view is made again.
            self._exposure_cache.clear()
            self._cache_generation = self.tools.generation
        found = self._exposure_cache.get(key)
        if found is None:
            views = exposure(self.tools.registry, self.policy.exposure, audience, loaded)
            found = {view.name: view for view in views}
            if len(self._exposure_cache) < EXPOSURE_CACHE:
                self._exposure_cache[key] = found
        return found

    # -- steps -----------------------------------------------------------------------------

    async def _authorize(
        self, journal: RunJournal, decoded: DecodedCall
    ) -> tuple[Authorization, Plan]:
        """Gather the call's facts, then decide and store its authorization from them.

        The facts are read in the writer's worker thread before the journal command takes
        the session's lock (`SessionWriter.update_prepared`), so the command decides without
        touching the filesystem, and the gathering shares the commit's thread and batch.
        Facts gathered for a project the session no longer declares are gathered again.
        Like the journal write, the gathering is shielded: a call that got this far is
        authorized and recorded whole, and a cancellation then ends its attempt as
        `cancelled`.
        """
        run = journal.run
        can_ask = self.approver is not None and self.approver.available()
        if self._decides_on_read(journal, decoded):
            return await self._authorize_held(journal, decoded, can_ask=can_ask)
        while True:
            prepare = partial(self._prepare, journal, decoded, can_ask=can_ask)
            authorization, facts, plan = await journal.write_prepared(prepare)
            if facts is not None and plan.scope is not None:
                # The run's first call that checked paths read the roots for the whole run.
                keep_run_facts(run, facts)
            if not plan.stale:
                return authorization, plan

    def _decides_on_read(self, journal: RunJournal, decoded: DecodedCall) -> bool:
        """Whether the call is decided on a read, its decision stored with its receipt.

        So is a call whose tool stays inside (ADR 0023), once its run's roots are known and
        while its session is kept in memory: its few path facts are then read on the event
        loop, as a small file is (no worker-thread trip), and no commit precedes the run.
        """
        tool, run = decoded.tool, journal.run
        return (
            tool is not None
            and tool.definition.effects.stays_inside
            and not decoded.decode_error
            and run.roots is not None
            and self.writer.journal.is_kept(run.session_id.as_uuid())
        )

    async def _authorize_held(
        self, journal: RunJournal, decoded: DecodedCall, *, can_ask: bool
    ) -> tuple[Authorization, Plan]:
        """Decide the call on the session as kept, holding what the decision records.

        A call that will run unasked keeps its decision held, to be stored with its
        receipt; any other (ended by the decision, asking, reporting, deferring to the
        tool) stores it now, before anything else happens, as every call does.
        """
        while True:
            facts = self._gather(journal, decoded)
            authorization = Authorization(
                self.policy, self._views, journal.run, decoded, facts, can_ask=can_ask
            )
            held, plan = journal.read(partial(_decide_held, authorization))
            if plan.stale:
                continue
            if facts is not None and plan.scope is not None:
                keep_run_facts(journal.run, facts, stays_inside=True)
            journal.held = tuple(held.writes)
            if plan.result is not None or not _runs_unasked(plan):
                await journal.write(_nothing)
            return authorization, plan

    def _prepare(
        self, journal: RunJournal, decoded: DecodedCall, *, can_ask: bool
    ) -> Callable[[Session], tuple[Authorization, CallFacts | None, Plan]]:
        """Gather the call's facts (blocking, in the commit's worker thread); the command."""
        facts = self._gather(journal, decoded)
        authorization = Authorization(
            self.policy, self._views, journal.run, decoded, facts, can_ask=can_ask
        )
        return lambda session: (authorization, facts, authorization(session))

    def _gather(self, journal: RunJournal, decoded: DecodedCall) -> CallFacts | None:
        """The facts the call's authorization decides from; None when it needs none."""
        if not needs_facts(decoded):
            return None
        run = journal.run
        # A main session's project is in its journal; a subagent's is the run's own.
        project: Callable[[], str | None] = (
            partial(journal.read, _project)
            if run.kind is SessionKind.MAIN
            else partial(_given, run.working_context.project_directory)
        )
        return gather_call(run, self.policy, decoded, project)

    async def _after_authorization(
        self, journal: RunJournal, authorization: Authorization, plan: Plan
    ) -> ToolResult:
        if plan.approval is not None:
            assert self.approver is not None  # noqa: S101 - planned only when one can be asked
            denied = await ask(self.approver, journal, authorization, plan.approval)
            if denied is not None:
                return denied
        if plan.report is not None and self.approver is not None:
            # Report mode never blocks the call, so neither does a notice that fails.
            with contextlib.suppress(Exception):
                await self.approver.report(plan.report)
        scope = plan.scope
        assert scope is not None  # noqa: S101 - every call that may run was scoped
        targets = plan.targets
        if plan.approval is not None:
            # Time passed while a person decided: resolve and check every target again.
            checked = await revalidate(journal, authorization, plan, scope)
            if isinstance(checked, ToolResult):
                return checked
            targets = checked
        output = await self._execute(journal, authorization, targets, plan, scope)
        return await finish(journal, authorization, output, plan.visible)

    async def _execute(
        self,
        journal: RunJournal,
        authorization: Authorization,
        targets: tuple[BoundTarget, ...],
        plan: Plan,
        scope: PathScope,
    ) -> ToolOutput:
        run, tool = journal.run, authorization.tool
        assert tool is not None  # noqa: S101 - an authorized call has a tool
        if not run.tmp_made:
            run.tmp_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        # A tool that stays inside removes nothing: the directory is there for the next call.
        # Any other may have removed it (a shell's `rm -r "$TMPDIR"`), so it is made again.
        stays_inside = run.tmp_made = tool.definition.effects.stays_inside
        if not stays_inside:
            # It may change the project or the workspace: their facts are read again.
            run.scope = None
        environment = {**self._environment, **run.tmp_environment}

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
            read_spill=spill_reader(run.envelope.spills, journal.spill_of),
            secrets=self.policy.secrets,
            audience=plan.audience,
            roots=scope.roots,
            protected=scope.protected,
            outbox=run.envelope.outbox,
        )
        try:
            return await tool.run(authorization.arguments, tool_run)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:  # noqa: BLE001 - a failing tool becomes a classified result
            return classify(error)
        finally:
            if not stays_inside:
                run.scope = None
