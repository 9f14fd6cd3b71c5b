"""`ledgerclaw run` and `session replay --verify` from the command line, scripted."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import orjson
import pytest

from tests.agent_rig import agent_home, reply
from tests.cli_runner import invoke


@pytest.fixture
def notes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home whose agent reads notes.md and then answers."""
    notes = tmp_path / "proj" / "notes.md"
    home = agent_home(
        tmp_path,
        [reply("Reading.", ("c1", "read_file", {"path": str(notes)})), reply("They say hi.")],
    )
    notes.write_text("hi")
    monkeypatch.setenv("LEDGERCLAW_HOME", str(home.root))
    return home.root


def session_of(stderr: str) -> str:
    """The session id `run` reports on stderr."""
    return stderr.split("session ", 1)[1].split(maxsplit=1)[0]


@pytest.mark.usefixtures("notes_home")
def test_run_streams_the_answer_and_a_line_per_call() -> None:
    """The text, each call with its outcome on one line, and the end are printed; exit 0."""
    code, out, err = invoke("run", "what do my notes say?")

    lines = out.splitlines()
    assert 0 == code
    assert "Reading." == lines[0]
    assert lines[1].startswith("→ read_file {")
    assert lines[1].endswith("}  success")
    assert "They say hi." == lines[2]
    assert "[run ended: natural]" in out
    assert err.startswith("session ses_")


@pytest.mark.usefixtures("notes_home")
def test_run_json_prints_the_runs_events_as_json_lines() -> None:
    """Each line is one event with its journal name; the last is the run's end."""
    code, out, _err = invoke("run", "--json", "what do my notes say?")

    events = [json.loads(line) for line in out.splitlines()]
    assert 0 == code
    assert "session.agent_run_configured" == events[0]["event"]
    assert {"event": "session.run_ended", "reason": "natural", "detail": ""} == events[-1]
    assert "session.call_answered" in [e["event"] for e in events]


def test_a_run_whose_every_candidate_fails_exits_10(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider error's code is documented: 10, with each attempt in the end line."""
    home = agent_home(tmp_path, [{"error": {"status": 400, "message": "bad request"}}])
    monkeypatch.setenv("LEDGERCLAW_HOME", str(home.root))

    code, out, _err = invoke("run", "hi")

    assert 10 == code
    assert "scripted/demo (default): bad_request (HTTP 400): bad request" in out


def test_a_bad_script_stops_the_run_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line that is not a step is named; no journal is created."""
    home = agent_home(tmp_path, [reply("x")])
    (home.root / "script.jsonl").write_text('{"reply": {"text": "ok"}}\n{"nope": 1}\n')
    monkeypatch.setenv("LEDGERCLAW_HOME", str(home.root))

    code, _out, err = invoke("run", "hi")

    assert 4 == code
    assert "line 2 is not a step" in err
    assert not (home.root / "ledgerclaw.db").exists()


def test_an_unknown_model_is_refused_with_a_suggestion(notes_home: Path) -> None:
    """`--model demoo` names the close match and writes nothing."""
    code, _out, err = invoke("run", "--model", "demoo", "hi")

    assert 4 == code
    assert "did you mean demo?" in err
    assert not (notes_home / "ledgerclaw.db").exists()


@pytest.mark.usefixtures("notes_home")
def test_replay_verify_says_identical_for_a_run() -> None:
    """Every record the decider makes again matches the journal."""
    _code, _out, err = invoke("run", "what do my notes say?")

    code, out, _err = invoke("session", "replay", session_of(err), "--verify")

    assert 0 == code
    assert "identical" == out.splitlines()[-1]


@pytest.mark.tampered
def test_replay_verify_names_the_divergence_of_a_tampered_recording(notes_home: Path) -> None:
    """An edited tool result changes the next request: its event and digest are named."""
    _code, _out, err = invoke("run", "what do my notes say?")
    session = session_of(err)
    database = notes_home / "ledgerclaw.db"
    with closing(sqlite3.connect(database)) as db, db:
        row = db.execute(
            "SELECT originator_version, state FROM stored_events"
            " WHERE topic = 'ledgerclaw.session.message_appended' AND CAST(state AS TEXT) LIKE ?",
            ('%"role":"tool"%',),
        ).fetchone()
        state = orjson.loads(row[1])
        state["message"]["content"] = "they say bye"
        db.execute(
            "UPDATE stored_events SET state = ? WHERE topic = ? AND originator_version = ?",
            (orjson.dumps(state), "ledgerclaw.session.message_appended", row[0]),
        )

    code, out, _err = invoke("session", "replay", session, "--verify")
    json_code, json_out, _err = invoke("session", "replay", session, "--verify", "--json")

    assert (1, 1) == (code, json_code)
    assert "(session.model_requested)" in out
    assert "request_digest: journal" in out
    assert "divergent" == out.splitlines()[-1]
    [run] = json.loads(json_out)["runs"]
    assert "session.model_requested" == run["divergence"]["journaled"]["event"]
