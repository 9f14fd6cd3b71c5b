"""`ledgerclaw tool list` and `ledgerclaw tool call` on real homes, journaled like any call."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli_runner import invoke


def call(tool: str, arguments: dict[str, object], *extra: str) -> tuple[int, dict[str, Any]]:
    """`tool call TOOL --args JSON --json`; the exit code and the parsed result."""
    code, out, _ = invoke("tool", "call", tool, "--args", json.dumps(arguments), "--json", *extra)
    return code, json.loads(out)


def workspace(home: Path, session_id: str) -> Path:
    """The session directory of a session created by the CLI."""
    return home / "sessions" / session_id / "workspace"


@pytest.fixture
def session(home: Path) -> str:
    """A session opened by a first native call, with a few files in its workspace."""
    code, result = call("write_file", {"path": "notes.txt", "content": "alpha\nbeta\n"})
    assert 0 == code
    space = workspace(home, result["session_id"])
    (space / "src").mkdir()
    (space / "src" / "main.py").write_text("print('beta')\n")
    session_id: str = result["session_id"]
    return session_id


def test_tool_list_shows_every_tool_and_why_one_is_not_exposed(home: Path) -> None:
    """All first-party tools are listed; a deferred one says how to load it."""
    code, out, _ = invoke("tool", "list", "--json")
    assert 0 == code
    listing = json.loads(out)
    names = [row["name"] for row in listing["tools"]]
    assert {
        "read_file",
        "list_directory",
        "find_files",
        "grep",
        "write_file",
        "edit_file",
        "attach_file",
        "shell_execute",
        "set_working_directory",
        "tool_output_read",
        "load_tool",
    } == set(names)
    rows = {row["name"]: row for row in listing["tools"]}
    assert (True, False) == (rows["find_files"]["policy_visible"], rows["find_files"]["in_request"])
    assert "request" == rows["shell_execute"]["approval"]
    assert not home.exists()


def test_tool_list_for_public_sessions_hides_the_shell() -> None:
    """The audience option shows the public rules, with the reason."""
    code, out, _ = invoke("tool", "list", "--audience", "public", "--json")
    assert 0 == code
    rows = {row["name"]: row for row in json.loads(out)["tools"]}
    assert (False, "denied for public sessions") == (
        rows["shell_execute"]["policy_visible"],
        rows["shell_execute"]["reason"],
    )
    code, out, _ = invoke("tool", "list", "--audience", "public")
    assert (0, True) == (code, "tools for public sessions" in out)


def test_tool_list_for_a_session_shows_its_loaded_tools(session: str) -> None:
    """After load_tool, the session's listing has the deferred tool in its requests."""
    assert 0 == call("load_tool", {"name": "find_files"}, "--session", session)[0]
    code, out, _ = invoke("tool", "list", "--session", session[:12], "--json")
    assert 0 == code
    rows = {row["name"]: row for row in json.loads(out)["tools"]}
    assert rows["find_files"]["in_request"]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_file", {"path": "notes.txt"}, "beta"),
        ("list_directory", {"path": "."}, "notes.txt"),
        ("grep", {"pattern": "beta"}, "main.py"),
        ("write_file", {"path": "new.txt", "content": "x"}, "wrote 1 bytes"),
        ("set_working_directory", {"path": "src"}, "project directory is now"),
        ("load_tool", {"name": "find_files"}, "find_files"),
    ],
)
def test_each_first_party_tool_works_through_tool_call(
    session: str, tool: str, arguments: dict[str, object], expected: str
) -> None:
    """A native call of each tool succeeds and prints its result."""
    code, result = call(tool, arguments, "--session", session)
    assert 0 == code, result
    assert ("receipt", "success") == (result["end"], result["outcome"])
    assert expected in result["text"]


def test_edit_find_and_spill_read_through_tool_call(home: Path, session: str) -> None:
    """edit_file with the revision read_file reported, find_files after loading, and a spill."""
    _, read = call("read_file", {"path": "notes.txt"}, "--session", session)
    revision = read["text"].split("revision: ")[1].split()[0]
    code, edited = call(
        "edit_file",
        {"path": "notes.txt", "old_text": "beta", "new_text": "gamma", "revision": revision},
        "--session",
        session,
    )
    assert 0 == code, edited
    assert "alpha\ngamma\n" == (workspace(home, session) / "notes.txt").read_text()
    call("load_tool", {"name": "find_files"}, "--session", session)
    code, found = call("find_files", {"pattern": "**/*.py"}, "--session", session)
    assert (0, True) == (code, "src/main.py" in found["text"])
    big = "\n".join(f"row {n}" for n in range(5000))
    (workspace(home, session) / "big.txt").write_text(big)
    _, spilled = call("read_file", {"path": "big.txt"}, "--session", session)
    assert spilled["spill_id"] is not None
    code, window = call(
        "tool_output_read",
        {"call_id": spilled["call_id"], "start": 0, "limit": 400},
        "--session",
        session,
    )
    assert (0, True) == (code, "row 0" in window["text"])


def test_a_shell_call_needs_approve_when_no_one_can_be_asked(home: Path, session: str) -> None:
    """Without a terminal the shell call is denied; --approve lets it run."""
    code, denied = call("shell_execute", {"command": "touch shell.txt"}, "--session", session)
    assert (1, "no_approver") == (code, denied["denial"])
    assert not (workspace(home, session) / "shell.txt").exists()
    code, ran = call(
        "shell_execute", {"command": "touch shell.txt"}, "--session", session, "--approve"
    )
    assert (0, "success") == (code, ran["outcome"])
    assert (workspace(home, session) / "shell.txt").exists()


def test_a_denied_call_exits_1_and_says_why(session: str) -> None:
    """A path outside the roots is denied; the text names the path and the category."""
    code, out, err = invoke(
        "tool", "call", "read_file", "--session", session, "--args", '{"path": "/etc/passwd"}'
    )
    assert 1 == code
    assert "Denied (outside_roots): /etc/passwd" in out
    assert "denied: outside_roots" in err


def test_attempts_and_receipts_show_in_session_replay(session: str) -> None:
    """Native calls are journaled: the replay has their attempts, decisions and receipts."""
    call("read_file", {"path": "/etc/passwd"}, "--session", session)
    code, out, _ = invoke("session", "replay", session, "--json")
    assert 0 == code
    names = [event["event"] for event in json.loads(out)["events"]]
    for name in (
        "storage_bound",
        "attempt_started",
        "policy_evaluated",
        "receipt_recorded",
        "attempt_denied",
        "working_context_changed",
        "run_ended",
    ):
        assert name in {n.removeprefix("session.") for n in names}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("{not json", "--args is not valid JSON"),
        ("[1, 2]", "--args must be a JSON object"),
        ('{"path": ' + "[" * 100 + "]" * 100 + "}", "arguments: nest deeper than 64 levels"),
        ('{"path": ' + "[" * 300 + "]" * 300 + "}", "arguments: nest deeper than 64 levels"),
        ('{"path": ' + "[" * 2000 + "]" * 2000 + "}", "arguments nest deeper than 64 levels"),
    ],
    ids=["not-json", "not-object", "deep", "deeper", "deepest"],
)
def test_malformed_arguments_are_refused_before_anything_is_journaled(
    home: Path, args: str, message: str
) -> None:
    """Bad --args is a usage error (exit 2) and creates no session."""
    code, _, err = invoke("tool", "call", "read_file", "--args", args)
    assert 2 == code
    assert message in err
    assert not (home / "sessions").exists()


@pytest.mark.usefixtures("session")
def test_an_unknown_session_is_a_clear_error() -> None:
    """A session id that matches nothing exits with the unknown-session code."""
    code, _, err = invoke("tool", "call", "read_file", "--session", "ses_ffffffff", "--args", "{}")
    assert 6 == code
    assert "error:" in err


def test_tool_call_works_as_a_real_process(home: Path) -> None:
    """The console entry point runs a call end to end in a subprocess."""
    script = "from cli.app import main; main()"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "tool",
            "call",
            "write_file",
            "--args",
            '{"path": "p.txt", "content": "hi"}',
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "LEDGERCLAW_HOME": str(home)},
    )
    assert 0 == done.returncode, done.stderr
    result = json.loads(done.stdout)
    assert "hi" == (workspace(home, result["session_id"]) / "p.txt").read_text()


def test_configured_roots_and_approval_modes_apply(home: Path, tmp_path: Path) -> None:
    """A root from config.toml grants its operations; an approval mode from it is listed."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "readme.md").write_text("hello from the project\n")
    home.mkdir()
    (home / "config.toml").write_text(
        "[tools]\napproval = { write_file = 'request' }\n"
        f"[[tools.roots]]\npath = '{project}'\noperations = ['read']\n"
    )
    code, out, _ = invoke("tool", "list", "--json")
    rows = {row["name"]: row for row in json.loads(out)["tools"]}
    assert (0, "request") == (code, rows["write_file"]["approval"])
    code, result = call("read_file", {"path": str(project / "readme.md")})
    assert (0, True) == (code, "hello from the project" in result["text"])
    code, result = call("write_file", {"path": str(project / "x.md"), "content": "x"}, "--approve")
    assert (1, "outside_roots") == (code, result["denial"])


def test_an_unknown_tools_setting_is_a_config_error(home: Path) -> None:
    """A misspelled key in [tools] is refused with the config exit code."""
    home.mkdir()
    (home / "config.toml").write_text("[tools]\nroot = '/'\n")
    code, _, err = invoke("tool", "list")
    assert 4 == code
    assert "tools.root" in err


def test_ctrl_c_cancels_the_call_and_journals_it(home: Path) -> None:
    """SIGINT during a running command: the command is killed, the call ends cancelled."""
    script = "from cli.app import main; main()"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            script,
            "tool",
            "call",
            "shell_execute",
            "--approve",
            "--args",
            '{"command": "sleep 30"}',
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "LEDGERCLAW_HOME": str(home)},
    )
    deadline = time.monotonic() + 30
    while not list(home.glob("sessions/*/tmp/parent")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert 130 == process.returncode
    assert "interrupted" in err
    [session] = [path.name for path in (home / "sessions").iterdir()]
    code, out, _ = invoke("session", "replay", session, "--json")
    assert 0 == code
    events = json.loads(out)["events"]
    names = [event["event"].removeprefix("session.") for event in events]
    assert ["receipt_recorded", "run_ended"] == names[-2:]
    assert "cancelled" in json.dumps(events[-2])
    assert "client_cancelled" in json.dumps(events[-2])
    assert "abort" in json.dumps(events[-1])


@pytest.mark.parametrize(
    "setting", ["reviewed_safe = ['ls  -l']", "hard_deny = ['']"], ids=["double-space", "empty"]
)
def test_a_malformed_shell_phrase_is_a_config_error(home: Path, setting: str) -> None:
    """A shell phrase that is not single-spaced words is refused with the config exit code."""
    home.mkdir()
    (home / "config.toml").write_text(f"[tools.shell]\n{setting}\n")
    code, _, err = invoke("tool", "list")
    assert 4 == code
    assert "tools.shell" in err


def test_a_session_store_in_the_way_is_a_clear_error(home: Path) -> None:
    """A file where the sessions directory belongs is a one-line home error."""
    home.mkdir()
    (home / "sessions").write_text("in the way")
    code, _, err = invoke("tool", "call", "read_file", "--args", '{"path": "a.txt"}')
    assert 3 == code
    assert "cannot prepare the session's storage" in err
    assert (
        not (home / "ledgerclaw.db").exists()
        or "[]" == invoke("session", "list", "--json")[1].strip()
    )


def test_replay_shows_what_an_audit_needs(session: str) -> None:
    """Denial details, grant keys and file activity are on the line and in --json data."""
    call("shell_execute", {"command": "touch audited.txt"}, "--session", session, "--approve")
    call("read_file", {"path": "/etc/passwd"}, "--session", session)
    code, out, _ = invoke("session", "replay", session)
    assert 0 == code
    assert "detail=/etc/passwd is outside every trusted root" in out
    assert "grant_key=shell_execute: touch audited.txt (in " in out
    _, out, _ = invoke("session", "replay", session, "--json")
    events = json.loads(out)["events"]
    receipts = [e["data"] for e in events if e["event"].endswith("receipt_recorded")]
    assert any(r["file_activity"] for r in receipts)
    assert all("timestamp" not in e["data"] for e in events)


@pytest.mark.parametrize(
    ("content", "mode", "expected"),
    [
        ('[redact]\nvalues = ["hunter22"]\n', 0o644, "make it owner-only: chmod 600"),
        ('redact = "hunter22"\n', 0o600, "redact"),
        ('[redcat]\nvalues = ["hunter22"]\n', 0o600, "unknown key"),
    ],
)
def test_a_tool_call_refuses_secrets_a_daemon_would_refuse(
    home: Path, content: str, mode: int, expected: str
) -> None:
    """Readable by others, malformed or misspelled: exit 4, one line, nothing journaled."""
    home.mkdir(parents=True)
    secrets = home / "secrets.toml"
    secrets.write_text(content)
    secrets.chmod(mode)
    code, _, err = invoke("tool", "call", "list_directory", "--args", "{}")
    assert 4 == code
    assert expected in err
    assert "Traceback" not in err
    assert not (home / "ledgerclaw.db").exists()
