"""Session claims across processes, and recovery of sessions whose host died."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.home import Home
from adapters.hosting.claims import SessionClaimedError, SessionClaims
from adapters.journal.journal import SqliteJournal
from adapters.projections.runner import ProjectionRunner
from adapters.runtime.recovery import recover_orphans
from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.attempts import AttemptEnd
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalMode, PolicyDecision
from domain.values.runs import RunEndReason, SessionCloseReason
from projections.registry import ALL_PROJECTIONS
from tests.builders import start_and_claim

HOLD = """
import sys, time
from adapters.hosting.claims import SessionClaims
from adapters.home import Home
from domain.ids import SessionId
claim = SessionClaims(Home(__import__("pathlib").Path(sys.argv[1]))).claim(SessionId(sys.argv[2]))
print("held", flush=True)
time.sleep(60)
"""


def holder(home: Path, session_id: SessionId) -> subprocess.Popen[str]:
    """A process that holds the claim on `session_id` until killed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home), str(session_id)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_claim_held_by_a_live_process_is_refused_and_freed_by_its_death(tmp_path: Path) -> None:
    """Another process's claim cannot be taken; after SIGKILL it can, and release cleans up."""
    home = Home(tmp_path)
    claims = SessionClaims(home)
    session_id = SessionId.new()
    process = holder(tmp_path, session_id)
    try:
        assert claims.try_claim(session_id) is None
        with pytest.raises(SessionClaimedError, match="hosted by another running process"):
            claims.claim(session_id)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert process.stdout is not None
        process.stdout.close()
    claim = claims.claim(session_id)
    assert claims.try_claim(session_id) is None
    claim.release()
    claim.release()
    assert list(home.claims.iterdir()) == []


def _session_with_an_allowed_and_a_pending_attempt(journal: SqliteJournal, key: str) -> SessionId:
    session_id, run = SessionId.new(), RunId.new()
    journal.open_session(SessionOpening(session_id, key, SessionKind.MAIN, Audience.PERSONAL))

    def drive(session: Session) -> None:
        start_and_claim(session, run)
        allowed, pending = AttemptId.new(), AttemptId.new()
        session.start_attempt(run, allowed, CallId("c1"), "shell_execute")
        session.evaluate_policy(run, allowed, PolicyDecision.ALLOW, rule="paths allowed")
        session.start_attempt(run, pending, CallId("c2"), "write_file")
        session.evaluate_policy(
            run,
            pending,
            PolicyDecision.APPROVAL_REQUIRED,
            rule="approval",
            approval_mode=ApprovalMode.REQUEST,
        )
        session.request_approval(run, pending, "write a file", ApprovalMode.REQUEST)

    journal.update_session(session_id, drive)
    return session_id


def test_recovery_settles_orphans_and_leaves_hosted_sessions_alone(tmp_path: Path) -> None:
    """Orphans: allowed → unknown, pending → denied, runs crashed, MCP sessions closed."""
    home = Home(tmp_path)
    journal = SqliteJournal(home.database)
    orphan = _session_with_an_allowed_and_a_pending_attempt(journal, "mcp-http:editor")
    cli_orphan = _session_with_an_allowed_and_a_pending_attempt(journal, "cli:1234")
    hosted = _session_with_an_allowed_and_a_pending_attempt(journal, "mcp-stdio:agent")
    finished = SessionId.new()
    journal.open_session(SessionOpening(finished, "cli:done", SessionKind.MAIN, Audience.PERSONAL))
    run = RunId.new()

    def finish(session: Session) -> None:
        session.start_run(run)
        session.end_run(run, RunEndReason.NATURAL)

    journal.update_session(finished, finish)
    process = holder(tmp_path, hosted)
    try:
        runner = ProjectionRunner(home.database, ALL_PROJECTIONS)
        report = recover_orphans(journal, runner, SessionClaims(home))
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert process.stdout is not None
        process.stdout.close()
    assert {r.session_id for r in report.recovered} == {orphan, cli_orphan}
    assert report.skipped_hosted == 1
    fresh = SqliteJournal(home.database)
    for session_id, closed in ((orphan, SessionCloseReason.CRASHED), (cli_orphan, None)):
        state = fresh.session(session_id).state()
        assert state.closed is closed
        assert [r.ended for r in state.runs.values()] == [RunEndReason.CRASHED]
        ends = sorted(str(a.end) for a in state.attempts.values())
        assert ends == sorted([str(AttemptEnd.UNKNOWN), str(AttemptEnd.DENIED)])
    untouched = fresh.session(hosted).state()
    assert [r.ended for r in untouched.runs.values()] == [None]
    assert fresh.session(finished).version == journal.session(finished).version
    again = recover_orphans(
        fresh, ProjectionRunner(home.database, ALL_PROJECTIONS), SessionClaims(home)
    )
    assert [r.session_id for r in again.recovered] == [hosted]
    assert list(home.claims.iterdir()) == []
