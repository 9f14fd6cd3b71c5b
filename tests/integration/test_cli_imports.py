"""`ledgerclaw session list` on current read models loads neither the web stack nor the journal.

Each test runs the real command in a fresh interpreter on a real home, whose read models
were caught up, and reads back both its output and the modules it had loaded when it ended.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.journal.journal import SqliteJournal
from adapters.projections.runner import ProjectionRunner
from domain.ids import SessionId
from projections.registry import ALL_PROJECTIONS
from tests.builders import write_sample_session

pytestmark = pytest.mark.slow

NOT_FOR_A_LISTING = (
    # the daemon's web stack and the MCP SDK
    "starlette",
    "uvicorn",
    "websockets",
    "mcp",
    "anyio",
    # the journal's write path: the library's application, the event classes, the writer
    "eventsourcing.application",
    "adapters.journal.application",
    "adapters.journal.journal",
    "adapters.journal.writer",
    "adapters.journal.mapper",
    "domain.session.events",
    "domain.session.aggregate",
    # catching up: the runner, the projections and the table library they write with
    "adapters.projections.runner",
    "projections.registry",
    "sqlite_utils",
)
"""Modules a listing from current read models has no use for."""
SAMPLE_EVENTS = 21
"""Events in each sample session (tests/builders.py)."""

RUN_AND_REPORT = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: sys.stderr.write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['ledgerclaw', *sys.argv[1:]]\n"
    "from cli.app import main\n"
    "main()\n"
)
"""Runs the command with the arguments given, then writes every loaded module on stderr."""


def run(home: Path, *args: str) -> tuple[str, list[str]]:
    """The command's stdout, and the modules loaded when it exited (it must succeed)."""
    env = {k: v for k, v in os.environ.items() if k != "LEDGERCLAW_HOME"}
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert 0 == done.returncode, done.stderr
    return done.stdout, json.loads(done.stderr)


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """Which of `names` (or their submodules) are among `modules`."""
    return [n for n in names if any(m == n or m.startswith(n + ".") for m in modules)]


@pytest.fixture
def current_home(tmp_path: Path) -> tuple[Path, list[SessionId]]:
    """A home with three sample sessions and read models caught up with them."""
    home = tmp_path / "home"
    home.mkdir()
    journal = SqliteJournal(home / "ledgerclaw.db")
    sessions = [write_sample_session(journal, f"main:{n}") for n in range(3)]
    journal.close()
    ProjectionRunner(home / "ledgerclaw.db", ALL_PROJECTIONS).catch_up()
    return home, sessions


def test_a_listing_of_current_read_models_loads_no_web_stack_and_no_write_path(
    current_home: tuple[Path, list[SessionId]],
) -> None:
    """`session list --json` lists every session and loads none of the heavy modules."""
    home, sessions = current_home

    out, modules = run(home, "session", "list", "--json")

    rows = json.loads(out)
    assert [str(s) for s in sessions] == [row["session_id"] for row in rows]
    assert ["main:0", "main:1", "main:2"] == [row["session_key"] for row in rows]
    assert [SAMPLE_EVENTS] * 3 == [row["events"] for row in rows]
    assert [] == loaded(modules, NOT_FOR_A_LISTING)


def test_the_table_loads_no_more_than_the_json(
    current_home: tuple[Path, list[SessionId]],
) -> None:
    """The human table of the same listing names each session, also without them."""
    home, sessions = current_home

    out, modules = run(home, "session", "list")

    assert "3 sessions (UTC)" in out
    assert all(str(s)[:12] in out for s in sessions)
    assert [] == loaded(modules, NOT_FOR_A_LISTING)


def test_a_listing_behind_the_journal_catches_up_and_then_reads_the_same(
    current_home: tuple[Path, list[SessionId]],
) -> None:
    """A session added after the catch-up is listed: the command catches up, as before.

    The next listing, on read models now current, prints exactly the same table and JSON.
    """
    home, _ = current_home
    printed: dict[tuple[str, ...], str] = {}
    for args in (("--json",), ("--limit", "2")):
        journal = SqliteJournal(home / "ledgerclaw.db")
        late = write_sample_session(journal, f"main:late{len(printed)}")
        journal.close()

        behind, behind_modules = run(home, "session", "list", *args)
        current, current_modules = run(home, "session", "list", *args)

        assert str(late)[:12] in behind
        assert "projections.registry" in behind_modules
        assert [] == loaded(current_modules, NOT_FOR_A_LISTING)
        assert behind == current
        printed[args] = current
    assert 4 == len(json.loads(printed["--json",]))
