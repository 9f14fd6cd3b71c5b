"""Audit commands on a session driven through the real pipeline: who changed what, and why.

A session writes a file, reads it, is denied a read outside its roots, and runs a shell
command an operator approved. The read-model commands answer the audit questions from that
journal; `projections` shows, rebuilds and verifies the tables behind them.
"""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from adapters.api.queries import BadFilterError, Filters, parse_moment
from adapters.runtime.runs import end_run
from cli import render
from domain.ids import AttemptId, SessionId
from domain.values.authorization import ApprovalVerdict
from tests.cli_runner import invoke
from tests.pipeline import approving, make_pipeline


def as_json(*args: str) -> Any:
    """Run the command with --json; it must succeed."""
    code, out, err = invoke(*args, "--json")
    assert 0 == code, err
    return json.loads(out)


@dataclass(frozen=True)
class Story:
    """What the driven session did, to check the answers against."""

    home: Path
    session_id: SessionId
    workspace: Path
    written: AttemptId
    read: AttemptId
    denied: AttemptId
    approved: AttemptId


@pytest.fixture
def story(home: Path) -> Story:
    """One finished run: a write, a read, a denied read outside roots, an approved command."""
    pipeline = make_pipeline(home.parent, approver=approving())
    assert home == pipeline.home.root
    try:

        async def drive() -> list[AttemptId]:
            results = [
                await pipeline.call("write_file", path="notes.txt", content="hello\n"),
                await pipeline.call("read_file", path="notes.txt"),
                await pipeline.call("read_file", path="/etc/hostname"),
                await pipeline.call("shell_execute", command="touch made.txt"),
            ]
            assert [r.end for r in results] == ["receipt", "receipt", "denied", "receipt"]
            return [r.attempt_id for r in results]

        written, read, denied, approved = anyio.run(drive)
        end_run(pipeline.journal, pipeline.run)
        return Story(
            home=home,
            session_id=pipeline.run.session_id,
            workspace=pipeline.workspace,
            written=written,
            read=read,
            denied=denied,
            approved=approved,
        )
    finally:
        pipeline.close()


def words(text: str) -> str:
    """Human output with each run of whitespace as one space, so wrapped lines read on."""
    return " ".join(text.split())


def squashed(text: str) -> str:
    """Human output without any whitespace, so a value folded over lines reads whole."""
    return "".join(text.split())


def canonical(path: Path) -> str:
    """A path as the journal records it (links resolved)."""
    return str(path.resolve())


# -- the audit questions -----------------------------------------------------------------------


def test_audit_files_names_the_files_the_session_changed(story: Story) -> None:
    """`audit files --session S --operation write` lists exactly the file the session wrote."""
    rows = as_json("audit", "files", "--session", story.session_id.hex[:8], "--operation", "write")
    assert [canonical(story.workspace / "notes.txt")] == [row["path"] for row in rows]
    assert [("write", "write_file", str(story.written))] == [
        (row["operation"], row["tool"], row["attempt_id"]) for row in rows
    ]
    reads = as_json("audit", "files", "--operation", "read")
    assert [str(story.read)] == [row["attempt_id"] for row in reads]
    code, out, _ = invoke("audit", "files", "--session", str(story.session_id))
    assert 0 == code
    assert "4 file activity records" in out
    assert "write_file" in out


def test_audit_files_filters_paths_by_glob(story: Story) -> None:
    """`--path` is an SQLite GLOB over the recorded paths."""
    assert story.session_id
    assert 2 == len(as_json("audit", "files", "--path", "*/notes.txt"))
    made = as_json("audit", "files", "--path", "*/made.txt")
    assert [("shell_candidate", "shell_execute")] == [(r["operation"], r["tool"]) for r in made]
    assert [] == as_json("audit", "files", "--path", "*/NOTES.txt")


def test_audit_files_shows_the_paths_a_shell_command_was_checked_for(story: Story) -> None:
    """The shell's checked paths are `shell_candidate` rows, never `write` ones."""
    candidates = as_json("audit", "files", "--operation", "shell_candidate")
    expected = [canonical(story.workspace / "made.txt"), canonical(story.workspace)]
    assert sorted(expected) == sorted(row["path"] for row in candidates)
    assert {str(story.approved)} == {row["attempt_id"] for row in candidates}
    writes = as_json("audit", "files", "--operation", "write")
    assert [] == [row for row in writes if row["tool"] == "shell_execute"]
    code, out, _ = invoke("audit", "files", "--operation", "shell_candidate")
    assert 0 == code
    assert "shell_candidate" in out


def test_audit_attempts_shows_which_calls_were_denied_and_why(story: Story) -> None:
    """The denied read names its failure category and detail, in JSON and on the table."""
    [row] = as_json("audit", "attempts", "--decision", "denied")
    assert (str(story.denied), "read_file") == (row["attempt_id"], row["tool"])
    assert "outside_roots" == row["failure_category"]
    assert "/etc/hostname" in row["detail"]
    assert (["read"], ["/etc/hostname"]) == (row["operations"], row["paths"])
    code, out, _ = invoke("audit", "attempts", "--decision", "denied")
    assert 0 == code
    assert "outside_roots" in out
    assert "/etc/hostname" in squashed(out)


def test_audit_attempts_shows_who_approved_what(story: Story) -> None:
    """The approved shell call records the request, the verdict and who decided."""
    [row] = as_json("audit", "attempts", "--tool", "shell_execute")
    assert str(story.approved) == row["attempt_id"]
    assert ("allowed", "success") == (row["decision"], row["outcome"])
    assert (1, "approved", "once", "test operator") == (
        row["approval_asked"],
        row["approval_verdict"],
        row["approval_scope"],
        row["decided_by"],
    )
    assert "touch made.txt" in row["grant_key"]
    assert row["decided_at"] >= row["started_at"]
    decided = [r for r in as_json("audit", "attempts") if r["decided_by"]]
    assert [str(story.approved)] == [r["attempt_id"] for r in decided]
    code, out, _ = invoke("audit", "attempts", "--tool", "shell_execute")
    assert 0 == code
    assert "approved once by test operator" in words(out)


def test_a_rejected_approval_is_said_once_in_the_audit(home: Path) -> None:
    """A rejected call shows its category and who rejected it, without repeating either."""
    pipeline = make_pipeline(home.parent, approver=approving(ApprovalVerdict.REJECTED))
    try:
        result = anyio.run(lambda: pipeline.call("shell_execute", command="touch no.txt"))
        assert "denied" == result.end
        end_run(pipeline.journal, pipeline.run)
    finally:
        pipeline.close()

    code, out, _ = invoke("audit", "attempts", "--tool", "shell_execute")

    assert 0 == code
    assert "approval_rejected; rejected by test operator" in words(out)
    assert 1 == words(out).count("test operator")


def test_audit_attempts_are_newest_first_and_filter_by_path(story: Story) -> None:
    """All four attempts, newest first; `--path` matches any of an attempt's paths."""
    rows = as_json("audit", "attempts", "--session", str(story.session_id))
    assert [story.approved, story.denied, story.read, story.written] == [
        r["attempt_id"] for r in rows
    ]
    assert ["allowed", "denied", "allowed", "allowed"] == [r["decision"] for r in rows]
    assert [str(story.denied)] == [
        r["attempt_id"] for r in as_json("audit", "attempts", "--path", "/etc/*")
    ]
    by_path = as_json("audit", "attempts", "--path", "*/notes.txt")
    assert {str(story.read), str(story.written)} == {r["attempt_id"] for r in by_path}
    [newest] = as_json("audit", "attempts", "--limit", "1")
    assert str(story.approved) == newest["attempt_id"]
    assert 4 == len(as_json("audit", "attempts", "--limit", "0"))


def test_time_windows_narrow_every_listing(story: Story) -> None:
    """`--since` and `--until` take dates, times and ages; a date includes its whole day."""
    today = datetime.now(UTC).date()
    tomorrow = today + timedelta(days=1)
    assert 4 == len(as_json("audit", "attempts", "--since", "1h"))
    assert 4 == len(as_json("audit", "attempts", "--since", str(today), "--until", str(today)))
    assert [] == as_json("audit", "attempts", "--since", str(tomorrow))
    assert [] == as_json("audit", "attempts", "--until", "2000-01-01T10:00")
    assert [] == as_json("audit", "files", "--until", "2000-01-01")
    assert [] == as_json("session", "list", "--until", "2000-01-01")
    assert 1 == len(as_json("session", "list", "--since", "7d"))
    assert story.session_id


# -- sessions, statistics ----------------------------------------------------------------------


def test_session_list_comes_from_the_catalog(story: Story) -> None:
    """The list keeps its earlier keys and adds the catalog's columns."""
    [row] = as_json("session", "list")
    assert str(story.session_id) == row["session_id"]
    assert ("test", "main", "personal", None) == (
        row["session_key"],
        row["kind"],
        row["audience"],
        row["parent_session_id"],
    )
    assert (row["created_at"], row["last_activity_at"]) == (row["opened_at"], row["last_event_at"])
    assert ("idle", 1, 0, 4, 1) == (
        row["status"],
        row["runs"],
        row["live_runs"],
        row["tool_calls"],
        row["denials"],
    )
    assert row["events"] > 10
    code, out, _ = invoke("session", "list")
    assert 0 == code
    assert story.session_id[:12] in out


def test_session_show_has_the_catalog_row_and_working_context(story: Story) -> None:
    """`session show` by prefix: the counts, the storage root and the recent files."""
    row = as_json("session", "show", story.session_id.hex[:6])
    assert str(story.session_id) == row["session_id"]
    assert canonical(story.workspace / "notes.txt") in row["recent_files"]
    assert row["storage_root"]
    assert 4 == row["tool_calls"]
    code, out, _ = invoke("session", "show", str(story.session_id))
    assert 0 == code
    assert "recent files" in out
    assert canonical(story.workspace / "notes.txt") in squashed(out)


def test_stats_daily_counts_each_call_once(story: Story) -> None:
    """One day: four calls by tool and outcome, one denial, one approval asked and granted."""
    rows = as_json("stats", "daily")
    assert {datetime.now(UTC).date().isoformat()} == {row["day"] for row in rows}
    assert 4 == sum(row["calls"] for row in rows)
    assert 1 == sum(row["denials"] for row in rows)
    by_key = {(row["tool"], row["outcome"]): row for row in rows}
    shell = by_key["shell_execute", "success"]
    assert (1, 1, 0) == (
        shell["approvals_asked"],
        shell["approvals_granted"],
        shell["approvals_timed_out"],
    )
    assert ("read_file", "denied") in by_key
    code, out, _ = invoke("stats", "daily")
    assert 0 == code
    assert "shell_execute" in out
    assert story.session_id


def test_stats_daily_for_one_session_matches_the_kept_statistics(story: Story) -> None:
    """With --session the figures come from that session's audit rows, by the same rules."""
    everyone = as_json("stats", "daily")
    mine = as_json("stats", "daily", "--session", story.session_id.hex[:8])
    assert everyone == mine


def test_stats_daily_counts_made_up_tool_names_in_one_row(home: Path) -> None:
    """Two unregistered names are one `(unknown)` row; `audit attempts` keeps each name."""
    pipeline = make_pipeline(home.parent)
    try:

        async def drive() -> None:
            for name in ("shel_execute", "read_fiel"):
                assert "denied" == (await pipeline.call(name)).end
            assert "receipt" == (await pipeline.call("read_file", path="missing.txt")).end

        anyio.run(drive)
        end_run(pipeline.journal, pipeline.run)
        session = pipeline.run.session_id.hex[:8]
    finally:
        pipeline.close()
    rows = as_json("stats", "daily")
    assert [("(unknown)", "denied", 2, 2), ("read_file", "not_found", 1, 0)] == [
        (row["tool"], row["outcome"], row["calls"], row["denials"]) for row in rows
    ]
    assert rows == as_json("stats", "daily", "--session", session)
    names = {row["tool"] for row in as_json("audit", "attempts")}
    assert {"shel_execute", "read_fiel", "read_file"} == names


# -- output shapes -----------------------------------------------------------------------------


def parse_csv(text: str) -> tuple[list[str], list[dict[str, str]]]:
    """The header and the rows of CSV output."""
    reader = csv.DictReader(io.StringIO(text))
    rows = list(reader)
    return list(reader.fieldnames or []), rows


def test_csv_has_a_header_row_and_one_line_per_row(story: Story) -> None:
    """CSV columns are the table's, lists are JSON text, missing values are empty."""
    code, out, _ = invoke("audit", "attempts", "--csv")
    assert 0 == code
    header, rows = parse_csv(out)
    assert ["attempt_id", "session_id", "run_id", "call_id", "tool"] == header[:5]
    assert 4 == len(rows)
    denied = next(r for r in rows if r["attempt_id"] == str(story.denied))
    assert ["/etc/hostname"] == json.loads(denied["paths"])
    assert "" == denied["decided_by"]
    code, out, _ = invoke("audit", "files", "--csv", "--operation", "write")
    header, rows = parse_csv(out)
    assert ["attempt_id", "path", "operation", "session_id", "run_id", "tool", "at"] == header
    assert [canonical(story.workspace / "notes.txt")] == [r["path"] for r in rows]
    for command in (("session", "list"), ("stats", "daily")):
        code, out, _ = invoke(*command, "--csv")
        assert 0 == code
        assert parse_csv(out)[1]


def test_json_and_csv_are_empty_lists_and_a_header_when_nothing_matches(story: Story) -> None:
    """No rows still prints valid JSON, and CSV still prints its header."""
    assert [] == as_json("audit", "attempts", "--tool", "no_such_tool")
    code, out, _ = invoke("audit", "attempts", "--tool", "no_such_tool", "--csv")
    assert 0 == code
    assert out.startswith("attempt_id,session_id,")
    assert [] == parse_csv(out)[1]
    code, out, _ = invoke("audit", "attempts", "--tool", "no_such_tool")
    assert (0, "No authorization attempts match.\n") == (code, out)
    assert story.session_id


# -- projections: status, rebuild, verify ------------------------------------------------------


def test_status_shows_lag_until_a_query_catches_up(story: Story) -> None:
    """Right after the session the projections lag; any query brings the lag to 0."""
    assert story.session_id
    before = as_json("projections", "status")
    names = [row["name"] for row in before]
    assert {"sessions", "authorization_audit", "file_activity", "daily_stats"} <= set(names)
    assert all(row["lag"] > 0 for row in before)
    as_json("audit", "attempts")
    after = as_json("projections", "status")
    assert [0] * len(names) == [row["lag"] for row in after]
    assert all(row["position"] == row["head"] > 0 for row in after)
    assert all(row["stored_version"] == row["version"] for row in after)
    code, out, _ = invoke("projections", "status")
    assert 0 == code
    assert "authorization_audit" in out


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """Stderr as a terminal, so progress bars are drawn; what was drawn."""
    drawn = io.StringIO()
    console = Console(file=drawn, force_terminal=True, width=100)
    monkeypatch.setattr(render, "err", console)
    return drawn


def test_rebuild_shows_progress_and_gives_the_same_rows(
    story: Story, terminal: io.StringIO
) -> None:
    """A rebuild of every projection, then of one, leaves exactly the same rows."""
    attempts = as_json("audit", "attempts", "--limit", "0")
    sessions = as_json("session", "list")
    files = as_json("audit", "files")
    daily = as_json("stats", "daily")
    code, out, _ = invoke("projections", "rebuild")
    assert 0 == code
    assert "rebuilt every projection" in out
    assert "rebuilding" in terminal.getvalue()
    assert attempts == as_json("audit", "attempts", "--limit", "0")
    assert (sessions, files, daily) == (
        as_json("session", "list"),
        as_json("audit", "files"),
        as_json("stats", "daily"),
    )
    statuses = as_json("projections", "rebuild", "authorization_audit")
    assert all(row["lag"] == 0 for row in statuses)
    assert attempts == as_json("audit", "attempts", "--limit", "0")
    assert story.session_id


def test_verify_is_clean_then_names_a_corrupted_row(
    story: Story, terminal: io.StringIO, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verify agrees with a fresh rebuild; after a row is changed by hand it names the row."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    code, out, _ = invoke("projections", "verify")
    assert (0, True) == (code, out.startswith("clean"))
    assert "rebuilding to compare" in terminal.getvalue()
    assert {"clean": True, "differences": []} == as_json("projections", "verify")
    with sqlite3.connect(story.home / "ledgerclaw.db") as db:
        db.execute(
            "UPDATE authorization_audit SET tool = 'x' WHERE attempt_id = ?", (str(story.denied),)
        )
    db.close()
    code, out, _ = invoke("projections", "verify", "--json")
    assert 1 == code
    report = json.loads(out)
    assert report["clean"] is False
    assert [
        {
            "table": "authorization_audit",
            "key": {"attempt_id": str(story.denied)},
            "kind": "different",
            "column": "tool",
            "live": "x",
            "rebuilt": "read_file",
        }
    ] == report["differences"]
    code, out, _ = invoke("projections", "verify")
    assert 1 == code
    assert str(story.denied) in out
    assert "1 differences" in out
    assert "authorization_audit" in out
    assert [] == list(scratch.iterdir())


def test_verify_reports_missing_and_extra_rows(story: Story) -> None:
    """A deleted row is missing from the live table; an invented one is extra."""
    as_json("audit", "files")
    with sqlite3.connect(story.home / "ledgerclaw.db") as db:
        db.execute("DELETE FROM file_activity WHERE attempt_id = ?", (str(story.read),))
        db.execute(
            "INSERT INTO devices (device_id, name, created_at) VALUES ('dev_x', 'x', '2026')"
        )
    db.close()
    code, out, _ = invoke("projections", "verify", "--json")
    assert 1 == code
    found = {(d["table"], d["kind"]): d["key"] for d in json.loads(out)["differences"]}
    assert str(story.read) == found["file_activity", "missing"]["attempt_id"]
    assert {"device_id": "dev_x"} == found["devices", "extra"]


# -- bad input, empty homes --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("audit", "attempts", "--since", "yesterday"), "--since 'yesterday' is not a date"),
        (("audit", "files", "--until", "2026-13-45"), "--until '2026-13-45' is not a date"),
        (("audit", "attempts", "--decision", "maybe"), "--decision 'maybe' is not one of"),
        (("audit", "files", "--operation", "delete"), "--operation 'delete' is not one of"),
        (("audit", "files", "--limit", "-1"), "--limit -1 is negative"),
        (("session", "list", "--since", "2026-12-01", "--until", "2026-11-01"), "not before"),
        (("audit", "attempts", "--json", "--csv"), "cannot be combined"),
        (("projections", "rebuild", "nosuch"), "no projection named 'nosuch'"),
    ],
)
def test_bad_input_is_a_one_line_error_with_exit_code_2(
    story: Story, args: tuple[str, ...], message: str
) -> None:
    """Bad dates, values, names and combinations are refused before anything is read."""
    assert story.session_id
    code, out, err = invoke(*args)
    assert (2, "") == (code, out)
    assert message in err
    assert 1 == len(err.strip().splitlines())


def test_an_unknown_session_is_exit_code_6(story: Story) -> None:
    """`--session` and `session show` resolve ids like `session replay` does."""
    assert story.session_id
    for args in (("audit", "attempts", "--session", "ffffffff"), ("session", "show", "ffffff")):
        code, _, err = invoke(*args)
        assert 6 == code
        assert "no session matches" in err


def test_a_home_without_a_journal_answers_empty_and_creates_nothing(home: Path) -> None:
    """Every read-model command works on a new home, and leaves it as it was."""
    for command in (
        ("session", "list"),
        ("audit", "attempts"),
        ("audit", "files"),
        ("stats", "daily"),
    ):
        assert [] == as_json(*command)
        code, out, _ = invoke(*command, "--csv")
        assert 0 == code
        assert 1 == len(out.splitlines())
    assert all(row["lag"] == 0 for row in as_json("projections", "status"))
    assert all(row["head"] == 0 for row in as_json("projections", "rebuild"))
    assert {"clean": True, "differences": []} == as_json("projections", "verify")
    assert not home.exists()


def test_filters_parse_dates_times_and_ages() -> None:
    """The forms `--since` and `--until` accept, in UTC."""
    now = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    assert datetime(2026, 11, 30, tzinfo=UTC) == parse_moment("2026-11-30", "since", end=False)
    assert datetime(2026, 12, 1, tzinfo=UTC) == parse_moment("2026-11-30", "until", end=True)
    assert datetime(2026, 11, 30, 10, tzinfo=UTC) == parse_moment(
        "2026-11-30T10:00", "since", end=False
    )
    assert datetime(2026, 11, 30, 9, tzinfo=UTC) == parse_moment(
        "2026-11-30T10:00+01:00", "since", end=False
    )
    assert now - timedelta(days=7) == parse_moment("7d", "since", end=False, now=now)
    assert now - timedelta(hours=24) == parse_moment("24h", "since", end=False, now=now)
    assert parse_moment(None, "since", end=False) is None
    with pytest.raises(BadFilterError):
        Filters(since="last tuesday")
    assert -1 == Filters(limit=0).sql_limit


def test_text_from_the_journal_is_shown_as_written(story: Story) -> None:
    """Brackets in paths and details are not read as styling, and never crash a table."""
    assert story.session_id
    code, _, _ = invoke(
        "tool", "call", "write_file", "--args", '{"path": "[bold]c.txt", "content": "x"}'
    )
    assert 0 == code
    invoke("tool", "call", "read_file", "--args", '{"path": "/etc/[/]nope"}')
    code, out, _ = invoke("audit", "files", "--limit", "0")
    assert (0, True) == (code, "[bold]" in out)
    assert any(row["path"].endswith("/[bold]c.txt") for row in as_json("audit", "files"))
    code, out, _ = invoke("audit", "attempts", "--decision", "denied", "--limit", "0")
    assert 0 == code
    assert "[/]" in out


def test_a_locked_journal_is_a_one_line_error(story: Story, home: Path) -> None:
    """A query that must catch up while another process holds the write lock fails cleanly."""
    assert story.session_id
    invoke("tool", "call", "list_directory", "--args", "{}")
    (home / "config.toml").write_text("[journal]\nbusy_timeout_seconds = 1\n")
    blocker = sqlite3.connect(home / "ledgerclaw.db")
    try:
        blocker.execute("BEGIN IMMEDIATE")
        code, _, err = invoke("audit", "attempts")
    finally:
        blocker.rollback()
        blocker.close()
    assert 5 == code
    assert "busy" in err
    assert "Traceback" not in err


def test_stats_daily_keeps_only_whole_days_inside_the_window(story: Story) -> None:
    """A window that starts or ends inside a day leaves that day out."""
    assert story.session_id
    today = datetime.now(UTC).date()
    late = f"{today.isoformat()}T23:59"
    assert [] == as_json("stats", "daily", "--since", late)
    assert [] == as_json("stats", "daily", "--until", f"{today.isoformat()}T00:01")
    assert as_json("stats", "daily", "--since", today.isoformat())


def test_a_limit_sqlite_cannot_hold_is_a_usage_error(story: Story) -> None:
    """An absurd --limit is refused with exit code 2."""
    assert story.session_id
    code, _, err = invoke("audit", "attempts", "--limit", str(2**64))
    assert 2 == code
    assert "too large" in err
