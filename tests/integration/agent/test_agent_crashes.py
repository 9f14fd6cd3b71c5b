"""`kill -9` during a model stream and during a tool call: the next run starts well-formed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from adapters.api.agent_verify import session_events
from domain.agent.pairing import NotRun
from domain.ids import SessionId
from domain.session.agent_events import CallAnswered, ModelReplied, ModelRequested
from domain.session.events import AttemptOutcomeMarkedUnknown, MessageAppended, RunEnded
from domain.values.conversation import MessageRole
from domain.values.runs import RunEndReason
from tests.agent_rig import AgentRig, agent_home, reply, write_script

WAIT = 20.0


def start_run(home: Path, *args: str) -> subprocess.Popen[bytes]:
    """`ledgerclaw run` in a child process on `home`."""
    env = {**os.environ, "LEDGERCLAW_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "cli", "run", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def wait_for_log(home: Path, text: str) -> str:
    """The session id once its log shows `text`."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for log in (home / "sessions").glob("*/logs/session.log"):
            if text in log.read_text():
                return log.parent.parent.name
        time.sleep(0.05)
    msg = f"no session log showed {text!r}"
    raise AssertionError(msg)


def killed(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process (if it still runs), reap it and close its pipes."""
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.wait(timeout=WAIT)
    assert process.stdout is not None
    assert process.stderr is not None
    process.stdout.close()
    process.stderr.close()


def test_a_kill_during_a_model_stream_ends_the_run_crashed_without_the_partial_reply(
    tmp_path: Path,
) -> None:
    """On restart the run ends `crashed`; no reply of it is in the transcript; nothing re-asks."""
    home = agent_home(tmp_path, [{"delay": 30}, reply("never said")])
    process = start_run(home.root, "slow question")
    session = wait_for_log(home.root, "asked: about")
    killed(process)
    write_script(home.root / "script.jsonl", [reply("Back again.")])

    [outcome] = AgentRig(home).run("are you there?", session=session)

    events = session_events(home, outcome.session_id)
    ends = [e.reason for e in events if isinstance(e, RunEnded)]
    assert [RunEndReason.CRASHED, RunEndReason.NATURAL] == ends
    assert 2 == sum(isinstance(e, ModelRequested) for e in events)
    assert 1 == sum(isinstance(e, ModelReplied) for e in events)
    roles = [e.message.role for e in events if isinstance(e, MessageAppended)]
    assert [MessageRole.USER, MessageRole.USER, MessageRole.ASSISTANT] == roles
    check = AgentRig(home).verified(outcome.session_id)
    assert check.identical
    assert "crashed" in check.runs[0].verdict.note


def test_a_kill_during_a_tool_call_leaves_it_unknown_with_its_synthetic_result(
    tmp_path: Path,
) -> None:
    """The attempt is `unknown`, the call gets an `unknown` result, and the next run proceeds."""
    project = tmp_path / "proj"
    call = ("s1", "shell_execute", {"command": "sleep 30", "cwd": str(project)})
    home = agent_home(tmp_path, [reply("Running it.", call)])
    process = start_run(home.root, "--approve", "run the slow thing")
    session = wait_for_log(home.root, "calls shell_execute")
    time.sleep(0.5)
    killed(process)
    write_script(home.root / "script.jsonl", [reply("It did not finish.")])

    [outcome] = AgentRig(home).run("what happened?", session=session)

    events = session_events(home, outcome.session_id)
    answered = [e for e in events if isinstance(e, CallAnswered)]
    assert [("s1", NotRun.UNKNOWN)] == [(a.call_id, a.not_run) for a in answered]
    assert 1 == sum(isinstance(e, AttemptOutcomeMarkedUnknown) for e in events)
    roles = [e.message.role for e in events if isinstance(e, MessageAppended)]
    assert [
        MessageRole.USER,
        MessageRole.ASSISTANT,
        MessageRole.TOOL,
        MessageRole.USER,
        MessageRole.ASSISTANT,
    ] == roles
    assert "It did not finish." == outcome.answer
    assert AgentRig(home).verified(outcome.session_id).identical


def test_ctrl_c_aborts_a_run_and_exits_130(tmp_path: Path) -> None:
    """SIGINT during the model request ends the run `abort`; the process exits 130."""
    home = agent_home(tmp_path, [{"delay": 30}, reply("never said")])
    process = start_run(home.root, "slow question")
    session = wait_for_log(home.root, "asked: about")

    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=WAIT)
    killed(process)

    assert 130 == code
    events = session_events(home, SessionId(session))
    assert [RunEndReason.ABORT] == [e.reason for e in events if isinstance(e, RunEnded)]
