"""The agent loop as a decider: from the run's state and a fact, the next step; domain layer.

`AgentLoop` holds one run's state and nothing else: no clock, no provider, no files. Fed a
fact (`domain/agent/steps.py`), it returns the records that journal what it decided and the
one step the driver performs next. The driver (`adapters/runtime/agent_driver.py`) only
performs; replay feeds the same decider the journaled facts and compares what it decides
with what was journaled.

Safe points for steering are before a model request, before a batch launches and between
the calls of a sequential batch; a started call is never interrupted by it. Every call of a
reply gets one result, and every run ends with a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from domain.agent import records
from domain.agent.encoding import canonical_json, message_json, request_json, tools_json
from domain.agent.failover import (
    Candidate,
    Failover,
    FailoverAction,
    FailoverPolicy,
    ModelChoice,
    surfaced_error_text,
)
from domain.agent.finish import plan_batch
from domain.agent.loop_guard import CallResult, LoopGuard, LoopLimits, call_signature
from domain.agent.pairing import SYNTHETIC_TEXT, NotRun
from domain.agent.prompt import digest
from domain.agent.replies import ModelReply, ModelRequest, ToolSpec
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
    KeepWaiting,
    PromptGathered,
    Replied,
    RunCalls,
    Step,
    UserSpoke,
)
from domain.agent.tokens import estimate_tokens, request_fits
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.runs import RunEndReason

SHUTDOWN_DETAIL = "the daemon stopped"
"""The detail of a run ended because its hosting daemon stopped."""


class Phase(StrEnum):
    """What the run is waiting for."""

    READY = "ready"
    GATHERING = "gathering"
    ASKING = "asking"
    CALLING = "calling"
    ENDED = "ended"


@dataclass(frozen=True)
class LoopSettings:
    """What a run is configured with: its models, failover, limits and context window."""

    chain: tuple[ModelChoice, ...]
    policy: FailoverPolicy = field(default_factory=FailoverPolicy)
    limits: LoopLimits = field(default_factory=LoopLimits)
    context_window: int = 128_000
    output_reserve: int = 4_096
    max_output_tokens: int = 4_096


class LoopStateError(Exception):
    """A fact arrived that the run cannot take in its phase: a driver bug, never user input."""


def configured_record(settings: LoopSettings) -> records.RunConfigured:
    """The record of what a run is configured with."""
    policy, limits = settings.policy, settings.limits
    return records.RunConfigured(
        chain=tuple(
            records.ChainModel(provider=c.provider, model=c.model, profiles=c.profiles)
            for c in settings.chain
        ),
        retry_after_cap=policy.retry_after_cap,
        cooldown=policy.cooldown,
        transient_wait=policy.transient_wait,
        fall_back=policy.fall_back,
        same_failure=limits.same_failure,
        failed_turns=limits.failed_turns,
        turns=limits.turns,
        context_window=settings.context_window,
        output_reserve=settings.output_reserve,
        max_output_tokens=settings.max_output_tokens,
    )


def configured_settings(record: records.RunConfigured) -> LoopSettings:
    """The settings a run's configuration record describes: what replay decides with."""
    return LoopSettings(
        chain=tuple(ModelChoice(c.provider, c.model, c.profiles) for c in record.chain),
        policy=FailoverPolicy(
            retry_after_cap=record.retry_after_cap,
            cooldown=record.cooldown,
            transient_wait=record.transient_wait,
            fall_back=record.fall_back,
        ),
        limits=LoopLimits(
            same_failure=record.same_failure, failed_turns=record.failed_turns, turns=record.turns
        ),
        context_window=record.context_window,
        output_reserve=record.output_reserve,
        max_output_tokens=record.max_output_tokens,
    )


class AgentLoop:
    """One run of the agent loop, deciding from facts alone."""

    def __init__(
        self,
        settings: LoopSettings,
        transcript: Sequence[ChatMessage] = (),
        *,
        last_prefix_digest: str | None = None,
    ) -> None:
        self.settings = settings
        self.messages: list[ChatMessage] = list(transcript)
        self._texts = [message_json(m) for m in self.messages]
        """Each message's canonical JSON, kept so a request is not encoded whole every turn."""
        self.phase = Phase.READY
        self.guard = LoopGuard(settings.limits)
        self.cooling: dict[tuple[str, str], float] = {}
        self.queue: list[records.MessageQueued] = []
        self.take_follow_ups = False
        self.last_prefix_digest = last_prefix_digest
        self._failover: Failover | None = None
        self._request: ModelRequest | None = None
        self._reply: ModelReply | None = None
        self._pending: list[int] = []
        self._turn_results: list[CallResult] = []
        self._parallel_safe: frozenset[str] = frozenset()
        self._measured: tuple[int, int] | None = None
        self._request_text = ""
        self._tools: tuple[tuple[ToolSpec, ...], str, str] = ((), "[]", digest("[]"))
        """The tools offered last, their canonical JSON and its digest."""
        """The tokens the provider counted up to the last reply, and the messages then."""

    @property
    def turn(self) -> int:
        """The turn in progress, or the last one (0 before the first)."""
        return self.guard.turns

    # -- entry points ----------------------------------------------------------------------

    def begin(self, prompt: str) -> Decision:
        """Start the run with the user's message."""
        if self.phase is not Phase.READY:
            msg = f"the run already began (phase {self.phase})"
            raise LoopStateError(msg)
        message = ChatMessage(role=MessageRole.USER, content=prompt)
        self._append(message)
        self.phase = Phase.GATHERING
        configured = configured_record(self.settings)
        return Decision((configured, records.Appended(message=message)), GatherPrompt())

    def decide(self, fact: Fact) -> Decision:
        """The records and the next step for `fact`."""
        if self.phase in (Phase.READY, Phase.ENDED):
            msg = f"the run cannot take {type(fact).__name__} while {self.phase}"
            raise LoopStateError(msg)
        if isinstance(fact, UserSpoke):
            return self._queued(fact)
        if isinstance(fact, Aborted):
            return self._aborted(fact)
        expected = {
            PromptGathered: Phase.GATHERING,
            Replied: Phase.ASKING,
            Failed: Phase.ASKING,
            CallsDone: Phase.CALLING,
        }[type(fact)]
        if self.phase is not expected:
            msg = f"the run cannot take {type(fact).__name__} while {self.phase}"
            raise LoopStateError(msg)
        if isinstance(fact, PromptGathered):
            return self._prompt_gathered(fact)
        if isinstance(fact, Replied):
            return self._replied(fact)
        if isinstance(fact, Failed):
            return self._failed(fact)
        return self._calls_done(fact)

    # -- facts -----------------------------------------------------------------------------

    def _queued(self, fact: UserSpoke) -> Decision:
        kind = records.QueueKind.FOLLOW_UP if fact.follow_up else records.QueueKind.STEERING
        queued = records.MessageQueued(kind=kind, text=fact.text)
        self.queue.append(queued)
        return Decision((queued,), KeepWaiting())

    def _prompt_gathered(self, fact: PromptGathered) -> Decision:
        out: list[records.AgentRecord] = []
        stop = self.guard.before_turn()
        if stop is not None:
            return self._end(out, stop.reason, stop.detail)
        out.extend(self._take_queue())
        self._parallel_safe = fact.parallel_safe
        prefix_digest = digest(fact.prefix)
        if fact.tools != self._tools[0]:
            text = tools_json(fact.tools)
            self._tools = (fact.tools, text, digest(text))
        tool_set = self._tools[2]
        parallel = tuple(sorted(fact.parallel_safe))
        set_digest = digest(canonical_json([prefix_digest, tool_set, parallel]))
        if set_digest != self.last_prefix_digest:
            out.append(
                records.PrefixSet(
                    digest=set_digest, prefix=fact.prefix, tools=fact.tools, parallel_safe=parallel
                )
            )
            self.last_prefix_digest = set_digest
        # Built from values already checked: validating the whole transcript again every
        # turn would cost time growing with the conversation.
        request = ModelRequest.model_construct(
            prefix=fact.prefix,
            suffix=fact.suffix,
            messages=tuple(self.messages),
            tools=fact.tools,
            max_output_tokens=self.settings.max_output_tokens,
        )
        out.append(
            records.TurnBegun(
                turn=self.turn,
                suffix=fact.suffix,
                prefix_digest=prefix_digest,
                tools_digest=tool_set,
                at=fact.at,
            )
        )
        text = request_json(request, self._texts, self._tools[1])
        estimated = self._estimate(text)
        window, reserve = self.settings.context_window, self.settings.output_reserve
        if not request_fits(estimated, window, reserve):
            detail = (
                f"the next request needs about {estimated:,} tokens; the model's window is "
                f"{window:,} with {reserve:,} kept for the reply"
            )
            out.append(records.TurnClosed(turn=self.turn))
            return self._end(out, RunEndReason.CONTEXT_EXHAUSTED, detail)
        self._failover = Failover(self.settings.chain, self.settings.policy, self.cooling)
        self._request = request
        candidate = self._failover.first(fact.at)
        self._request_text = text
        out.append(self._asked(candidate, request, estimated))
        self.phase = Phase.ASKING
        return Decision(tuple(out), AskModel(candidate, request))

    def _asked(
        self, candidate: Candidate, request: ModelRequest, estimated: int
    ) -> records.ModelAsked:
        return records.ModelAsked(
            turn=self.turn,
            provider=candidate.provider,
            model=candidate.model,
            profile=candidate.profile,
            request_digest=digest(self._request_text),
            prefix_digest=digest(request.prefix),
            tools_digest=self._tools[2],
            estimated_tokens=estimated,
        )

    def _failed(self, fact: Failed) -> Decision:
        assert self._failover is not None  # noqa: S101 - asking implies a failover state
        assert self._request is not None  # noqa: S101 - asking implies a request
        failure = fact.failure
        decision = self._failover.after(failure, fact.at)
        failed = records.ModelAttemptFailed(
            turn=self.turn,
            provider=failure.candidate.provider,
            model=failure.candidate.model,
            profile=failure.candidate.profile,
            kind=str(failure.kind),
            status=failure.status,
            retry_after=failure.retry_after,
            message=failure.message[:2000],
            action=str(decision.action),
            wait=decision.wait,
            at=fact.at,
        )
        out: list[records.AgentRecord] = [failed]
        if decision.action is FailoverAction.SURFACE_ERROR or decision.candidate is None:
            out.append(records.TurnClosed(turn=self.turn))
            detail = surfaced_error_text(decision.attempts)[:2000]
            return self._end(out, RunEndReason.PROVIDER_ERROR, detail)
        estimated = self._estimate(self._request_text)
        out.append(self._asked(decision.candidate, self._request, estimated))
        return Decision(tuple(out), AskModel(decision.candidate, self._request, decision.wait))

    def _replied(self, fact: Replied) -> Decision:
        reply = fact.reply
        answered = records.ModelAnswered(
            turn=self.turn,
            raw_finish=reply.raw_finish,
            finish=reply.finish,
            usage=reply.usage,
            latency_ms=fact.latency_ms,
            notes=reply.notes,
        )
        message = ChatMessage(
            role=MessageRole.ASSISTANT, content=reply.text, tool_calls=reply.tool_calls
        )
        self._append(message)
        out: list[records.AgentRecord] = [answered, records.Appended(message=message)]
        self._reply = reply
        if reply.usage is not None and reply.usage.input_tokens is not None:
            counted = reply.usage.input_tokens + (reply.usage.output_tokens or 0)
            self._measured = (counted, len(self.messages))
        if not reply.tool_calls:
            out.append(records.TurnClosed(turn=self.turn))
            if self.queue:
                self.take_follow_ups = True
                return self._next_turn(out)
            return self._end(out, RunEndReason.NATURAL)
        names = [call.name for call in reply.tool_calls]
        plan = plan_batch(reply.finish, names, self._parallel_safe.__contains__)
        self._pending = list(range(len(reply.tool_calls)))
        self._turn_results = []
        if not plan.runs:
            out.extend(self._synthetic(NotRun.TRUNCATED_REPLY))
            out.append(records.TurnClosed(turn=self.turn))
            return self._next_turn(out)
        if self._steering_waits():
            out.extend(self._synthetic(NotRun.STEERING))
            out.append(records.TurnClosed(turn=self.turn))
            return self._next_turn(out)
        self.phase = Phase.CALLING
        return Decision(tuple(out), self._launch(parallel=plan.parallel))

    def _calls_done(self, fact: CallsDone) -> Decision:
        out = self._take_results(fact.results)
        if self._pending and self._steering_waits():
            out.extend(self._synthetic(NotRun.STEERING))
        if self._pending:
            return Decision(tuple(out), self._launch(parallel=False))
        stop = self.guard.after_calls(self._turn_results)
        out.append(records.TurnClosed(turn=self.turn))
        if stop is not None:
            return self._end(out, stop.reason, stop.detail)
        return self._next_turn(out)

    def _aborted(self, fact: Aborted) -> Decision:
        out: list[records.AgentRecord] = []
        if self.phase is Phase.CALLING:
            out.extend(self._take_results(fact.done))
        if self._pending:
            out.extend(self._synthetic(NotRun.CANCELLED))
        if self.phase in (Phase.ASKING, Phase.CALLING):
            out.append(records.TurnClosed(turn=self.turn))
        if fact.reason is RunEndReason.SHUTDOWN:
            return self._end(out, RunEndReason.SHUTDOWN, SHUTDOWN_DETAIL)
        return self._end(out, RunEndReason.ABORT, "the user aborted the run")

    # -- helpers ---------------------------------------------------------------------------

    def _estimate(self, request_text: str) -> int:
        """The request's tokens: the provider's count so far wins, plus estimates of the rest."""
        if self._measured is None:
            return estimate_tokens(request_text)
        counted, upto = self._measured
        later = self._texts[upto:]
        return counted + estimate_tokens(f"[{','.join(later)}]") if later else counted

    def _append(self, message: ChatMessage) -> None:
        self.messages.append(message)
        self._texts.append(message_json(message))

    def _launch(self, *, parallel: bool) -> RunCalls:
        assert self._reply is not None  # noqa: S101 - calls come from the last reply
        positions = tuple(self._pending) if parallel else (self._pending[0],)
        calls = tuple(self._reply.tool_calls[p] for p in positions)
        return RunCalls(positions, calls, parallel=parallel and len(positions) > 1)

    def _take_results(self, results: Sequence[Executed]) -> list[records.AgentRecord]:
        assert self._reply is not None  # noqa: S101 - results answer the last reply
        out: list[records.AgentRecord] = []
        for result in sorted(results, key=lambda r: r.position):
            if result.position not in self._pending:
                msg = f"call {result.position} of the reply is not waiting for a result"
                raise LoopStateError(msg)
            call = self._reply.tool_calls[result.position]
            self._pending.remove(result.position)
            out.extend(self._answer(result.position, call, result.text, result))
            signature = call_signature(call.name, digest(canonical_json(call.arguments)))
            detail = digest(result.text) if result.failed else ""
            self._turn_results.append(CallResult(signature, result.outcome, detail))
        return out

    def _synthetic(self, reason: NotRun) -> list[records.AgentRecord]:
        assert self._reply is not None  # noqa: S101 - synthetic results answer the last reply
        out: list[records.AgentRecord] = []
        for position in list(self._pending):
            call = self._reply.tool_calls[position]
            out.extend(self._answer(position, call, SYNTHETIC_TEXT[reason], None, reason))
        self._pending = []
        return out

    def _answer(
        self,
        position: int,
        call: ToolCallRequest,
        text: str,
        result: Executed | None,
        not_run: NotRun | None = None,
    ) -> list[records.AgentRecord]:
        message = ChatMessage(role=MessageRole.TOOL, content=text, call_id=call.call_id)
        self._append(message)
        answered = records.CallAnswered(
            position=position,
            call_id=call.call_id,
            not_run=not_run,
            outcome=None if result is None else result.outcome,
            failed=True if result is None else result.failed,
        )
        return [answered, records.Appended(message=message)]

    def _steering_waits(self) -> bool:
        return any(q.kind is records.QueueKind.STEERING for q in self.queue)

    def _take_queue(self) -> list[records.AgentRecord]:
        taken = [
            q for q in self.queue if q.kind is records.QueueKind.STEERING or self.take_follow_ups
        ]
        self.queue = [q for q in self.queue if q not in taken]
        self.take_follow_ups = False
        out: list[records.AgentRecord] = []
        for queued in taken:
            message = ChatMessage(role=MessageRole.USER, content=queued.text)
            self._append(message)
            out.append(records.Appended(message=message))
        return out

    def _next_turn(self, out: list[records.AgentRecord]) -> Decision:
        self.phase = Phase.GATHERING
        self._reply, self._pending = None, []
        return Decision(tuple(out), GatherPrompt())

    def _end(
        self, out: list[records.AgentRecord], reason: RunEndReason, detail: str = ""
    ) -> Decision:
        self.phase = Phase.ENDED
        out.append(records.RunClosed(reason=reason, detail=detail))
        step: Step = Finished(reason, detail)
        return Decision(tuple(out), step)
