"""Recovery at start: sessions whose host died are settled, never re-run; adapter layer.

A session needs recovery when a run is still live in it, or when it was hosted for an MCP
client and never closed, and no live process holds its claim. Each such session gets, in
one commit: every attempt that was allowed but has no receipt marked `unknown` (the tool
is not run again), every pending approval denied because its run ended, every live run
ended as `crashed`, and, for an MCP session, the session closed as `crashed`.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from adapters.hosting.claims import SessionClaims
from adapters.journal.failures import translated
from adapters.projections.runner import ProjectionRunner
from domain.ids import SessionId
from domain.ports import Journal
from domain.session.aggregate import Session
from domain.values.attempts import AttemptStatus
from domain.values.runs import SessionCloseReason

log = logging.getLogger(__name__)
HOSTED_PREFIX = "mcp-"
"""The session-key prefix of sessions opened for MCP clients; they close with their host."""


@dataclass
class Recovered:
    """What recovery did to one session."""

    session_id: SessionId
    runs_crashed: int
    attempts_unknown: int
    approvals_ended: int
    closed: bool


@dataclass
class RecoveryReport:
    """Every session recovery settled, and those it left to their live host."""

    recovered: list[Recovered] = field(default_factory=list)
    skipped_hosted: int = 0


def candidates(database: Path) -> list[tuple[SessionId, str]]:
    """Sessions with a live run, or MCP sessions not closed, by the caught-up catalog."""
    uri = f"{database.resolve().as_uri()}?mode=ro"
    with (
        translated(database, "reading the session catalog"),
        closing(sqlite3.connect(uri, uri=True, timeout=5)) as db,
    ):
        rows = db.execute(
            "SELECT session_id, session_key FROM sessions WHERE live_runs > 0"
            " OR (status != 'closed' AND session_key LIKE ?)",
            (HOSTED_PREFIX + "%",),
        ).fetchall()
    return [(SessionId(row[0]), row[1]) for row in rows]


def settle(session: Session) -> Recovered:
    """The recovery command for one session: crash its live runs, close it if hosted."""
    open_attempts = session.open_attempts()
    unknown = sum(1 for a in open_attempts if a.status is AttemptStatus.ALLOWED)
    pending = len(open_attempts) - unknown
    live = sum(1 for run in session.runs.values() if run.ended is None)
    hosted = session.session_key.startswith(HOSTED_PREFIX) and session.closed is None
    if hosted:
        session.close(SessionCloseReason.CRASHED)
    else:
        session.recover()
    return Recovered(session.session_id, live, unknown, pending, hosted)


def recover_orphans(
    journal: Journal,
    runner: ProjectionRunner,
    claims: SessionClaims,
    progress: Callable[[Recovered], None] | None = None,
) -> RecoveryReport:
    """Settle every session whose host is gone; sessions held by a live process are left."""
    runner.catch_up()
    report = RecoveryReport()
    for session_id, _key in candidates(runner.database):
        claim = claims.try_claim(session_id)
        if claim is None:
            report.skipped_hosted += 1
            continue
        try:
            done = journal.update_session(session_id, settle)
        finally:
            claim.release()
        if not (done.runs_crashed or done.closed):
            continue  # settled meanwhile by another process's recovery
        report.recovered.append(done)
        log.warning(
            "recovered session %s: %d run(s) crashed, %d attempt(s) unknown,"
            " %d approval(s) ended%s",
            session_id,
            done.runs_crashed,
            done.attempts_unknown,
            done.approvals_ended,
            ", closed" if done.closed else "",
        )
        if progress is not None:
            progress(done)
    return report
