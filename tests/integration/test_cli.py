"""The `ledgerclaw` command through typer's runner, on real homes in temporary directories."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from adapters.journal.header import SCHEMA_VERSION
from adapters.journal.journal import SqliteJournal
from cli.app import app
from domain.ids import RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from tests.builders import appending, start_and_claim, user_message, write_sample_session
from tests.cli_runner import invoke, runner


def make_journal(home: Path) -> SqliteJournal:
    """A journal in `home`, created like the daemon creates it."""
    home.mkdir(parents=True, exist_ok=True)
    return SqliteJournal(home / "ledgerclaw.db")


@pytest.fixture
def sample(home: Path) -> SessionId:
    """A home holding one realistic session."""
    journal = make_journal(home)
    session_id = write_sample_session(journal)
    journal.close()
    return session_id


def test_session_list_on_a_fresh_home_is_empty_and_creates_nothing(home: Path) -> None:
    """Listing sessions on a home that does not exist prints nothing and creates no file."""
    code, out, _ = invoke("session", "list", "--json")
    assert 0 == code
    assert [] == json.loads(out)
    assert not home.exists()


def test_session_list_shows_each_session(sample: SessionId) -> None:
    """The list names every session with its key, kind and event count."""
    code, out, _ = invoke("session", "list", "--json")
    assert 0 == code
    rows = json.loads(out)
    assert [str(sample)] == [row["session_id"] for row in rows]
    assert ("main:cli", "main", 21) == (rows[0]["session_key"], rows[0]["kind"], rows[0]["events"])
    code, out, _ = invoke("session", "list")
    assert 0 == code
    assert sample[:12] in out
    assert "main:cli" in out


def test_session_list_shows_the_parent_of_a_subagent(home: Path, sample: SessionId) -> None:
    """A subagent's row links its parent session."""
    journal = make_journal(home)
    child = SessionId.new()
    journal.open_session(
        SessionOpening(child, "sub:review", SessionKind.SUBAGENT, Audience.PERSONAL, sample)
    )
    journal.close()
    rows = json.loads(invoke("session", "list", "--json")[1])
    assert str(sample) == rows[1]["parent_session_id"]
    assert sample[:12] in invoke("session", "list")[1]


def test_replay_prints_one_line_per_event_in_order(sample: SessionId) -> None:
    """The JSON timeline holds every event with its position, time, type and key fields."""
    code, out, _ = invoke("session", "replay", sample.hex[:8], "--json")
    assert 0 == code
    timeline = json.loads(out)
    events = timeline["events"]
    assert str(sample) == timeline["session_id"]
    assert list(range(1, 22)) == [e["position"] for e in events]
    assert "session.opened" == events[0]["event"]
    assert "session.run_ended" == events[-1]["event"]
    assert {"decision": "deny", "rule": "protected.journal"}.items() <= events[12]["fields"].items()


def test_replay_renders_a_readable_table(sample: SessionId) -> None:
    """The human timeline shows event names and key fields."""
    code, out, _ = invoke("session", "replay", str(sample))
    assert 0 == code
    assert "policy_evaluated" in out
    assert "rule=protected.journal" in out
    assert "21 events" in out


def test_replay_accepts_the_id_with_or_without_prefix(sample: SessionId) -> None:
    """A session is found by its full id, its hex digits, or a unique prefix of either."""
    for name in (str(sample), sample.hex, sample[:10], sample.hex[:4]):
        assert 0 == invoke("session", "replay", name, "--json")[0]


def test_replay_at_prints_the_state_after_n_events(sample: SessionId) -> None:
    """`--at N` rebuilds the session from its first N events."""
    code, out, _ = invoke("session", "replay", str(sample), "--at", "11", "--json")
    assert 0 == code
    result = json.loads(out)
    assert (11, 21) == (result["position"], result["head"])
    state = result["state"]
    assert 3 == state["message_count"]
    assert ["user", "assistant", "tool"] == [m["role"] for m in result["transcript"]]
    assert "call_read_1" == result["transcript"][2]["call_id"]
    assert ["/work/project/README.md"] == state["working_context"]["recent_files"]
    assert state["writer"] is not None
    final = json.loads(invoke("session", "replay", str(sample), "--at", "21", "--json")[1])
    assert final["state"]["writer"] is None
    assert ["ended"] * 3 == [a["status"] for a in final["state"]["attempts"].values()]


def test_replay_at_renders_the_state_tables(sample: SessionId) -> None:
    """The human state view shows the summary, runs, attempts and transcript."""
    code, out, _ = invoke("session", "replay", str(sample), "--at", "21")
    assert 0 == code
    for heading in ("at event 21 of 21", "runs", "authorization attempts", "transcript"):
        assert heading in out


def test_replay_at_past_the_end_is_refused(sample: SessionId) -> None:
    """A position beyond the stream is a clear error with exit code 2."""
    code, out, err = invoke("session", "replay", str(sample), "--at", "22")
    assert (2, "") == (code, out)
    assert "past the end" in err
    assert "Traceback" not in err


def test_replay_at_zero_is_a_usage_error(sample: SessionId) -> None:
    """Positions start at 1."""
    assert 2 == invoke("session", "replay", str(sample), "--at", "0")[0]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("zz", "not a session id"),
        ("ab", "too short"),
        ("ffffffff", "no session matches"),
        ("ses_" + "0" * 40, "not a session id"),
    ],
)
def test_replay_of_a_bad_name_is_a_clear_error(sample: SessionId, name: str, message: str) -> None:
    """An unknown, malformed or too short name gets exit code 6 and a one-line message."""
    assert sample
    code, out, err = invoke("session", "replay", name)
    assert (6, "") == (code, out)
    assert message in err
    assert 1 == len(err.strip().splitlines())


def test_replay_of_an_ambiguous_prefix_asks_for_more_digits(home: Path) -> None:
    """Two sessions sharing a prefix make that prefix ambiguous."""
    journal = make_journal(home)
    for tail in ("1", "2"):
        sid = SessionId("ses_abcd" + tail * 28)
        journal.open_session(SessionOpening(sid, f"k{tail}", SessionKind.MAIN, Audience.TEAM))
    journal.close()
    code, _, err = invoke("session", "replay", "abcd")
    assert 6 == code
    assert "ambiguous" in err
    assert 0 == invoke("session", "replay", "abcd1")[0]


def test_doctor_creates_and_checks_a_fresh_home(home: Path) -> None:
    """On a new home the doctor creates the journal and reports every check ok."""
    code, out, _ = invoke("doctor", "--json")
    assert 0 == code
    report = json.loads(out)
    assert report["ok"] is True
    assert SCHEMA_VERSION == report["schema_version"]
    assert {"home", "config", "journal", "schema", "wal", "integrity", "events"} <= {
        c["name"] for c in report["checks"]
    }
    assert (home / "ledgerclaw.db").is_file()


def test_doctor_decodes_every_stored_event(sample: SessionId) -> None:
    """The doctor counts the stored events and finds none undecodable."""
    assert sample
    code, out, _ = invoke("doctor")
    assert 0 == code
    assert "21 events" in out
    assert "healthy" in out


def test_doctor_reports_an_undecodable_event(home: Path, sample: SessionId) -> None:
    """A stored event whose state no longer matches its type fails the events check."""
    assert sample
    with sqlite3.connect(home / "ledgerclaw.db") as conn:
        conn.execute("UPDATE stored_events SET state = ? WHERE rowid = 3", (b'{"oops": 1}',))
    code, out, _ = invoke("doctor", "--json")
    assert 1 == code
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["events"]["ok"] is False
    assert "1 undecodable" in checks["events"]["detail"]


def write_config(home: Path, text: str) -> None:
    """Write `text` as the home's config file."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def test_a_persistence_section_is_refused_everywhere(home: Path, tmp_path: Path) -> None:
    """No command accepts a config that tries to choose the journal's store or path."""
    elsewhere = tmp_path / "elsewhere.db"
    write_config(home, f'[persistence]\npath = "{elsewhere}"\n')
    code, out, err = invoke("session", "list")
    assert (4, "") == (code, out)
    assert "[persistence]" in err
    code, out, _ = invoke("doctor", "--json")
    assert 1 == code
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["config"]["ok"] is False
    assert not elsewhere.exists()
    assert not (home / "ledgerclaw.db").exists()


def test_a_broken_config_is_a_clear_error(home: Path) -> None:
    """Invalid TOML and unknown keys name the file and the problem."""
    write_config(home, "[journal\n")
    code, _, err = invoke("session", "list")
    assert 4 == code
    assert "not valid TOML" in err
    write_config(home, '[journal]\ndurability = "sometimes"\n')
    code, _, err = invoke("session", "list")
    assert 4 == code
    assert "journal.durability" in err


def test_a_foreign_database_is_refused_and_left_unchanged(home: Path) -> None:
    """A database that is not a ledgerclaw journal gets exit code 5 and is not touched."""
    home.mkdir()
    db = home / "ledgerclaw.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    before = db.read_bytes()
    for args in (("session", "list"), ("session", "replay", "abcd")):
        code, _, err = invoke(*args)
        assert 5 == code
        assert "not a ledgerclaw journal" in err
    assert 1 == invoke("doctor")[0]
    assert before == db.read_bytes()
    assert [] == sorted(p.name for p in home.glob("ledgerclaw.db-*"))


def test_a_file_that_is_not_sqlite_is_refused_and_left_unchanged(home: Path) -> None:
    """Random bytes in place of the journal get a clear error and stay as they were."""
    home.mkdir()
    db = home / "ledgerclaw.db"
    db.write_bytes(b"definitely not a database " * 100)
    code, _, err = invoke("session", "list")
    assert 5 == code
    assert "not a ledgerclaw journal" in err
    assert b"definitely not a database " * 100 == db.read_bytes()


def test_a_journal_from_a_newer_schema_is_refused(home: Path, sample: SessionId) -> None:
    """A journal stamped with a newer schema is read by no command and left untouched."""
    db = home / "ledgerclaw.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
    before = db.read_bytes()
    code, _, err = invoke("session", "replay", str(sample))
    assert 5 == code
    assert "newer" in err
    code, out, _ = invoke("doctor", "--json")
    assert 1 == code
    assert "newer" in out
    assert before == db.read_bytes()


def test_a_home_that_is_a_file_is_a_clear_error(home: Path) -> None:
    """A home path that is a regular file is reported, never overwritten."""
    home.write_text("not a directory")
    code, _, err = invoke("session", "list")
    assert 3 == code
    assert "not a directory" in err
    code, out, _ = invoke("doctor", "--json")
    assert 1 == code
    assert "not a directory" in out
    assert "not a directory" == home.read_text()


def _command_paths(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every leaf command of the CLI, as its words."""
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):
            yield from _command_paths(command, (*prefix, name))
        else:
            yield (*prefix, name)


def test_every_command_has_help_and_is_documented() -> None:
    """Each command answers --help and is named in the README or docs/."""
    docs = Path(__file__).parents[2] / "README.md"
    text = docs.read_text() + "".join(p.read_text() for p in docs.parent.glob("docs/*.md"))
    commands = list(_command_paths(typer.main.get_command(app)))
    assert ("daemon", "run") in commands
    assert ("approvals", "approve") in commands
    for command in commands:
        code, out, _ = invoke(*command, "--help")
        assert 0 == code
        assert "Usage" in out
        assert f"ledgerclaw {' '.join(command)}" in text


def _groups_and_commands(
    group: Any, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """Every group and command of the CLI with its words, the root first."""
    yield group, prefix
    for name, command in sorted(getattr(group, "commands", {}).items()):
        yield from _groups_and_commands(command, (*prefix, name))


def _squeezed(text: str) -> str:
    """`text` without whitespace, so that a rewrapped help text still matches its source."""
    return "".join(text.split())


def test_every_help_text_reads_as_its_source_says() -> None:
    """Each command's help and each option's help appear whole in --help, nothing eaten."""
    for command, words in _groups_and_commands(typer.main.get_command(app)):
        code, out, _ = invoke(*words, "--help")
        assert 0 == code
        shown = _squeezed(out)
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        for text in texts:
            assert _squeezed(text) in shown, f"ledgerclaw {' '.join(words)}: {text!r}"


def test_no_argument_or_option_shows_a_type_placeholder() -> None:
    """Flags show no placeholder, and arguments and options name their values (no `<bool>`)."""
    for _, words in _groups_and_commands(typer.main.get_command(app)):
        out = invoke(*words, "--help")[1]
        listed = out.partition("\nArguments:\n")[2] or out.partition("\nOptions:\n")[2]
        listed = listed.partition("\nCommands:\n")[0]
        assert [] == re.findall(r"<[^>]*>", listed), f"ledgerclaw {' '.join(words)}"
        assert "{" not in out.splitlines()[0], f"ledgerclaw {' '.join(words)}"


def test_no_command_summary_is_cut_short_at_80_columns() -> None:
    """Every group lists its commands' summaries whole at 80 columns."""
    for command, words in _groups_and_commands(typer.main.get_command(app)):
        if not hasattr(command, "commands"):
            continue
        out = runner.invoke(app, [*words, "--help"], env={"COLUMNS": "80"}).stdout
        listing = out.partition("\nCommands:\n")[2]
        assert [] == [line for line in listing.splitlines() if line.endswith("...")]


def test_the_root_help_names_the_home_and_the_version() -> None:
    """`ledgerclaw --help` says where the home comes from and offers --version."""
    code, out, _ = invoke("--help")
    assert 0 == code
    for needed in ("--home PATH", "$LEDGERCLAW_HOME", "~/.ledgerclaw", "--version"):
        assert needed in out


def test_the_cli_does_not_import_mcp() -> None:
    """Inspecting the journal never pays for importing the MCP SDK."""
    code = "import sys, cli.app; print('mcp' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert "False" == result.stdout.strip()


def test_a_long_timeline_prints_exactly_one_line_per_event(home: Path) -> None:
    """Each event is one line, even when a key field holds a newline."""
    journal = make_journal(home)
    session_id = SessionId.new()
    journal.open_session(
        SessionOpening(session_id, "line one\nline two", SessionKind.MAIN, Audience.PUBLIC)
    )
    run = RunId.new()
    journal.update_session(session_id, lambda s: start_and_claim(s, run))
    for index in range(300):
        journal.update_session(session_id, appending(run, user_message(str(index))))
    journal.close()
    code, out, _ = invoke("session", "replay", str(session_id))
    assert 0 == code
    lines = out.splitlines()
    assert 2 + 303 == len(lines)
    assert 'session_key="line one\\nline two"' in lines[2]
    assert lines[-1].split()[:2] == ["303", "303"]


def test_the_state_view_shows_the_latest_messages_of_a_long_transcript(home: Path) -> None:
    """The human state view ends with the newest messages and says how many it left out."""
    journal = make_journal(home)
    session_id = SessionId.new()
    journal.open_session(SessionOpening(session_id, "k", SessionKind.MAIN, Audience.PUBLIC))
    run = RunId.new()

    def chat(session: Session) -> None:
        start_and_claim(session, run)
        for index in range(120):
            session.append_message(run, user_message(f"m{index}"))

    journal.update_session(session_id, chat)
    journal.close()
    code, out, _ = invoke("session", "replay", str(session_id), "--at", "123")
    assert 0 == code
    assert "last 50 of 120" in out
    assert "m119" in out
    assert "m69 " not in out
    result = json.loads(invoke("session", "replay", str(session_id), "--at", "123", "--json")[1])
    assert 120 == len(result["transcript"])
