"""A process killed while a tool runs: what the journal holds for each kind of call (ADR 0023).

A call with effects has its attempt and decision durable before its tool runs, so after a
kill recovery finds it allowed and marks it `unknown`. A call that stays inside stores its
attempt, decision and receipt in one commit after it ran: killed before that commit, it
left nothing in the journal and nothing of what it read left the process, so recovery has
nothing of it to settle. Each case kills a real process (SIGKILL) on a real SQLite file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.home import Home
from adapters.hosting.claims import SessionClaims
from adapters.journal.journal import SqliteJournal
from adapters.projections.runner import ProjectionRunner
from adapters.runtime.recovery import recover_orphans
from domain.base import DomainEvent
from domain.ids import SessionId
from domain.values.attempts import AttemptEnd
from domain.values.runs import RunEndReason
from projections.registry import ALL_PROJECTIONS

REPOSITORY = Path(__file__).resolve().parents[2]
ATTEMPT_EVENTS = {"attempt_started", "policy_evaluated", "receipt_recorded"}


def _killed_during_the_call(root: Path, kind: str) -> SessionId:
    """Run the worker until its pausing tool runs, kill it; the session it used."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.crash_worker", str(root), kind],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        session_id = SessionId(process.stdout.readline().strip())
        deadline = time.monotonic() + 30
        while not (root / "running").exists():
            assert process.poll() is None, "the worker ended before its tool ran"
            assert time.monotonic() < deadline, "the pausing tool never ran"
            time.sleep(0.02)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
    return session_id


def _stored(journal: SqliteJournal, session_id: SessionId) -> list[tuple[str, str | None]]:
    """(short name, tool name if any) of every stored attempt event of the session."""
    events = [e for e in journal.app.events.get(session_id.as_uuid()) if isinstance(e, DomainEvent)]
    named = [
        (type(e).short_name().removeprefix("session."), getattr(e, "tool_name", None))
        for e in events
    ]
    return [(name, tool) for name, tool in named if name in ATTEMPT_EVENTS]


@pytest.mark.parametrize("kind", ["inside", "effects"])
def test_a_kill_while_the_tool_runs(tmp_path: Path, kind: str) -> None:
    """Effects: started and allowed, then unknown. Inside: nothing of the call at all."""
    session_id = _killed_during_the_call(tmp_path, kind)
    home = Home(tmp_path / "home")
    journal = SqliteJournal(home.database)
    stored = _stored(journal, session_id)
    read = [
        ("attempt_started", "read_file"),
        ("policy_evaluated", None),
        ("receipt_recorded", None),
    ]
    paused = [("attempt_started", f"pause_{kind}"), ("policy_evaluated", None)]
    assert stored == (read + paused if kind == "effects" else read)

    report = recover_orphans(
        journal, ProjectionRunner(home.database, ALL_PROJECTIONS), SessionClaims(home)
    )

    assert [r.session_id for r in report.recovered] == [session_id]
    state = SqliteJournal(home.database).session(session_id).state()
    assert [r.ended for r in state.runs.values()] == [RunEndReason.CRASHED]
    ends = sorted(str(a.end) for a in state.attempts.values())
    expected = (
        [str(AttemptEnd.RECEIPT)]
        if kind == "inside"
        else sorted([str(AttemptEnd.RECEIPT), str(AttemptEnd.UNKNOWN)])
    )
    assert ends == expected
