"""Every command on a damaged, truncated or newer-schema journal, through the real CLI.

The damaged journal lost the root page of its events table. Each command must print one line
naming the file and what failed, exit with the documented code, and leave the file exactly
as it was: same bytes, same tables, nothing beside it.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.errors import JournalCorruptError
from adapters.journal.header import SCHEMA_VERSION
from adapters.journal.journal import SqliteJournal
from adapters.projections.runner import ProjectionRunner
from cli.app import app
from projections.registry import ALL_PROJECTIONS
from tests.builders import write_sample_session
from tests.daemon_harness import (
    CLI,
    environment,
    free_port,
    start_daemon,
    wait_for,
    write_config,
)
from tests.integration.sqlite_helpers import (
    companions,
    damage_root_page,
    fingerprint,
    sha256,
    table_names,
)

CORRUPT_EXIT = JournalCorruptError.exit_code
DOCS = Path(__file__).parents[2] / "docs"
runner = CliRunner()


@dataclass(frozen=True)
class DamagedHome:
    """A home whose journal held sessions and read models, then lost its events' root page."""

    root: Path
    session: str
    """A prefix of one session that was in the journal."""

    @property
    def database(self) -> Path:
        """The damaged journal file."""
        return self.root / "ledgerclaw.db"

    def state(self) -> tuple[str, list[str], list[str]]:
        """The journal's bytes (as a digest), its tables, and the files beside it."""
        return sha256(self.database), companions(self.database), table_names(self.database)


@pytest.fixture
def damaged(home: Path) -> DamagedHome:
    """A real journal with sessions and caught-up projections, damaged after a checkpoint."""
    home.mkdir(parents=True)
    journal = SqliteJournal(home / "ledgerclaw.db")
    sessions = [write_sample_session(journal, f"main:{n}") for n in range(3)]
    journal.close()
    ProjectionRunner(home / "ledgerclaw.db", ALL_PROJECTIONS).catch_up()
    damage_root_page(home / "ledgerclaw.db")
    return DamagedHome(home, sessions[0].hex[:8])


def assert_refused(damaged: DamagedHome, code: int, stderr: str) -> None:
    """One error line naming the file and the damage, the corrupt-journal exit code.

    A server may say one warning line before it (no trusted roots); nothing else.
    """
    lines = [line for line in stderr.splitlines() if not line.startswith("warning: ")]
    assert 1 == len(lines), stderr
    assert lines[0].startswith(f"error: journal {damaged.database} is damaged: ")
    assert "database disk image is malformed" in lines[0]
    assert "Traceback" not in stderr
    assert CORRUPT_EXIT == code


COMMANDS = [
    ["session", "list"],
    ["session", "list", "--json"],
    ["session", "show", "{session}"],
    ["session", "replay", "{session}"],
    ["session", "replay", "{session}", "--at", "1"],
    ["audit", "attempts"],
    ["audit", "files", "--operation", "write"],
    ["stats", "daily"],
    ["tool", "list", "--session", "{session}"],
    ["tool", "call", "read_file", "--args", '{"path": "README.md"}'],
    ["projections", "status"],
    ["projections", "rebuild"],
    ["projections", "verify"],
    ["devices", "list"],
    ["devices", "revoke", "dev_0123"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_command_on_a_damaged_journal_says_so_in_one_line_and_changes_nothing(
    damaged: DamagedHome, command: list[str]
) -> None:
    """The command exits 7 with one line naming the file, and the file stays as it was."""
    before = damaged.state()

    result = runner.invoke(app, [part.replace("{session}", damaged.session) for part in command])

    assert_refused(damaged, result.exit_code, result.stderr)
    assert before == damaged.state()


def test_doctor_reports_the_failed_integrity_check_and_exits_non_zero(
    damaged: DamagedHome,
) -> None:
    """The doctor's table shows the journal and integrity checks failed, without a trace."""
    before = damaged.state()

    result = runner.invoke(app, ["doctor"], env={"COLUMNS": "200"})

    assert 1 == result.exit_code
    assert "Traceback" not in result.output
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if "FAIL" in line}
    assert ["journal", "integrity"] == list(rows)
    assert "Page " in rows["integrity"]
    assert before == damaged.state()


def test_doctor_json_lists_the_failed_integrity_check(damaged: DamagedHome) -> None:
    """`doctor --json` has a failing `integrity` check that names the damaged page."""
    before = damaged.state()

    result = runner.invoke(app, ["doctor", "--json"])

    assert 1 == result.exit_code
    report = json.loads(result.stdout)
    checks = {check["name"]: check for check in report["checks"]}
    assert False is report["ok"]
    assert False is checks["journal"]["ok"]
    assert str(damaged.database) in checks["journal"]["detail"]
    assert False is checks["integrity"]["ok"]
    assert "Page " in checks["integrity"]["detail"]
    assert before == damaged.state()


@pytest.mark.parametrize(
    "command",
    [["daemon", "run", "--port", "{port}"], ["mcp", "serve"]],
    ids=" ".join,
)
def test_a_server_on_a_damaged_journal_exits_with_one_line_instead_of_starting(
    damaged: DamagedHome, command: list[str]
) -> None:
    """`daemon run` and `mcp serve` refuse the damaged journal with exit 7 and one line."""
    before = damaged.state()
    port = str(free_port())

    done = subprocess.run(
        [*CLI, *(part.replace("{port}", port) for part in command)],
        env=environment(damaged.root),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

    assert_refused(damaged, done.returncode, done.stderr)
    assert "" == done.stdout
    assert before == damaged.state()


def test_the_damaged_journal_exit_code_is_documented() -> None:
    """docs/cli.md lists the damaged-journal exit code in its table of exit codes."""
    rows = [line for line in (DOCS / "cli.md").read_text().splitlines() if line.startswith("| ")]
    documented = {row.split("|")[1].strip(): row for row in rows}

    assert "damaged" in documented[str(CORRUPT_EXIT)]


def truncate(path: Path) -> None:
    """Cut the file to half its length."""
    with path.open("r+b") as file:
        file.truncate(path.stat().st_size // 2)


def bump_schema(path: Path) -> None:
    """Stamp the journal with a schema version newer than this code knows."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        conn.commit()


@pytest.mark.parametrize(("spoil", "code"), [(truncate, CORRUPT_EXIT), (bump_schema, 5)])
@pytest.mark.parametrize(
    "command",
    [["session", "list"], ["devices", "list"], ["projections", "rebuild"], ["doctor"]],
    ids=" ".join,
)
def test_a_truncated_or_newer_journal_leaves_nothing_beside_it(
    home: Path, spoil: Callable[[Path], None], code: int, command: list[str]
) -> None:
    """Refusing a truncated or newer-schema journal changes no byte and adds no -wal or -shm."""
    home.mkdir(parents=True)
    journal = SqliteJournal(home / "ledgerclaw.db")
    write_sample_session(journal)
    journal.close()
    spoil(home / "ledgerclaw.db")
    before = fingerprint(home / "ledgerclaw.db")

    result = runner.invoke(app, command)

    assert (1 if command == ["doctor"] else code) == result.exit_code
    assert "Traceback" not in result.output
    assert before == fingerprint(home / "ledgerclaw.db")


def test_a_daemon_that_meets_damage_says_so_once_without_a_trace(home: Path) -> None:
    """Damage met by a running daemon's projection loop is one log line, not one per interval."""
    write_config(home, "[daemon]\nprojection_interval_seconds = 0.05\n")
    daemon = start_daemon(home)
    try:
        journal = SqliteJournal(home / "ledgerclaw.db")
        write_sample_session(journal, "main:late")
        journal.close()
        damage_root_page(home / "ledgerclaw.db")
        log = home / "logs" / "daemon.log"
        wait_for(lambda: "projection catch-up failed" in log.read_text(), what="the damage logged")
        time.sleep(1)
    finally:
        daemon.stop()
    text = log.read_text()
    assert 1 == text.count("service: projection catch-up failed")
    assert "is damaged" in text
    assert "Traceback" not in text
