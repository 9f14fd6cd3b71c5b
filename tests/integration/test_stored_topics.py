"""Journals written before the domain was split by concept still load; stored names are fixed.

`stored_rows_before_split.json` holds rows exactly as the journal stored them before the
session's values moved to `domain/values/` and the Session aggregate to its parts: a session
stream that triggers every session event, a device registry stream, and a snapshot of each.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import StoredEvent

from adapters.journal.journal import SqliteJournal
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from domain.ids import SessionId
from domain.session.aggregate import Session
from domain.values.runs import SessionCloseReason

ROWS = json.loads(Path(__file__).with_name("stored_rows_before_split.json").read_text())
MAPPER = CatalogMapper(transcoder=OrjsonTranscoder())
SESSION = SessionId.from_uuid(UUID(int=1))

STORED_TOPICS = {
    "ledgerclaw.session.opened",
    "ledgerclaw.session.storage_bound",
    "ledgerclaw.session.run_started",
    "ledgerclaw.session.writer_claimed",
    "ledgerclaw.session.message_appended",
    "ledgerclaw.session.attempt_started",
    "ledgerclaw.session.policy_evaluated",
    "ledgerclaw.session.approval_requested",
    "ledgerclaw.session.approval_decided",
    "ledgerclaw.session.correction_issued",
    "ledgerclaw.session.attempt_denied",
    "ledgerclaw.session.receipt_recorded",
    "ledgerclaw.session.attempt_outcome_unknown",
    "ledgerclaw.session.working_context_changed",
    "ledgerclaw.session.tool_schema_loaded",
    "ledgerclaw.session.run_ended",
    "ledgerclaw.session.closed",
    "ledgerclaw.session.snapshot",
    "ledgerclaw.devices.created",
    "ledgerclaw.devices.paired",
    "ledgerclaw.devices.seen",
    "ledgerclaw.devices.revoked",
    "ledgerclaw.devices.snapshot",
}
"""Every topic a journal written before the split may hold; a topic is never renamed."""

AGENT_TOPICS = {
    "ledgerclaw.session.agent_run_configured",
    "ledgerclaw.session.turn_started",
    "ledgerclaw.session.prompt_prefix_set",
    "ledgerclaw.session.model_requested",
    "ledgerclaw.session.model_replied",
    "ledgerclaw.session.model_attempt_failed",
    "ledgerclaw.session.message_queued",
    "ledgerclaw.session.call_answered",
    "ledgerclaw.session.turn_ended",
}
"""The agent loop's topics, added after the fixture was written."""

ATTACHMENT_TOPICS = {
    "ledgerclaw.session.attachment_received",
    "ledgerclaw.session.attachment_sent",
}
"""The attachment topics, added after the fixture was written."""
UPSTREAM_TOPICS = {
    "ledgerclaw.upstream.created",
    "ledgerclaw.upstream.state_changed",
    "ledgerclaw.upstream.catalog_changed",
    "ledgerclaw.upstream.snapshot",
}
"""The upstream servers' topics, added after the fixture was written."""


def stored(row: dict[str, Any]) -> StoredEvent:
    """The stored event of one fixture row, with its state bytes as the journal kept them."""
    return StoredEvent(
        originator_id=UUID(row["originator_id"]),
        originator_version=row["originator_version"],
        topic=row["topic"],
        state=orjson.dumps(row["state"]),
    )


ALL_ROWS = [*ROWS["events"], *ROWS["snapshots"]]


def test_the_catalog_reads_exactly_the_stored_topics() -> None:
    """The mapper resolves these topics and no others, and names aggregates as before."""
    known = STORED_TOPICS | AGENT_TOPICS | ATTACHMENT_TOPICS | UPSTREAM_TOPICS
    assert known == set(CatalogMapper.types_by_topic)
    assert {"ledgerclaw.session", "ledgerclaw.devices", "ledgerclaw.upstream"} == set(
        CatalogMapper.library_topics
    )


def test_the_fixture_holds_every_stored_topic() -> None:
    """The rows written before the split cover every topic, so every one is checked below."""
    assert STORED_TOPICS == {row["topic"] for row in ALL_ROWS}


@pytest.mark.parametrize(
    "row", ALL_ROWS, ids=lambda row: f"{row['topic']}@{row['originator_version']}"
)
def test_an_old_row_decodes_and_is_written_back_byte_for_byte(row: dict[str, Any]) -> None:
    """Each old row decodes, and encoding it again gives the same topic and the same bytes."""
    old = stored(row)

    again = MAPPER.to_stored_event(MAPPER.to_domain_event(old))

    assert (old.topic, old.state) == (again.topic, again.state)


def insert(path: Path, table: str, rows: list[dict[str, Any]]) -> None:
    """Put `rows` into `table` of the journal file as the old code stored them."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executemany(
            f"INSERT INTO {table} VALUES (?, ?, ?, ?)",  # noqa: S608 - a fixed table name
            [
                (r["originator_id"], r["originator_version"], r["topic"], orjson.dumps(r["state"]))
                for r in rows
            ],
        )


@pytest.fixture
def old_journal(tmp_path: Path) -> Path:
    """A journal file holding the rows written before the split."""
    path = tmp_path / "ledgerclaw.db"
    SqliteJournal(path).close()
    insert(path, "stored_events", ROWS["events"])
    return path


def test_an_old_session_stream_replays(old_journal: Path) -> None:
    """The old session stream replays to the state it had: runs, attempts, grants, close."""
    journal = SqliteJournal(old_journal)
    try:
        session = journal.session(SESSION)
        transcript = journal.transcript(SESSION)
    finally:
        journal.close()

    state = session.state()
    assert SessionCloseReason.CLIENT_CLOSED == state.closed
    assert (2, 2, 6) == (len(state.runs), state.message_count, state.ended_attempts)
    assert ["shell:ls"] == [grant.key for grant in state.approval_grants]
    assert ("/w/a.txt",) == state.working_context.recent_files
    assert ["hello", ""] == [message.content for message in transcript]


def test_an_old_snapshot_loads_to_the_replayed_state(old_journal: Path) -> None:
    """A snapshot written before the split restores what replaying the old stream gives."""
    replayed = SqliteJournal(old_journal)
    try:
        expected = replayed.session(SESSION).state()
        expected_devices = replayed.devices().state()
    finally:
        replayed.close()
    insert(old_journal, "stored_snapshots", ROWS["snapshots"])

    journal = SqliteJournal(old_journal)
    try:
        from_snapshot = journal.session(SESSION)
        devices = journal.devices()
    finally:
        journal.close()

    assert isinstance(from_snapshot, Session)
    assert expected == from_snapshot.state()
    assert expected_devices == devices.state()
