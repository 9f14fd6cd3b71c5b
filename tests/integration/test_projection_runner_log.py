"""The projection runner reads its events through the EventLog port, whatever holds them.

A journal in memory feeds the runner through the in-memory event log, and the read models
land in a SQLite file of their own; integration tests.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from adapters.projections.runner import ProjectionRunner
from domain.ids import RunId, SessionId
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage, MessageRole
from projections.registry import ALL_PROJECTIONS
from tests.builders import start_and_claim
from tests.fakes import InMemoryEventLog, InMemoryJournal


def test_a_runner_over_an_in_memory_log_catches_up_to_its_head(tmp_path: Path):
    """Every projection stands at the log's head, and the catalog holds the session."""
    journal = InMemoryJournal()
    session_id, run_id = SessionId.new(), RunId.new()
    journal.open_session(SessionOpening(session_id, "k", SessionKind.MAIN, Audience.TEAM))
    journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
    message = ChatMessage(role=MessageRole.USER, content="hi")
    journal.update_session(session_id, lambda s: s.append_message(run_id, message))
    log = InMemoryEventLog(journal.app.recorder)
    database = tmp_path / "read-models.db"

    applied = ProjectionRunner(database, ALL_PROJECTIONS, log=log).catch_up(batch_size=2)

    runner = ProjectionRunner(database, ALL_PROJECTIONS, log=log)
    assert 4 * len(ALL_PROJECTIONS) == applied
    assert {4} == {status.position for status in runner.status()}
    assert 0 == runner.catch_up()
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT session_id, session_key, audience FROM sessions").fetchall()
    assert [(str(session_id), "k", "team")] == rows
