"""Steering, follow-ups and aborts: user messages that arrive while a run works."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.lowlevel

from adapters.api.agent_verify import session_events
from domain.agent import records
from domain.agent.pairing import NotRun
from domain.session.events import MessageAppended, ToolReceiptRecorded
from domain.values.conversation import MessageRole
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason
from tests.agent_rig import AgentRig, abort, agent_home, reply, steer


def asked(turn: int) -> Callable[[records.AgentRecord], bool]:
    """A trigger on the model being asked in `turn`."""
    return lambda r: isinstance(r, records.ModelAsked) and r.turn == turn


def has_calls(record: records.AgentRecord) -> bool:
    """A trigger on the reply whose calls are about to run."""
    return isinstance(record, records.Appended) and bool(record.message.tool_calls)


def later(seconds: float, act: Callable[[], object]) -> None:
    """Call `act` in the event loop after `seconds`, from a timer thread."""
    token = anyio.lowlevel.current_token()
    timer = threading.Timer(seconds, lambda: anyio.from_thread.run_sync(act, token=token))
    timer.daemon = True
    timer.start()


def transcript_roles(rig: AgentRig, outcome: object) -> list[MessageRole]:
    """The roles of the session's transcript, in order."""
    events = session_events(rig.home, outcome.session_id)  # type: ignore[attr-defined]
    return [e.message.role for e in events if isinstance(e, MessageAppended)]


def test_steering_during_a_model_request_skips_the_calls_not_yet_launched(tmp_path: Path) -> None:
    """The reply's calls get `steering` results; the message joins before the next request."""
    notes = tmp_path / "proj" / "notes.md"
    steps = [
        {"delay": 0.3},
        reply("", ("c1", "read_file", {"path": str(notes)})),
        reply("Checking b instead."),
    ]
    rig = AgentRig(agent_home(tmp_path, steps))
    rig.when(asked(1), steer("look at b instead"))

    [outcome] = rig.run("look at a")

    assert [records.QueueKind.STEERING] == [q.kind for q in rig.of(records.MessageQueued)]
    assert [NotRun.STEERING] == [a.not_run for a in rig.of(records.CallAnswered)]
    users = [a.message.content for a in rig.of(records.Appended) if a.message.role == "user"]
    assert ["look at a", "look at b instead"] == users
    assert RunEndReason.NATURAL == outcome.reason
    assert rig.verified(outcome.session_id).identical


def test_steering_between_sequential_calls_skips_only_those_not_started(tmp_path: Path) -> None:
    """The first write ran and keeps its result; the second gets a `steering` result."""
    project = tmp_path / "proj"
    writes = [
        (f"w{n}", "write_file", {"path": str(project / f"{n}.txt"), "content": str(n)})
        for n in (1, 2)
    ]
    rig = AgentRig(agent_home(tmp_path, [reply("", *writes), reply("Stopped.")]))
    # Sent as the batch is about to launch: it is taken while the first write runs.
    rig.when(has_calls, steer("stop writing"))

    [outcome] = rig.run("write two files")

    answered = rig.of(records.CallAnswered)
    assert [(0, None), (1, NotRun.STEERING)] == [(a.position, a.not_run) for a in answered]
    assert (project / "1.txt").exists()
    assert not (project / "2.txt").exists()
    assert rig.verified(outcome.session_id).identical


def test_a_follow_up_continues_the_same_run_once_the_model_answers(tmp_path: Path) -> None:
    """A follow-up waits for the answer, then the model is asked again in the same run."""
    steps = [{"delay": 0.3}, reply("First answer."), reply("Second answer.")]
    rig = AgentRig(agent_home(tmp_path, steps))
    rig.when(asked(1), steer("and then?", follow_up=True))

    [outcome] = rig.run("question")

    assert "Second answer." == outcome.answer
    assert [1, 2] == [t.turn for t in rig.of(records.TurnBegun)]
    assert [records.QueueKind.FOLLOW_UP] == [q.kind for q in rig.of(records.MessageQueued)]
    assert rig.verified(outcome.session_id).identical


def test_an_abort_during_a_model_request_ends_the_run_and_the_session_continues(
    tmp_path: Path,
) -> None:
    """The stream is cancelled, no reply enters the transcript, and the next run answers."""
    steps = [{"delay": 5}, reply("Too late."), reply("Here now.")]
    rig = AgentRig(agent_home(tmp_path, steps))
    rig.when(asked(1), abort)

    first, second = rig.run("slow question", "try again")

    assert (RunEndReason.ABORT, 130) == (first.reason, first.exit_code)
    assert not [a for a in rig.of(records.ModelAnswered) if a.turn == 1 and a.latency_ms > 4000]
    assert "Too late." == second.answer
    roles = transcript_roles(rig, first)
    assert [MessageRole.USER, MessageRole.USER, MessageRole.ASSISTANT] == roles
    assert rig.verified(first.session_id).identical


def test_an_abort_during_a_tool_call_cancels_it_and_answers_the_call(tmp_path: Path) -> None:
    """The running command's attempt ends cancelled and its call gets a `cancelled` result."""
    project = tmp_path / "proj"
    call = ("s1", "shell_execute", {"command": "sleep 20", "cwd": str(project)})
    rig = AgentRig(agent_home(tmp_path, [reply("", call), reply("unused")]))
    rig.when(has_calls, lambda s: later(0.5, lambda: abort(s)))

    [outcome] = rig.run("run a slow command", approve=True)

    assert RunEndReason.ABORT == outcome.reason
    assert [NotRun.CANCELLED] == [a.not_run for a in rig.of(records.CallAnswered)]
    receipts = [
        e
        for e in session_events(rig.home, outcome.session_id)
        if isinstance(e, ToolReceiptRecorded)
    ]
    assert [OutcomeCategory.CANCELLED] == [r.outcome for r in receipts]
    assert rig.verified(outcome.session_id).identical
