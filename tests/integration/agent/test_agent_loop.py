"""The agent loop end to end in-process: scripted replies, real tools, a real journal."""

from __future__ import annotations

from pathlib import Path

from adapters.api.agent_run import run_log
from adapters.api.agent_verify import session_events
from adapters.fs.envelope import Envelope
from adapters.pipeline.context import RunScope
from domain.agent import records
from domain.agent.finish import FinishReason
from domain.agent.pairing import NotRun
from domain.ids import RunId, SessionId
from domain.session.events import AuthorizationAttemptStarted, MessageAppended
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import MessageRole
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason
from tests.agent_rig import AgentRig, agent_home, reply


def read(call_id: str, path: Path) -> tuple[str, str, dict[str, object]]:
    """A read_file call of `path`."""
    return (call_id, "read_file", {"path": str(path)})


def test_a_tool_turn_then_an_answer_ends_the_run_naturally(tmp_path: Path) -> None:
    """The call runs through the pipeline, its result pairs with it, and the answer ends the run."""
    notes = tmp_path / "proj" / "notes.md"
    home = agent_home(tmp_path, [reply("Reading.", read("c1", notes)), reply("It says hi.")])
    notes.write_text("hi")
    rig = AgentRig(home)

    [outcome] = rig.run("what do my notes say?")

    assert (RunEndReason.NATURAL, "It says hi.", 0) == (
        outcome.reason,
        outcome.answer,
        outcome.exit_code,
    )
    [answered] = rig.of(records.CallAnswered)
    assert (0, "c1", OutcomeCategory.SUCCESS, None) == (
        answered.position,
        answered.call_id,
        answered.outcome,
        answered.not_run,
    )
    roles = [
        e.message.role
        for e in session_events(home, outcome.session_id)
        if isinstance(e, MessageAppended)
    ]
    assert [
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.ASSISTANT,
    ] == roles
    assert rig.verified(outcome.session_id).identical


def test_the_session_log_gets_a_line_per_step(tmp_path: Path) -> None:
    """Model requests and replies, the call and its outcome, and the end are each one line."""
    notes = tmp_path / "proj" / "notes.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("hi")
    home = agent_home(tmp_path, [reply("", read("c1", notes)), reply("Done.")])

    [outcome] = AgentRig(home).run("go")

    log = (home.root / "sessions" / str(outcome.session_id) / "logs" / "session.log").read_text()
    lines = [line.split(" ", 1)[1] for line in log.splitlines()]
    assert "user: go" == lines[0]
    assert "call c1 answered: success" in lines
    assert "model replied: stop in" in lines[-3][: len("model replied: stop in")]
    assert "run ended: natural" == lines[-1]


def test_parallel_safe_calls_run_together_and_results_keep_the_models_order(
    tmp_path: Path,
) -> None:
    """Three reads launch as one batch; their results come back in the order the model wrote."""
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    for name in ("a", "b", "c"):
        (project / name).write_text(name)
    calls = [read(f"c{n}", project / n) for n in ("a", "b", "c")]
    home = agent_home(tmp_path, [reply("", *calls), reply("ok")])
    rig = AgentRig(home)

    [outcome] = rig.run("read all")

    assert [(("ca", "cb", "cc"), True)] == rig.batches
    answered = rig.of(records.CallAnswered)
    assert [0, 1, 2] == [a.position for a in answered]
    assert all(a.outcome is OutcomeCategory.SUCCESS for a in answered)
    assert rig.verified(outcome.session_id).identical


def test_calls_of_a_reply_cut_by_its_length_limit_never_run(tmp_path: Path) -> None:
    """A `length` reply's calls get `truncated_reply` results and no attempt starts."""
    notes = tmp_path / "proj" / "notes.md"
    home = agent_home(
        tmp_path, [reply("", read("c1", notes), finish="length"), reply("Sorry, done.")]
    )
    rig = AgentRig(home)

    [outcome] = rig.run("go")

    [answered] = rig.of(records.CallAnswered)
    assert NotRun.TRUNCATED_REPLY == answered.not_run
    events = session_events(home, outcome.session_id)
    assert not [e for e in events if isinstance(e, AuthorizationAttemptStarted)]
    assert FinishReason.LENGTH == rig.of(records.ModelAnswered)[0].finish
    assert rig.verified(outcome.session_id).identical


def test_a_reply_without_a_finish_reason_is_broken_and_its_calls_never_run(tmp_path: Path) -> None:
    """A stream that ended without saying how gives its calls `truncated_reply` results."""
    notes = tmp_path / "proj" / "notes.md"
    home = agent_home(tmp_path, [reply("", read("c1", notes), finish=None), reply("Done.")])
    rig = AgentRig(home)

    [outcome] = rig.run("go")

    assert FinishReason.BROKEN == rig.of(records.ModelAnswered)[0].finish
    assert NotRun.TRUNCATED_REPLY == rig.of(records.CallAnswered)[0].not_run
    assert rig.verified(outcome.session_id).identical


def test_call_ids_may_repeat_across_turns(tmp_path: Path) -> None:
    """Two turns that both name their call `c1` each get their own result."""
    notes = tmp_path / "proj" / "notes.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("x")
    home = agent_home(
        tmp_path, [reply("", read("c1", notes)), reply("", read("c1", notes)), reply("done")]
    )
    rig = AgentRig(home)

    [outcome] = rig.run("go")

    assert ["c1", "c1"] == [a.call_id for a in rig.of(records.CallAnswered)]
    begun = rig.of(records.TurnBegun)
    # The working context moved (recent files), so the suffix did; the prefix did not.
    assert 1 == len({t.prefix_digest for t in begun})
    assert 1 == len(rig.of(records.PrefixSet))
    assert begun[0].suffix != begun[-1].suffix
    assert rig.verified(outcome.session_id).identical


def test_a_second_run_continues_the_same_transcript(tmp_path: Path) -> None:
    """The next prompt in the session is asked with the whole transcript before it."""
    home = agent_home(tmp_path, [reply("First."), reply("Second.")])
    rig = AgentRig(home)

    first, second = rig.run("one", "two")

    assert first.session_id == second.session_id
    assert ("First.", "Second.") == (first.answer, second.answer)
    check = rig.verified(first.session_id)
    assert 2 == len(check.runs)
    assert check.identical


def test_a_subagent_run_logs_to_its_own_file_and_a_main_run_to_the_sessions() -> None:
    """A child run's raw log is under subagents/RUN/logs; a main run's is the session's."""
    envelope = Envelope(Path("/srv/home/sessions/ses_1"))
    run_id = RunId.new()
    main = RunScope(SessionId.new(), run_id, SessionKind.MAIN, Audience.PERSONAL, envelope)
    child = RunScope(SessionId.new(), run_id, SessionKind.SUBAGENT, Audience.PERSONAL, envelope)

    assert envelope.log == run_log(main)
    assert envelope.root / "subagents" / str(run_id) / "logs" / "session.log" == run_log(child)
