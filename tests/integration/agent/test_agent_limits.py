"""Failover between candidates and the limits that end a run, each with its named reason."""

from __future__ import annotations

from pathlib import Path

from domain.agent import records
from domain.agent.failover import FailoverAction
from domain.values.runs import RunEndReason
from tests.agent_rig import AgentRig, agent_home, reply, write_script

BACKUP = """[models.backup]
provider = "scripted"
model = "backup"
script = "backup.jsonl"
"""


def error(status: int, message: str = "failed", **more: object) -> dict[str, object]:
    """A scripted failure."""
    return {"error": {"status": status, "message": message, **more}}


def test_a_rate_limited_profile_rotates_to_the_next_one(tmp_path: Path) -> None:
    """A 429 on profile a is recorded, and the same model is asked with profile b."""
    home = agent_home(tmp_path, [error(429), reply("Answered.")], profiles='["a", "b"]')
    rig = AgentRig(home)

    [outcome] = rig.run("hi")

    [failed] = rig.of(records.ModelAttemptFailed)
    assert ("a", "rate_limited", str(FailoverAction.ROTATE_PROFILE)) == (
        failed.profile,
        failed.kind,
        failed.action,
    )
    assert ["a", "b"] == [a.profile for a in rig.of(records.ModelAsked)]
    assert "Answered." == outcome.answer
    assert rig.verified(outcome.session_id).identical


def test_a_failing_model_falls_back_and_only_the_accepted_reply_is_kept(tmp_path: Path) -> None:
    """Two 503s (one retry) move to the fallback model, whose reply alone is in the transcript."""
    home = agent_home(
        tmp_path,
        [error(503), error(503)],
        extra_models=BACKUP,
        agent='fallbacks = ["backup"]\n',
    )
    write_script(home.root / "backup.jsonl", [reply("From the backup.")])
    rig = AgentRig(home)

    [outcome] = rig.run("hi")

    actions = [f.action for f in rig.of(records.ModelAttemptFailed)]
    assert [str(FailoverAction.RETRY_AFTER_WAIT), str(FailoverAction.FALLBACK_MODEL)] == actions
    assert ["demo", "demo", "backup"] == [a.model for a in rig.of(records.ModelAsked)]
    assistant = [
        a.message.content for a in rig.of(records.Appended) if a.message.role == "assistant"
    ]
    assert ["From the backup."] == assistant
    assert rig.verified(outcome.session_id).identical


def test_when_every_candidate_fails_the_run_ends_with_each_attempt_listed(tmp_path: Path) -> None:
    """The run ends `provider_error`; its detail names every attempt and the exit code is 10."""
    home = agent_home(
        tmp_path, [error(401, "bad key"), error(401, "bad key")], profiles='["a", "b"]'
    )
    rig = AgentRig(home)

    [outcome] = rig.run("hi")

    assert (RunEndReason.PROVIDER_ERROR, 10) == (outcome.reason, outcome.exit_code)
    assert "scripted/demo (a): auth (HTTP 401): bad key" in outcome.detail
    assert "scripted/demo (b): auth (HTTP 401): bad key" in outcome.detail
    assert rig.verified(outcome.session_id).identical


def test_a_model_chosen_explicitly_does_not_fall_back(tmp_path: Path) -> None:
    """`--model demo` asks demo alone: its failure ends the run though a fallback exists."""
    home = agent_home(
        tmp_path, [error(400, "bad request")], extra_models=BACKUP, agent='fallbacks = ["backup"]\n'
    )
    write_script(home.root / "backup.jsonl", [reply("never")])
    rig = AgentRig(home)

    [outcome] = rig.run("hi", model="demo")

    assert RunEndReason.PROVIDER_ERROR == outcome.reason
    assert ["demo"] == [a.model for a in rig.of(records.ModelAsked)]


def test_the_same_call_failing_the_same_way_three_times_ends_the_run(tmp_path: Path) -> None:
    """Three reads of a missing file in a row end the run `tool_loop_terminated`."""
    missing = str(tmp_path / "proj" / "missing.md")
    steps = [reply("", (f"c{n}", "read_file", {"path": missing})) for n in range(5)]
    rig = AgentRig(agent_home(tmp_path, steps))

    [outcome] = rig.run("read it")

    assert (RunEndReason.TOOL_LOOP_TERMINATED, 11) == (outcome.reason, outcome.exit_code)
    assert "read_file failed the same way 3 times in a row" in outcome.detail
    assert 3 == len(rig.of(records.CallAnswered))
    assert rig.verified(outcome.session_id).identical


def test_consecutive_turns_whose_calls_all_failed_end_the_run(tmp_path: Path) -> None:
    """Different failing calls, turn after turn, end the run at the configured limit."""
    project = tmp_path / "proj"
    steps = [
        reply("", (f"c{n}", "read_file", {"path": str(project / f"{n}.md")})) for n in range(5)
    ]
    rig = AgentRig(agent_home(tmp_path, steps, agent="failed_turns_limit = 2\n"))

    [outcome] = rig.run("read them")

    assert RunEndReason.TOOL_LOOP_TERMINATED == outcome.reason
    assert "every call failed in 2 consecutive turns" == outcome.detail
    assert rig.verified(outcome.session_id).identical


def test_the_turn_limit_ends_the_run_naming_the_limit(tmp_path: Path) -> None:
    """With `turn_limit = 2` a third turn is never asked; the run ends `strategy_stop`."""
    notes = tmp_path / "proj" / "notes.md"
    notes.parent.mkdir(parents=True)
    notes.write_text("x")
    steps = [reply("", (f"c{n}", "read_file", {"path": str(notes)})) for n in range(3)]
    rig = AgentRig(agent_home(tmp_path, steps, agent="turn_limit = 2\n"))

    [outcome] = rig.run("loop")

    assert (RunEndReason.STRATEGY_STOP, 12) == (outcome.reason, outcome.exit_code)
    assert "the run reached its limit of 2 turns" == outcome.detail
    assert 2 == len(rig.of(records.ModelAsked))
    assert rig.verified(outcome.session_id).identical


def test_a_request_that_cannot_fit_ends_the_run_without_asking(tmp_path: Path) -> None:
    """A window too small for the prompt ends the run `context_exhausted`; no model is asked."""
    rig = AgentRig(agent_home(tmp_path, [reply("never")], window=1_024, reserve=1_000))

    [outcome] = rig.run("hi")

    assert (RunEndReason.CONTEXT_EXHAUSTED, 13) == (outcome.reason, outcome.exit_code)
    assert "the model's window is 1,024 with 1,000 kept for the reply" in outcome.detail
    assert not rig.of(records.ModelAsked)
    assert rig.verified(outcome.session_id).identical
