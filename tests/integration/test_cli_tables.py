"""Every listing at 80 and 200 columns: ids, times and paths stay whole, or shorten as designed."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.journal.journal import SqliteJournal
from adapters.security.pairing import pair_device
from cli import render_operator
from cli.app import app
from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import DenialCategory, FileOperation, PolicyDecision
from domain.values.receipts import FileActivity, OutcomeCategory, ToolReceipt
from tests.builders import start_and_claim

runner = CliRunner()
WIDTHS = (80, 200)
LONG_KEY = "mcp-stdio:claude-desktop-nightly-build"
LONG_TOOL = "github_list_pull_requests"
LONG_PATH = (
    "/srv/customers/northwind-traders/projects/quarterly-planning-2026/"
    "meeting-notes/december/board-minutes-final.md"
)
LONG_DETAIL = (
    "the path lies outside every trusted root of this audience; add a root or ask the"
    " operator to widen the session's scope"
)


def invoke(width: int, *args: str) -> str:
    """Run the command at `width` columns; return its stdout, which must be a success."""
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert 0 == result.exit_code, result.stderr
    return result.stdout


def lines(out: str) -> list[str]:
    """The output's lines."""
    return out.splitlines()


def shown_whole(out: str, value: str) -> bool:
    """Whether `value` appears inside one line of `out`, not cut across two."""
    return any(value in line for line in lines(out))


def path_shown(out: str, path: str) -> bool:
    """Whether `path` appears whole, or shortened in the middle at its separators, on a line."""
    for line in lines(out):
        for word in line.split():
            if word == path:
                return True
            head, ellipsis, tail = word.partition("/…/")
            if ellipsis and path.startswith(head + "/") and path.endswith("/" + tail):
                return True
    return False


def fits(out: str, width: int) -> bool:
    """Whether no line of the table (below its title line) is wider than `width`."""
    return all(len(line) <= width for line in lines(out)[1:])


@pytest.fixture
def long_home(home: Path) -> SessionId:
    """A home holding one session with a long key, tool name, path and denial detail."""
    home.mkdir(parents=True)
    journal = SqliteJournal(home / "ledgerclaw.db")
    session_id = SessionId.new()
    journal.open_session(SessionOpening(session_id, LONG_KEY, SessionKind.MAIN, Audience.PERSONAL))
    run = RunId.new()

    def calls(session: Session) -> None:
        start_and_claim(session, run)
        read = AttemptId.new()
        session.start_attempt(run, read, CallId("call_read"), LONG_TOOL)
        session.evaluate_policy(run, read, PolicyDecision.ALLOW, rule="roots.project")
        activity = FileActivity(path=LONG_PATH, operation=FileOperation.READ)
        receipt = ToolReceipt(outcome=OutcomeCategory.SUCCESS, file_activity=(activity,))
        session.record_receipt(run, read, receipt)
        denied = AttemptId.new()
        session.start_attempt(run, denied, CallId("call_write"), "write_file")
        session.evaluate_policy(
            run,
            denied,
            PolicyDecision.DENY,
            rule="roots.none",
            detail=LONG_DETAIL,
            denial=DenialCategory.OUTSIDE_ROOTS,
        )

    journal.update_session(session_id, calls)
    pair_device(journal, "Ada's workstation in the basement lab", datetime.now(UTC))
    journal.close()
    return session_id


@pytest.mark.parametrize("width", WIDTHS)
def test_session_list_keeps_ids_keys_and_times_whole(long_home: SessionId, width: int) -> None:
    """The id (or its usable prefix), the key and the last activity are never cut."""
    out = invoke(width, "session", "list")
    row = json.loads(invoke(width, "session", "list", "--json"))[0]
    session_id = str(long_home)
    assert shown_whole(out, session_id if width == 200 else session_id[:12])
    assert shown_whole(out, LONG_KEY)
    assert shown_whole(out, row["last_activity_at"].replace("T", " ")[:16])
    assert "…" not in out
    assert fits(out, width)


@pytest.mark.parametrize("width", WIDTHS)
def test_session_show_and_replay_keep_every_value_whole(long_home: SessionId, width: int) -> None:
    """The session's own view and its state view print each value on one line."""
    session_id = str(long_home)
    shown = invoke(width, "session", "show", session_id)
    state = invoke(width, "session", "replay", session_id, "--at", "6")
    timeline = invoke(width, "session", "replay", session_id)
    assert shown_whole(shown, LONG_KEY)
    assert shown_whole(shown, session_id)
    assert shown_whole(state, LONG_KEY)
    assert shown_whole(state, LONG_TOOL)
    assert shown_whole(timeline, session_id)


@pytest.mark.usefixtures("long_home")
@pytest.mark.parametrize("width", WIDTHS)
def test_audit_attempts_wraps_only_between_words(width: int) -> None:
    """Times, tools and decisions stay whole; the reason wraps between its words."""
    out = invoke(width, "audit", "attempts")
    rows = json.loads(invoke(width, "audit", "attempts", "--json"))
    for row in rows:
        assert shown_whole(out, row["started_at"].replace("T", " ")[11:19])
    assert shown_whole(out, LONG_TOOL)
    for word in LONG_DETAIL.split():
        assert word in out.split()
    assert fits(out, width)
    if width == 200:
        assert path_shown(out, LONG_PATH)


@pytest.mark.usefixtures("long_home")
@pytest.mark.parametrize("width", WIDTHS)
def test_audit_files_shortens_a_long_path_in_the_middle(width: int) -> None:
    """A path too long for the width loses whole middle parts, never part of a name."""
    out = invoke(width, "audit", "files")
    assert path_shown(out, LONG_PATH)
    assert shown_whole(out, LONG_TOOL)
    assert (width == 200) == shown_whole(out, LONG_PATH)
    assert fits(out, width)


@pytest.mark.usefixtures("long_home")
@pytest.mark.parametrize("width", WIDTHS)
def test_stats_daily_keeps_days_tools_and_headers_whole(width: int) -> None:
    """The day, the tool and every header shown are whole; optional columns go first."""
    out = invoke(width, "stats", "daily")
    day = json.loads(invoke(width, "stats", "daily", "--json"))[0]["day"]
    assert shown_whole(out, day)
    assert shown_whole(out, LONG_TOOL)
    header = lines(out)[1].split()
    assert {"day", "tool", "outcome", "calls"} <= set(header)
    assert "…" not in out
    assert fits(out, width)
    if width == 200:
        assert ["day", "tool", "outcome", "calls", "total", "ms", "p95", "ms"] == header[:8]


@pytest.mark.usefixtures("long_home")
@pytest.mark.parametrize("width", WIDTHS)
def test_devices_list_keeps_the_device_id_whole(width: int) -> None:
    """A device id is shown whole when it fits, else as a prefix that still selects it."""
    out = invoke(width, "devices", "list")
    device = json.loads(invoke(width, "devices", "list", "--json"))[0]
    device_id = device["device_id"]
    assert shown_whole(out, device_id if width == 200 else device_id[:12])
    assert shown_whole(out, device["paired_at"].replace("T", " ")[:16])
    assert "…" not in out
    assert fits(out, width)


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("width", WIDTHS)
def test_tool_list_keeps_every_tool_name_whole(width: int) -> None:
    """The longest tool name and each exposure answer stay whole."""
    out = invoke(width, "tool", "list")
    for row in json.loads(invoke(width, "tool", "list", "--json"))["tools"]:
        assert any(line.split()[:1] == [row["name"]] for line in lines(out))
    assert "…" not in out
    assert fits(out, width)


@pytest.mark.usefixtures("long_home")
@pytest.mark.parametrize("width", WIDTHS)
def test_projections_status_doctor_and_verify_keep_names_whole(home: Path, width: int) -> None:
    """Projection names, doctor checks, the home path and a difference stay whole."""
    invoke(width, "audit", "files")
    status = invoke(width, "projections", "status")
    doctor = invoke(width, "doctor")
    for name in ("authorization_audit", "working_context", "file_activity"):
        assert shown_whole(status, name)
    assert shown_whole(doctor, str(home))
    assert fits(status, width)
    with sqlite3.connect(home / "ledgerclaw.db") as db:
        db.execute("UPDATE file_activity SET tool = ?", (LONG_TOOL + "_changed",))
    result = runner.invoke(app, ["projections", "verify"], env={"COLUMNS": str(width)})
    assert 1 == result.exit_code
    assert shown_whole(result.stdout, LONG_TOOL + "_changed")
    assert shown_whole(result.stdout, LONG_TOOL)


@pytest.mark.parametrize("width", WIDTHS)
def test_config_check_prints_each_root_on_one_line(home: Path, tmp_path: Path, width: int) -> None:
    """A long root path in the summary is never wrapped."""
    root = tmp_path / "a-directory-with-a-rather-long-name" / "and-another-one-below-it"
    root.mkdir(parents=True)
    home.mkdir()
    (home / "config.toml").write_text(f"[[tools.roots]]\npath = '{root}'\n")
    out = invoke(width, "config", "check")
    assert shown_whole(out, str(root))
    assert shown_whole(out, str(home / "config.toml"))


@pytest.mark.usefixtures("home")
@pytest.mark.parametrize("width", [30, 80])
def test_a_hint_never_splits_its_command(width: int) -> None:
    """The command a hint suggests stays on one line, however narrow the terminal."""
    out = invoke(width, "devices", "list")
    assert shown_whole(out, "`ledgerclaw daemon pair`")


@pytest.mark.parametrize("width", WIDTHS)
def test_approvals_list_keeps_ids_whole(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Approval and session ids stay whole (or usable prefixes); the summary wraps by word."""
    monkeypatch.setenv("COLUMNS", str(width))
    approval, session = str(AttemptId.new()), str(SessionId.new())
    target = "/srv/northwind/board-minutes.md"
    summary = f"write {target} (412 bytes, replacing an older version of the file)"
    row = {
        "id": approval,
        "session_id": session,
        "tool": "write_file",
        "summary": summary,
        "mode": "request",
        "can_widen": True,
        "asked_at": "2026-12-01T09:30:12.123456+00:00",
        "host": "daemon",
    }

    render_operator.approvals([row])

    out = capsys.readouterr().out
    assert shown_whole(out, approval if width == 200 else approval[:12])
    assert shown_whole(out, session if width == 200 else session[:12])
    assert shown_whole(out, target)
    assert fits(out, width)
    assert (width == 200) == shown_whole(out, "2026-12-01 09:30")
