"""Replaying a journaled agent run through the decider, with nothing re-run; domain layer.

The journal holds what the decider decided and the facts it decided on: replies and
failures as the providers gave them, results as the pipeline gave them, steering as it
arrived, the prompt as it was read. `replay_run` feeds those facts to a fresh decider, in
the order they happened, and compares each record it makes with the journal's. No model is
asked and no tool runs; the first record that differs is the divergence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from domain.agent import records
from domain.agent.decider import SHUTDOWN_DETAIL, AgentLoop, LoopStateError, configured_settings
from domain.agent.failover import Candidate, Failure, FailureKind
from domain.agent.pairing import NotRun
from domain.agent.replies import ModelReply, ToolSpec
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
    PromptGathered,
    Replied,
    RunCalls,
    Step,
    UserSpoke,
)
from domain.values.conversation import ChatMessage, MessageRole
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason

ABORT_ENDS = frozenset({RunEndReason.ABORT, RunEndReason.SHUTDOWN})
RECOVERY_ENDS = frozenset({RunEndReason.CRASHED, RunEndReason.SUPERSEDED, RunEndReason.SHUTDOWN})
"""Ends written by recovery or the host rather than by the decider."""


@dataclass(frozen=True)
class Journaled:
    """One record of the run as the journal holds it, with its event's place in the stream."""

    version: int
    record: records.AgentRecord


@dataclass(frozen=True)
class Divergence:
    """The first record where the journal and the decider disagree."""

    version: int | None
    """The journal's event at that place (None when the journal has no record there)."""
    journaled: records.AgentRecord | None
    decided: records.AgentRecord | None
    differences: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """Whether a run replays identically, how far it was compared, and how it ended."""

    compared: int
    divergence: Divergence | None = None
    note: str = ""

    @property
    def identical(self) -> bool:
        """Whether every record the decider made matched the journal's."""
        return self.divergence is None


@dataclass(frozen=True)
class PrefixState:
    """The stable prefix and tools in force, as last recorded."""

    prefix: str = ""
    tools: tuple[ToolSpec, ...] = ()
    parallel_safe: tuple[str, ...] = ()
    digest: str | None = None


class _Diverged(Exception):  # noqa: N818 - control flow inside replay, never raised out
    def __init__(self, divergence: Divergence) -> None:
        super().__init__(divergence.differences)
        self.divergence = divergence


def differences(journaled: records.AgentRecord, decided: records.AgentRecord) -> tuple[str, ...]:
    """What differs between two records, field by field, in words."""
    if type(journaled) is not type(decided):
        return (f"journal has {type(journaled).__name__}, replay decided {type(decided).__name__}",)
    left, right = journaled.model_dump(mode="json"), decided.model_dump(mode="json")
    return tuple(
        f"{name}: journal {left.get(name)!r}, replay {right.get(name)!r}"
        for name in sorted(set(left) | set(right))
        if left.get(name) != right.get(name)
    )


class _Replay:
    def __init__(self, run: Sequence[Journaled], prefix: PrefixState) -> None:
        self.run = list(run)
        self.at = 0
        self.prefix = prefix

    def take(self, decision: Decision) -> Step:
        for decided in decision.records:
            journaled = self.run[self.at] if self.at < len(self.run) else None
            if journaled is None or journaled.record != decided:
                found = journaled.record if journaled else None
                diff = differences(found, decided) if found else ("the journal ends here",)
                version = journaled.version if journaled else None
                raise _Diverged(Divergence(version, found, decided, diff))
            if isinstance(decided, records.PrefixSet):
                self.prefix = PrefixState(
                    decided.prefix, decided.tools, decided.parallel_safe, decided.digest
                )
            self.at += 1
        return decision.step

    def peek(self, offset: int = 0) -> records.AgentRecord | None:
        index = self.at + offset
        return self.run[index].record if index < len(self.run) else None

    def abort_reason(self) -> RunEndReason:
        """How the decider ended an aborted run: `shutdown` when its host stopped it."""
        last = self.run[-1].record if self.run else None
        if isinstance(last, records.RunClosed) and last.detail == SHUTDOWN_DETAIL:
            return RunEndReason.SHUTDOWN
        return RunEndReason.ABORT

    def recovered_tail(self) -> RunEndReason | None:
        """The end recovery wrote, if everything left is what recovery writes."""
        rest = [j.record for j in self.run[self.at :]]
        if not rest or not isinstance(rest[-1], records.RunClosed):
            return None
        if rest[-1].detail == SHUTDOWN_DETAIL:
            return None  # the decider's own end: the hosting daemon stopped the run
        if rest[-1].reason not in RECOVERY_ENDS | {RunEndReason.ABORT}:
            return None
        allowed = (records.CallAnswered, records.Appended, records.TurnClosed, records.RunClosed)
        if all(isinstance(r, allowed) for r in rest):
            return rest[-1].reason
        return None


def replay_run(
    run: Sequence[Journaled], transcript: Sequence[ChatMessage], prefix: PrefixState
) -> Verdict:
    """Replay one agent run from its journaled records; the transcript and prefix before it."""
    if len(run) < 2 or not isinstance(run[0].record, records.RunConfigured):  # noqa: PLR2004 - configured, then the prompt
        return Verdict(0, note="not an agent run")
    first = run[1].record
    if not (isinstance(first, records.Appended) and first.message.role is MessageRole.USER):
        return Verdict(0, note="the run does not start with the user's message")
    settings = configured_settings(run[0].record)
    replay = _Replay(run, prefix)
    loop = AgentLoop(settings, transcript, last_prefix_digest=prefix.digest)
    try:
        return _drive(replay, loop, replay.take(loop.begin(first.message.content)))
    except _Diverged as diverged:
        return Verdict(replay.at, diverged.divergence)
    except LoopStateError as error:
        version = replay.run[min(replay.at, len(run) - 1)].version
        return Verdict(replay.at, Divergence(version, replay.peek(), None, (str(error),)))


def _drive(replay: _Replay, loop: AgentLoop, step: Step) -> Verdict:
    while not isinstance(step, Finished):
        ended = replay.recovered_tail()
        if ended in RECOVERY_ENDS:
            note = f"the run ended {ended} outside the loop, which closed its open calls"
            return Verdict(replay.at, note=note)
        fact = _next_fact(replay, step)
        if fact is None:
            record = replay.peek()
            if record is None:
                return Verdict(replay.at, note="the run has not ended: compared so far")
            diff = (f"journal has {type(record).__name__} where no fact fits",)
            return Verdict(replay.at, Divergence(replay.run[replay.at].version, record, None, diff))
        decided = replay.take(loop.decide(fact))
        if not isinstance(fact, UserSpoke):  # a queued message leaves the step in flight
            step = decided
    if replay.at < len(replay.run):
        extra = replay.run[replay.at]
        return Verdict(
            replay.at, Divergence(extra.version, extra.record, None, ("the journal goes on",))
        )
    return Verdict(replay.at)


def _next_fact(replay: _Replay, step: Step) -> Fact | None:  # noqa: PLR0911 - one fact per record kind
    record = replay.peek()
    if isinstance(record, records.MessageQueued):
        return UserSpoke(record.text, follow_up=record.kind is records.QueueKind.FOLLOW_UP)
    if isinstance(step, GatherPrompt):
        return _gathered(replay)
    if isinstance(step, AskModel):
        if isinstance(record, records.ModelAnswered):
            return _replied(replay, record)
        if isinstance(record, records.ModelAttemptFailed):
            failure = Failure(
                Candidate(record.provider, record.model, record.profile),
                FailureKind(record.kind),
                record.status,
                record.retry_after,
                record.message,
            )
            return Failed(failure, record.at)
        return _aborted(replay, ())
    if isinstance(step, RunCalls):
        done = _executed(replay, step)
        if done is None:
            return None
        if len(done) == len(step.positions):
            return CallsDone(done)
        return Aborted(done, replay.abort_reason())
    return None


def _gathered(replay: _Replay) -> Fact | None:
    offset, prefix = 0, replay.prefix
    while isinstance(replay.peek(offset), records.Appended):  # queued messages, taken first
        offset += 1
    record = replay.peek(offset)
    if isinstance(record, records.PrefixSet):
        prefix = PrefixState(record.prefix, record.tools, record.parallel_safe, record.digest)
        offset += 1
    begun = replay.peek(offset)
    if isinstance(begun, records.TurnBegun):
        return PromptGathered(
            prefix.prefix, begun.suffix, prefix.tools, frozenset(prefix.parallel_safe), begun.at
        )
    if isinstance(begun, records.RunClosed) and begun.reason in ABORT_ENDS:
        return Aborted((), replay.abort_reason())
    if isinstance(begun, records.RunClosed | records.Appended):
        # The turn limit ends a run before any prompt counts; queued messages come first.
        return PromptGathered(prefix.prefix, "", prefix.tools, frozenset(prefix.parallel_safe), 0.0)
    return None


def _replied(replay: _Replay, answered: records.ModelAnswered) -> Fact | None:
    message = replay.peek(1)
    if not isinstance(message, records.Appended):
        return None
    reply = ModelReply(
        text=message.message.content,
        tool_calls=message.message.tool_calls,
        raw_finish=answered.raw_finish,
        finish=answered.finish,
        usage=answered.usage,
        notes=answered.notes,
    )
    return Replied(reply, answered.latency_ms)


def _executed(replay: _Replay, step: RunCalls) -> tuple[Executed, ...] | None:
    """The results journaled for the step's calls; None if some are missing (not aborted)."""
    results: list[Executed] = []
    offset = 0
    wanted = set(step.positions)
    while True:
        answered, message = replay.peek(offset), replay.peek(offset + 1)
        if not (
            isinstance(answered, records.CallAnswered)
            and answered.not_run is None
            and answered.position in wanted
            and isinstance(message, records.Appended)
        ):
            break
        outcome = answered.outcome or OutcomeCategory.UNKNOWN
        results.append(
            Executed(answered.position, message.message.content, outcome, answered.failed)
        )
        offset += 2
    if len(results) < len(wanted) and not _is_abort(replay.peek(offset)):
        return None
    return tuple(results)


def _is_abort(record: records.AgentRecord | None) -> bool:
    if isinstance(record, records.CallAnswered):
        return record.not_run is NotRun.CANCELLED
    if isinstance(record, records.TurnClosed):
        return True
    return isinstance(record, records.RunClosed) and record.reason in ABORT_ENDS


def _aborted(replay: _Replay, done: tuple[Executed, ...]) -> Fact | None:
    return Aborted(done, replay.abort_reason()) if _is_abort(replay.peek()) else None
