"""The agent loop under random replies, failures, steering, aborts and crashes.

A simulated world answers each step the decider asks for (a prompt, a model reply or a
failure, results of calls) while the rules also steer, abort and crash runs at random
moments. The records are journaled into a real Session aggregate, as the driver does.
Invariants: every call of every reply has exactly one result, in order; the session rebuilt
from its events equals the live one; replaying each run from its records decides the same
records; every run that stopped has a named reason.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from adapters.api.agent_verify import agent_runs
from domain.agent import records
from domain.agent.decider import AgentLoop, LoopSettings
from domain.agent.failover import Failure, FailureKind, ModelChoice
from domain.agent.finish import normalise_finish
from domain.agent.loop_guard import LoopLimits
from domain.agent.replay import replay_run
from domain.agent.replies import ModelReply, ToolSpec
from domain.agent.steps import (
    Aborted,
    AskModel,
    CallsDone,
    Decision,
    Executed,
    Failed,
    Finished,
    GatherPrompt,
    KeepWaiting,
    PromptGathered,
    Replied,
    RunCalls,
    Step,
    UserSpoke,
)
from domain.ids import CallId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.events import MessageAppended
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason
from tests.story import Story

TOOLS = (
    ToolSpec(name="read_file", description="Read a file."),
    ToolSpec(name="grep", description="Search files."),
    ToolSpec(name="write_file", description="Write a file."),
)
PARALLEL = frozenset({"read_file", "grep"})
SETTINGS = LoopSettings(
    chain=(ModelChoice("scripted", "a", ("p1", "p2")), ModelChoice("scripted", "b", ("p1",))),
    limits=LoopLimits(same_failure=3, failed_turns=3, turns=6),
    context_window=1_000_000,
)


def _new_session() -> Session:
    return Session.open(SessionOpening(SessionId.new(), "k", SessionKind.MAIN, Audience.PERSONAL))


STORY = Story(Session, _new_session)

calls_strategy = st.lists(
    st.tuples(st.sampled_from(["c1", "c2", "c1", "x"]), st.sampled_from([t.name for t in TOOLS])),
    max_size=3,
)
finishes = st.sampled_from(["default", "stop", "length", None, "tool_calls", "end_turn"])
outcomes = st.sampled_from(
    [OutcomeCategory.SUCCESS, OutcomeCategory.SUCCESS, OutcomeCategory.NOT_FOUND]
)


class AgentMachine(RuleBasedStateMachine):
    """One session; runs start, are answered, steered, aborted and crashed at random."""

    def __init__(self) -> None:
        super().__init__()
        self.session = STORY.create()
        self.events: list[Any] = STORY.drain(self.session)
        self.run_id: RunId | None = None
        self.loop: AgentLoop | None = None
        self.step: Step | None = None
        self.runs: list[RunId] = []
        self.clock = 0.0

    # -- helpers ---------------------------------------------------------------------------

    def _journal(self, decision: Decision) -> None:
        assert self.run_id is not None
        if decision.records:
            self.session.record_agent(self.run_id, decision.records)
            self.events.extend(STORY.drain(self.session))
        if not isinstance(decision.step, KeepWaiting):
            self.step = decision.step
        if isinstance(self.step, Finished):
            self.run_id, self.loop, self.step = None, None, None

    def _decide(self, fact: Any) -> None:
        assert self.loop is not None
        self.clock += 1.5
        self._journal(self.loop.decide(fact))

    @property
    def live(self) -> bool:
        """Whether a run is in progress."""
        return self.run_id is not None

    # -- rules -----------------------------------------------------------------------------

    @precondition(lambda self: not self.live)
    @rule(prompt=st.text(min_size=1, max_size=20))
    def start_run(self, prompt: str) -> None:
        """A new run begins with the user's message."""
        run_id = RunId.new()
        self.session.start_run(run_id)
        self.session.claim_writer(run_id)
        self.events.extend(STORY.drain(self.session))
        transcript = [e.message for e in self.events if isinstance(e, MessageAppended)]
        self.run_id, self.runs = run_id, [*self.runs, run_id]
        self.loop = AgentLoop(SETTINGS, transcript, last_prefix_digest=self.session.prompt_digest)
        self._journal(self.loop.begin(prompt))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        """The world answers the step the run waits on, in any way it may."""
        if isinstance(self.step, GatherPrompt):
            self._gather(data)
        elif isinstance(self.step, AskModel):
            if data.draw(st.booleans()):
                self._answer(data)
            else:
                self._fail(data, self.step)
        elif isinstance(self.step, RunCalls):
            self._finish_calls(data, self.step)

    def _gather(self, data: st.DataObject) -> None:
        """The prompt is read: a suffix that changes and a tool set that may."""
        offered = TOOLS[: data.draw(st.integers(0, len(TOOLS)))]
        names = frozenset(t.name for t in offered) & PARALLEL
        suffix = data.draw(st.text(max_size=10))
        self._decide(PromptGathered("prefix", suffix, offered, names, self.clock))

    def _answer(self, data: st.DataObject) -> None:
        """The model replies, with calls or without, ending in any way a server may."""
        text, calls, raw = (
            data.draw(st.text(max_size=10)),
            data.draw(calls_strategy),
            data.draw(finishes),
        )
        requests = tuple(
            ToolCallRequest(call_id=CallId(i), name=n, arguments={"n": k})
            for k, (i, n) in enumerate(calls)
        )
        if raw == "default":
            raw = "tool_calls" if requests else "stop"
        finish = normalise_finish(raw, has_tool_calls=bool(requests))
        reply = ModelReply(text=text, tool_calls=requests, raw_finish=raw, finish=finish)
        self._decide(Replied(reply, latency_ms=3))

    def _fail(self, data: st.DataObject, step: AskModel) -> None:
        """The candidate asked fails, classified any way."""
        kind = data.draw(st.sampled_from(FailureKind))
        status = data.draw(st.sampled_from([None, 400, 401, 429, 500]))
        retry_after = data.draw(st.none() | st.floats(0, 5))
        failure = Failure(step.candidate, kind, status, retry_after, "failed")
        self._decide(Failed(failure, self.clock))

    def _finish_calls(self, data: st.DataObject, step: RunCalls) -> None:
        """The launched calls finish, each succeeding or failing."""
        results = []
        for position in step.positions:
            outcome = data.draw(outcomes)
            failed = outcome is not OutcomeCategory.SUCCESS
            results.append(Executed(position, f"result {position}", outcome, failed))
        self._decide(CallsDone(tuple(results)))

    @precondition(lambda self: self.live)
    @rule(text=st.text(min_size=1, max_size=10), follow_up=st.booleans())
    def speak(self, text: str, follow_up: bool) -> None:
        """The user types during the run."""
        self._decide(UserSpoke(text, follow_up=follow_up))

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def abort(self, data: st.DataObject) -> None:
        """The user aborts; a batch in flight may have finished some calls."""
        done: tuple[Executed, ...] = ()
        if isinstance(self.step, RunCalls):
            count = data.draw(st.integers(0, len(self.step.positions) - 1))
            done = tuple(
                Executed(p, "partial", OutcomeCategory.SUCCESS, failed=False)
                for p in self.step.positions[:count]
            )
        self._decide(Aborted(done))

    @precondition(lambda self: self.live)
    @rule()
    def crash(self) -> None:
        """The process dies; recovery ends the run crashed, closing what it left open."""
        self.session.recover()
        self.events.extend(STORY.drain(self.session))
        self.run_id, self.loop, self.step = None, None, None

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def every_call_has_one_result_in_order(self) -> None:
        """After each reply, its calls' results follow, one each, before anything else."""
        transcript = [e.message for e in self.events if isinstance(e, MessageAppended)]
        for index, message in enumerate(transcript):
            if message.role is not MessageRole.ASSISTANT or not message.tool_calls:
                continue
            answers = _answers_after(transcript, index)
            expected = [c.call_id for c in message.tool_calls]
            if index == _last_reply(transcript) and self.live:
                assert expected[: len(answers)] == answers
            else:
                assert expected == answers

    @invariant()
    def replay_equals_live_state(self) -> None:
        """The session rebuilt from its events is the live one."""
        assert self.session.state() == STORY.replay(self.events).state()

    @invariant()
    def every_stopped_run_has_a_reason_and_replays_identically(self) -> None:
        """Ended runs name why; each replays from its records to the same records."""
        for run_id, journaled, transcript, prefix in agent_runs(self.events):
            ended = self.session.runs[run_id].ended
            assert (ended is None) == (run_id == self.run_id)
            verdict = replay_run(journaled, transcript, prefix)
            assert verdict.identical, verdict.divergence
            if ended is not None and ended is not RunEndReason.CRASHED:
                assert isinstance(journaled[-1].record, records.RunClosed)


def _answers_after(transcript: list[ChatMessage], index: int) -> list[str]:
    answers = []
    for message in transcript[index + 1 :]:
        if message.role is not MessageRole.TOOL:
            break
        answers.append(str(message.call_id))
    return answers


def _last_reply(transcript: list[ChatMessage]) -> int:
    replies = [i for i, m in enumerate(transcript) if m.role is MessageRole.ASSISTANT]
    return replies[-1] if replies else -1


TestAgentMachine = AgentMachine.TestCase
