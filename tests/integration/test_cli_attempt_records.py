"""`tool call`, `session replay` and `audit` answer "what exactly ran", on real homes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from cli import render, render_read_models
from tests.cli_runner import invoke

SECRET = "tok-5e9d2a7c41"


def call(tool: str, arguments: dict[str, object], *extra: str) -> tuple[int, dict[str, str]]:
    """`tool call TOOL --args JSON --json`; the exit code and the parsed result."""
    code, out, _ = invoke("tool", "call", tool, "--args", json.dumps(arguments), "--json", *extra)
    return code, json.loads(out)


def line_of(out: str, event: str) -> str:
    """The one timeline line of `event`."""
    [line] = [line for line in out.splitlines() if line.split()[3:4] == [event]]
    return line


def workspace(home: Path, session_id: str) -> Path:
    """The workspace of a session the CLI created, as the journal spells it."""
    return (home / "sessions" / session_id / "workspace").resolve()


@pytest.fixture
def columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Listings drawn at 80 columns, the width when output is not a terminal."""
    console = Console(highlight=False, soft_wrap=False, markup=False, width=80)
    monkeypatch.setattr(render_read_models, "out", console)


def test_replay_shows_what_a_shell_call_asked_and_how_it_ran(home: Path) -> None:
    """The attempt's line has the arguments; the receipt's the command, cwd, exit and size."""
    code, result = call("shell_execute", {"command": "printf hi > said.txt"}, "--approve")
    assert 0 == code
    session = result["session_id"]

    code, out, _ = invoke("session", "replay", session)

    assert 0 == code
    assert 'arguments={"command":"printf hi > said.txt"}' in line_of(out, "attempt_started")
    receipt = line_of(out, "receipt_recorded")
    for field in (
        "command=printf hi > said.txt",
        f"cwd={workspace(home, session)}",
        "exit_code=0",
        "output_bytes=0",
        "duration_ms=",
    ):
        assert field in receipt
    _, out, _ = invoke("session", "replay", session, "--json")
    [data] = [
        e["data"] for e in json.loads(out)["events"] if e["event"].endswith("receipt_recorded")
    ]
    assert ("printf hi > said.txt", 0) == (data["shell"]["command"], data["shell"]["exit_code"])


@pytest.mark.usefixtures("home")
def test_invalid_input_shows_each_field_and_message_in_replay_and_audit() -> None:
    """A call without its path: the receipt names the field, and the audit says why."""
    code, result = call("read_file", {"start_line": 2})
    assert (1, "invalid_input") == (code, result["outcome"])

    _, out, _ = invoke("session", "replay", result["session_id"])
    assert 'problems=[{"field":"path","message":"Field required"}]' in out
    [row] = json.loads(invoke("audit", "attempts", "--json")[1])
    assert ("not_run", "path: Field required") == (row["decision"], row["detail"])
    _, out, _ = invoke("audit", "attempts")
    assert "path: Field required" in " ".join(out.split())


@pytest.mark.usefixtures("columns")
def test_audit_attempts_shows_each_calls_target_shortened_in_the_middle(home: Path) -> None:
    """The command of a shell call, the path of a file call; a long one keeps both ends."""
    _, first = call("shell_execute", {"command": "touch made.txt"}, "--approve")
    session = first["session_id"]
    deep = "/".join(["directory"] * 12) + "/final-name.txt"
    call("read_file", {"path": deep}, "--session", session)

    code, out, _ = invoke("audit", "attempts")

    assert 0 == code
    header = next(line for line in out.splitlines() if "target" in line)
    assert header.split() == ["started", "tool", "target", "decision", "why"]
    assert "touch made.txt" in out
    shortened = next(word for word in out.split() if "…" in word)
    assert shortened.startswith(("/…/", str(workspace(home, session))[:5]))
    assert "/…/" in shortened
    assert shortened.endswith("/final-name.txt")
    rows = json.loads(invoke("audit", "attempts", "--json")[1])
    shell = next(r for r in rows if r["tool"] == "shell_execute")
    assert ({"command": "touch made.txt"}, "touch made.txt", 0) == (
        shell["arguments"],
        shell["command"],
        shell["shell_exit_code"],
    )


def test_audit_files_lists_shell_candidates_as_their_own_operation(home: Path) -> None:
    """The shell's checked paths are `shell_candidate` rows; `--operation write` has none."""
    _, result = call("shell_execute", {"command": "touch made.txt"}, "--approve")
    space = workspace(home, result["session_id"])

    _, out, _ = invoke("audit", "files", "--operation", "write", "--json")
    assert [] == json.loads(out)
    _, out, _ = invoke("audit", "files", "--operation", "shell_candidate", "--json")
    assert sorted([str(space), str(space / "made.txt")]) == sorted(
        r["path"] for r in json.loads(out)
    )
    code, out, _ = invoke("audit", "files")
    assert (0, 2) == (code, out.count("shell_candidate"))


def test_a_secret_passed_to_tool_call_never_reaches_the_journal_file(home: Path) -> None:
    """Written content and an approved command hold SECRET; no journal byte does, nor replay."""
    home.mkdir(parents=True)
    (home / "secrets.toml").write_text(f'[redact]\nvalues = ["{SECRET}"]\n')
    (home / "secrets.toml").chmod(0o600)
    _, first = call("write_file", {"path": "a.txt", "content": f"{SECRET}\n" * 300})
    session = first["session_id"]
    code, _ = call(
        "shell_execute", {"command": f"echo {SECRET}"}, "--session", session, "--approve"
    )
    assert 0 == code

    for command in (("session", "replay", session), ("audit", "attempts", "--json")):
        code, out, _ = invoke(*command)
        assert (0, False) == (code, SECRET in out)
    raw = b"".join(path.read_bytes() for path in sorted(home.glob("ledgerclaw.db*")))
    assert SECRET.encode() not in raw
    assert b"[redacted]" in raw


@pytest.mark.parametrize(
    ("text", "width", "expected"),
    [
        ("short", 10, "short"),
        ("/home/me/projects/alpha/src/main.py", 16, "/home…rc/main.py"),
        ("abcdef", 2, "…f"),
        ("abcdef", 1, "…"),
    ],
)
def test_cut_middle_keeps_both_ends_and_more_of_the_end(
    text: str, width: int, expected: str
) -> None:
    """Text over the width loses its middle, never its ends; the end keeps two thirds."""
    assert expected == render.cut_middle(text, width)
    assert len(expected) <= width
