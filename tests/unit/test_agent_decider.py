"""The agent loop's decider: from facts alone, the records it journals and the next step."""

from __future__ import annotations

import pytest

from domain.agent import records
from domain.agent.decider import AgentLoop, LoopSettings, LoopStateError
from domain.agent.failover import ModelChoice
from domain.agent.finish import FinishReason
from domain.agent.pairing import NotRun
from domain.agent.replay import Journaled, PrefixState, replay_run
from domain.agent.replies import ModelReply, ToolSpec, Usage
from domain.agent.steps import (
    AskModel,
    CallsDone,
    Decision,
    Executed,
    Finished,
    GatherPrompt,
    PromptGathered,
    Replied,
    RunCalls,
    UserSpoke,
)
from domain.ids import CallId
from domain.values.conversation import MessageRole, ToolCallRequest
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason

READ = ToolSpec(name="read_file", description="Read a file.")
WRITE = ToolSpec(name="write_file", description="Write a file.")
SETTINGS = LoopSettings(chain=(ModelChoice("scripted", "demo", ("default",)),))


def gathered(*tools: ToolSpec, prefix: str = "You help.", at: float = 0.0) -> PromptGathered:
    """The prompt fact of a turn offering `tools`; read_file is the parallel-safe one."""
    safe = frozenset(t.name for t in tools if t.name == "read_file")
    return PromptGathered(prefix, f"now {at}", tools, safe, at)


def calls_reply(*names: str, usage: Usage | None = None) -> Replied:
    """A tool turn calling each of `names`."""
    calls = tuple(
        ToolCallRequest(call_id=CallId(f"c{n}"), name=name, arguments={"n": n})
        for n, name in enumerate(names)
    )
    reply = ModelReply(tool_calls=calls, raw_finish="tool_calls", finish=FinishReason.TOOL_CALLS)
    return Replied(reply.model_copy(update={"usage": usage}), latency_ms=1)


def answer(text: str = "Done.", usage: Usage | None = None) -> Replied:
    """A reply without calls."""
    reply = ModelReply(text=text, raw_finish="stop", finish=FinishReason.STOP, usage=usage)
    return Replied(reply, latency_ms=1)


def ok(*positions: int) -> CallsDone:
    """Every call at `positions` succeeded."""
    return CallsDone(
        tuple(Executed(p, "ok", OutcomeCategory.SUCCESS, failed=False) for p in positions)
    )


def kinds(decision: Decision) -> list[type[object]]:
    """The record types of a decision, in order."""
    return [type(r) for r in decision.records]


def test_the_prefix_is_recorded_once_while_it_stays_the_same_and_again_when_tools_change() -> None:
    """A second turn with the same prefix and tools records no PrefixSet; new tools do."""
    loop = AgentLoop(SETTINGS)
    loop.begin("hi")

    first = loop.decide(gathered(READ))
    loop.decide(calls_reply("read_file"))
    loop.decide(ok(0))
    second = loop.decide(gathered(READ, at=1.0))
    loop.decide(calls_reply("read_file"))
    loop.decide(ok(0))
    third = loop.decide(gathered(READ, WRITE, at=2.0))

    assert records.PrefixSet in kinds(first)
    assert records.PrefixSet not in kinds(second)
    assert records.PrefixSet in kinds(third)


def test_parallel_safe_calls_launch_together_and_others_one_by_one() -> None:
    """Two reads are one batch; a read beside a write runs one call at a time, in order."""
    together = AgentLoop(SETTINGS)
    together.begin("go")
    together.decide(gathered(READ, WRITE))
    step = together.decide(calls_reply("read_file", "read_file")).step

    apart = AgentLoop(SETTINGS)
    apart.begin("go")
    apart.decide(gathered(READ, WRITE))
    first = apart.decide(calls_reply("read_file", "write_file")).step
    second = apart.decide(ok(0)).step

    assert RunCalls((0, 1), step.calls, parallel=True) == step  # type: ignore[union-attr]
    assert ((0,), (1,)) == (first.positions, second.positions)  # type: ignore[union-attr]


def test_steering_before_the_batch_skips_its_calls_and_joins_before_the_next_request() -> None:
    """Calls get `steering` results; the message is appended before the next turn begins."""
    loop = AgentLoop(SETTINGS)
    loop.begin("look at a")
    loop.decide(gathered(READ))
    queued = loop.decide(UserSpoke("look at b"))
    skipped = loop.decide(calls_reply("read_file"))
    next_turn = loop.decide(gathered(READ, at=1.0))

    assert [records.MessageQueued] == kinds(queued)
    assert isinstance(skipped.step, GatherPrompt)
    answered = [r for r in skipped.records if isinstance(r, records.CallAnswered)]
    assert [NotRun.STEERING] == [a.not_run for a in answered]
    appended = next_turn.records[0]
    assert isinstance(appended, records.Appended)
    assert (MessageRole.USER, "look at b") == (appended.message.role, appended.message.content)
    assert isinstance(next_turn.step, AskModel)


def test_the_providers_count_wins_over_the_estimate() -> None:
    """A reply that reports 125,000 prompt tokens leaves no room in a 128,000 window."""
    loop = AgentLoop(SETTINGS)
    loop.begin("hi")
    loop.decide(gathered(READ))
    loop.decide(calls_reply("read_file", usage=Usage(input_tokens=125_000, output_tokens=10)))
    loop.decide(ok(0))

    ended = loop.decide(gathered(READ, at=1.0))

    assert isinstance(ended.step, Finished)
    assert RunEndReason.CONTEXT_EXHAUSTED == ended.step.reason
    assert "125,0" in ended.step.detail


def test_a_fact_the_run_is_not_waiting_for_is_refused() -> None:
    """Results while the model is being asked are a driver bug, refused with a typed error."""
    loop = AgentLoop(SETTINGS)
    loop.begin("hi")
    loop.decide(gathered(READ))

    with pytest.raises(LoopStateError, match="cannot take CallsDone while asking"):
        loop.decide(ok(0))


def test_replay_names_the_field_of_a_record_that_differs() -> None:
    """An edited reply in the journal is named with its field, journal against replay."""
    loop = AgentLoop(SETTINGS)
    journal = list(loop.begin("hi").records)
    journal += loop.decide(gathered(READ)).records
    journal += loop.decide(answer("Done.")).records
    run = [Journaled(n, r) for n, r in enumerate(journal, start=5)]
    assert replay_run(run, [], PrefixState()).identical

    asked = next(i for i, j in enumerate(run) if isinstance(j.record, records.ModelAsked))
    edited = run[asked].record.model_copy(update={"estimated_tokens": 1})
    run[asked] = Journaled(run[asked].version, edited)
    verdict = replay_run(run, [], PrefixState())

    assert verdict.divergence is not None
    assert run[asked].version == verdict.divergence.version
    assert verdict.divergence.differences[0].startswith("estimated_tokens: journal 1, replay ")
