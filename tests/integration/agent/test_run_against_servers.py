"""`ledgerclaw run` against loopback OpenAI-compatible and Anthropic servers: real HTTP and SSE."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.api.agent_verify import session_events
from adapters.home import Home, resolve_home
from domain.agent import records
from domain.agent.finish import FinishReason
from domain.session.agent_events import ModelAttemptFailed, ModelReplied
from tests.agent_rig import AgentRig
from tests.fakes import anthropic_server, openai_server

KEY = "sk-test-0123456789abcdef"


def served_home(root: Path, provider: str, base_url: str, model: str) -> Home:
    """A home whose one model is `model` at `base_url`, with its key in secrets.toml."""
    home, project = root / "home", root / "proj"
    home.mkdir(parents=True)
    project.mkdir(parents=True)
    (project / "notes.md").write_text("the notes say hi")
    (home / "config.toml").write_text(
        f"""[agent]
model = "served"

[models.served]
provider = "{provider}"
model = "{model}"
base_url = "{base_url}"

[[tools.roots]]
path = "{project}"
operations = ["read"]
audiences = ["personal"]
"""
    )
    secrets = home / "secrets.toml"
    secrets.write_text(f'[profiles.default]\napi_key = "{KEY}"\n')
    secrets.chmod(0o600)
    return resolve_home({"LEDGERCLAW_HOME": str(home)})


def notes_call(root: Path) -> tuple[str, str, dict[str, object]]:
    """The read_file call of the project's notes."""
    return ("call_1", "read_file", {"path": str(root / "proj" / "notes.md")})


def test_run_answers_a_prompt_against_an_openai_compatible_server(tmp_path: Path) -> None:
    """A subprocess `run` streams from the server, runs the call, and sends its result back."""
    with openai_server.serving(models=("gpt-test",)) as fake:
        home = served_home(tmp_path, "openai", fake.base_url, "gpt-test")
        fake.enqueue(
            openai_server.tool_call_reply([notes_call(tmp_path)]),
            openai_server.text_reply("Your notes say hi."),
        )
        done = subprocess.run(
            [sys.executable, "-m", "cli", "run", "what do my notes say?"],
            env={**os.environ, "LEDGERCLAW_HOME": str(home.root)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        sent = fake.requests

    assert (0, "") == (done.returncode, done.stderr.split("session ")[0])
    assert "Your notes say hi." in done.stdout
    assert f"Bearer {KEY}" == sent[0].headers["authorization"]
    tool_message = sent[1].body["messages"][-1]
    assert ("tool", "call_1", "the notes say hi") == (
        tool_message["role"],
        tool_message["tool_call_id"],
        tool_message["content"].strip()[-16:],
    )
    session = done.stderr.split("session ", 1)[1].split()[0]
    check = AgentRig(home).verified(session)  # type: ignore[arg-type]
    assert check.identical


def test_tool_calls_reported_with_stop_still_run(tmp_path: Path) -> None:
    """A server that ends a tool turn with `stop` has its call run; both reasons are journaled."""
    with openai_server.serving(models=("gpt-test",)) as fake:
        home = served_home(tmp_path, "openai", fake.base_url, "gpt-test")
        fake.enqueue(
            openai_server.tool_call_reply([notes_call(tmp_path)], finish="stop"),
            openai_server.text_reply("Done."),
        )
        rig = AgentRig(home)
        [outcome] = rig.run("read")

    first = rig.of(records.ModelAnswered)[0]
    assert ("stop", FinishReason.TOOL_CALLS) == (first.raw_finish, first.finish)
    assert [None] == [a.not_run for a in rig.of(records.CallAnswered)]
    assert rig.verified(outcome.session_id).identical


def test_a_cut_stream_is_retried_and_its_partial_text_never_kept(tmp_path: Path) -> None:
    """The cut attempt is a transient failure; the retried reply alone enters the transcript."""
    with openai_server.serving(models=("gpt-test",)) as fake:
        home = served_home(tmp_path, "openai", fake.base_url, "gpt-test")
        partial = openai_server.text_reply("I was saying something long")
        fake.enqueue(
            openai_server.CutStream(partial.chunks[:3]), openai_server.text_reply("Whole answer.")
        )
        rig = AgentRig(home)
        [outcome] = rig.run("hi")

    events = session_events(home, outcome.session_id)
    [failed] = [e for e in events if isinstance(e, ModelAttemptFailed)]
    assert ("transient", "retry_after_wait") == (failed.kind, failed.action)
    assistant = [
        a.message.content for a in rig.of(records.Appended) if a.message.role == "assistant"
    ]
    assert ["Whole answer."] == assistant
    assert rig.verified(outcome.session_id).identical


def test_a_server_refusing_streaming_with_tools_is_asked_without_and_the_journal_says_so(
    tmp_path: Path,
) -> None:
    """The reply comes from a non-streamed request and its note is in the model reply event."""
    with openai_server.serving(models=("gpt-test",)) as fake:
        home = served_home(tmp_path, "openai", fake.base_url, "gpt-test")
        fake.refuse_streaming_with_tools = True
        fake.enqueue(openai_server.completion("Fine without streaming."))
        rig = AgentRig(home)
        [outcome] = rig.run("hi")

    [replied] = [e for e in session_events(home, outcome.session_id) if isinstance(e, ModelReplied)]
    assert "Fine without streaming." == outcome.answer
    assert any("without streaming" in note for note in replied.notes)
    assert rig.verified(outcome.session_id).identical


@pytest.mark.parametrize("status", [401, 429])
def test_a_refused_key_fails_over_and_surfaces_without_the_key(tmp_path: Path, status: int) -> None:
    """Every attempt is listed in the run's end, and the key appears nowhere in it."""
    with openai_server.serving(models=("gpt-test",)) as fake:
        home = served_home(tmp_path, "openai", fake.base_url, "gpt-test")
        fake.enqueue(*[openai_server.http_error(status, f"rejected {KEY}")] * 3)
        [outcome] = AgentRig(home).run("hi")

    assert 10 == outcome.exit_code
    assert "openai/gpt-test (default)" in outcome.detail
    assert KEY not in outcome.detail


def test_run_answers_against_an_anthropic_server_with_a_cache_breakpoint(tmp_path: Path) -> None:
    """The tool_use is run, its tool_result sent back, and the prefix block is cacheable."""
    with anthropic_server.serving(models=("claude-test",)) as fake:
        home = served_home(tmp_path, "anthropic", fake.base_url, "claude-test")
        fake.enqueue(
            anthropic_server.tool_use_message([notes_call(tmp_path)], text="Reading."),
            anthropic_server.text_message("They say hi."),
        )
        rig = AgentRig(home)
        [outcome] = rig.run("what do my notes say?")
        sent: list[Any] = [r.body for r in fake.requests]

    assert "They say hi." == outcome.answer
    system = sent[0]["system"]
    assert {"type": "ephemeral"} == system[0]["cache_control"]
    results = sent[1]["messages"][-1]["content"]
    assert ("tool_result", "call_1") == (results[0]["type"], results[0]["tool_use_id"])
    assert rig.verified(outcome.session_id).identical
