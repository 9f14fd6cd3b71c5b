"""The agent loop's driver: performs each step the decider asks for and feeds back the outcome.

Transport-neutral: a terminal, a test or the daemon's gateway drives it the same way. It
journals every decision before acting on it, asks providers through the `ModelProvider`
port, runs tool calls through the governed `Dispatcher` like any client, and takes
steering messages and an abort at any moment through its inbox. Adapter layer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from adapters.pipeline.context import RunScope
from adapters.pipeline.dispatcher import Dispatcher
from adapters.runtime.agent_prompt import PromptReader, session_facts
from adapters.runtime.budget import Budget, Lane
from adapters.runtime.session_log import SessionLog
from domain.agent import records
from domain.agent.decider import AgentLoop, LoopSettings
from domain.agent.failover import Candidate, Failure
from domain.agent.replies import ModelFailure
from domain.agent.steps import (
    Aborted,
    AskModel,
    CallsDone,
    Decision,
    Executed,
    Fact,
    Failed,
    Finished,
    GatherPrompt,
    Replied,
    RunCalls,
    Step,
    UserSpoke,
)
from domain.ports import Clock, Journal, ModelProvider
from domain.session.aggregate import Session
from domain.tools.result import ToolResult
from domain.values.attempts import AttemptEnd
from domain.values.receipts import CancelReason, OutcomeCategory
from domain.values.runs import RunEndReason

END_OUTCOMES = {
    AttemptEnd.DENIED: OutcomeCategory.ACCESS_DENIED,
    AttemptEnd.CORRECTED: OutcomeCategory.RECOVERABLE_CORRECTION,
    AttemptEnd.UNKNOWN: OutcomeCategory.UNKNOWN,
}
"""How a call that ended without a receipt counts for loop protection."""


def _ignore(*_args: object) -> None:
    """A hook nobody listens to."""


@dataclass
class AgentHooks:
    """What a front end is told as the run goes: streamed text, and each durable record."""

    on_text: Callable[[str], None] = _ignore
    on_records: Callable[[Sequence[records.AgentRecord]], None] = _ignore
    on_call: Callable[[RunCalls], None] = _ignore
    """A batch is about to launch."""


@dataclass
class _Abort:
    """The inbox item that aborts the run."""

    reason: RunEndReason = RunEndReason.ABORT


_Item = UserSpoke | _Abort


@dataclass
class AgentDriver:
    """Drives one run of one session through the decider until it ends."""

    journal: Journal
    dispatcher: Dispatcher
    scope: RunScope
    settings: LoopSettings
    providers: Callable[[Candidate], ModelProvider]
    clock: Clock
    prompt: PromptReader | None = None
    hooks: AgentHooks = field(default_factory=AgentHooks)
    log: SessionLog | None = None
    budget: Budget | None = None
    """Slots shared with other runs; None runs unbounded (one process, one run)."""
    _lane: Lane | None = field(init=False, default=None)
    _send: MemoryObjectSendStream[_Item] = field(init=False)
    _receive: MemoryObjectReceiveStream[_Item] = field(init=False)
    _started: float = field(init=False, default=0.0)
    _aborting: RunEndReason | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._send, self._receive = anyio.create_memory_object_stream[_Item](math.inf)
        self.prompt = self.prompt or PromptReader(self.dispatcher)
        self._lane = None if self.budget is None else self.budget.lane_of_a_run()

    # -- what a front end calls ------------------------------------------------------------

    def steer(self, text: str, *, follow_up: bool = False) -> bool:
        """Queue a user message: taken at the next safe point (or, a follow-up, at the end).

        False once the run has ended: the message was not taken.
        """
        return self._post(UserSpoke(text, follow_up=follow_up))

    def abort(self, reason: RunEndReason = RunEndReason.ABORT) -> bool:
        """Abort the run: the model stream and running calls are cancelled (False if ended).

        `shutdown` says the host is stopping rather than that the user gave up.
        """
        return self._post(_Abort(reason))

    def _post(self, item: _Item) -> bool:
        try:
            self._send.send_nowait(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def run(self, prompt: str) -> Finished:
        """Run the loop from the user's `prompt` until it ends; the end and its reason."""
        self._started = self.clock.monotonic()
        session = self.journal.session(self.scope.session_id)
        transcript = self.journal.transcript(self.scope.session_id)
        loop = AgentLoop(self.settings, transcript, last_prefix_digest=session.prompt_digest)
        decision = loop.begin(prompt)
        with self._send, self._receive:
            while True:
                await self._record(decision)
                step = decision.step
                if isinstance(step, Finished):
                    return step
                fact = await self._perform(loop, step)
                decision = loop.decide(fact)

    # -- steps -----------------------------------------------------------------------------

    async def _perform(self, loop: AgentLoop, step: Step) -> Fact:
        """Perform `step` while taking steering and an abort from the inbox."""
        outcome: list[Fact] = []
        done: list[Executed] = []
        async with anyio.create_task_group() as tasks:

            async def work() -> None:
                outcome.append(await self._do(step, done))
                tasks.cancel_scope.cancel()

            async def listen() -> None:
                async for item in self._receive:
                    if isinstance(item, _Abort):
                        self._aborting = item.reason
                        tasks.cancel_scope.cancel()
                        return
                    await self._record(loop.decide(item))

            tasks.start_soon(work)
            tasks.start_soon(listen)
        if self._aborting is not None or not outcome:
            return Aborted(tuple(done), self._aborting or RunEndReason.ABORT)
        return outcome[0]

    async def _do(self, step: Step, done: list[Executed]) -> Fact:
        if isinstance(step, GatherPrompt):
            return await self._gather()
        if isinstance(step, AskModel):
            return await self._ask(step)
        if isinstance(step, RunCalls):
            return await self._calls(step, done)
        msg = f"the driver cannot perform {type(step).__name__}"
        raise TypeError(msg)

    async def _gather(self) -> Fact:
        assert self.prompt is not None  # noqa: S101 - set in __post_init__
        reader, scope, reads = self.prompt, self.scope, self.dispatcher.writer.journal
        now, at = self.clock.now(), self._elapsed()

        def gather() -> Fact:
            # The kept copy, not a replay: this process is the session's writer.
            facts = reads.read_session(scope.session_id, session_facts)
            return reader.gather(scope, facts, now, at)

        return await anyio.to_thread.run_sync(gather)

    async def _ask(self, step: AskModel) -> Fact:
        if step.wait > 0:
            await anyio.sleep(step.wait)
        async with self._model_slot():
            return await self._asked(step)

    async def _asked(self, step: AskModel) -> Fact:
        started = self.clock.monotonic()
        try:
            provider = self.providers(step.candidate)
            reply = await provider.reply(step.candidate, step.request, self.hooks.on_text)
        except ModelFailure as error:
            failure = Failure(
                candidate=step.candidate,
                kind=error.kind,
                status=error.status,
                retry_after=error.retry_after,
                message=error.message,
            )
            return Failed(failure, self._elapsed())
        latency = max(0, round((self.clock.monotonic() - started) * 1000))
        return Replied(reply, latency)

    async def _calls(self, step: RunCalls, done: list[Executed]) -> Fact:
        self.hooks.on_call(step)

        async def one(position: int, index: int) -> None:
            async with self._call_slot():
                result = await self.dispatcher.call(
                    self.scope,
                    step.calls[index],
                    cancel_reason=lambda: CancelReason.CLIENT_CANCELLED,
                )
            done.append(executed(position, result))

        if step.parallel:
            async with anyio.create_task_group() as tasks:
                for index, position in enumerate(step.positions):
                    tasks.start_soon(one, position, index)
        else:
            for index, position in enumerate(step.positions):
                await one(position, index)
        return CallsDone(tuple(sorted(done, key=lambda e: e.position)))

    def _model_slot(self) -> AbstractAsyncContextManager[None]:
        return nullcontext() if self._lane is None else self._lane.model_request()

    def _call_slot(self) -> AbstractAsyncContextManager[None]:
        return nullcontext() if self._lane is None else self._lane.tool_call()

    # -- journal ---------------------------------------------------------------------------

    async def _record(self, decision: Decision) -> None:
        """Journal the decision's records; shielded, so a cancelled step never loses one."""
        entries = decision.records
        if not entries:
            return
        run_id = self.scope.run_id

        def record(session: Session) -> None:
            session.record_agent(run_id, entries)

        with anyio.CancelScope(shield=True):
            await self.dispatcher.writer.update(self.scope.session_id, record)
        if self.log is not None:
            self.log.write(self.clock.now(), list(entries))
        self.hooks.on_records(entries)

    def _elapsed(self) -> float:
        return max(0.0, self.clock.monotonic() - self._started)


def executed(position: int, result: ToolResult) -> Executed:
    """The fact of one call that went through the pipeline."""
    outcome = result.outcome if result.end is AttemptEnd.RECEIPT else END_OUTCOMES[result.end]
    return Executed(
        position=position,
        text=result.text,
        outcome=outcome or OutcomeCategory.UNKNOWN,
        failed=result.is_error,
    )
