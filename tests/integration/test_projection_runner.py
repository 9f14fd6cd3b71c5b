"""Every projection caught up from a real journal that a real tool pipeline wrote; integration."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from adapters.journal.event_log import SqliteEventLog
from adapters.projections.runner import ProjectionRunner
from adapters.projections.stored import utc_text_of
from domain.ids import DeviceId
from domain.values.authorization import ApprovalVerdict
from projections.authorization_audit import AuthorizationAudit
from projections.contract import utc_text
from projections.daily_stats import DailyStats
from projections.registry import ALL_PROJECTIONS
from tests.pipeline import Pipeline, approving, make_pipeline

PHONE = DeviceId.from_uuid(UUID(int=1))
PAIRED_AT = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
async def pipeline(tmp_path: Path) -> AsyncIterator[Pipeline]:
    """A session that wrote and read a file, was denied twice, approved once, corrected once."""
    built = make_pipeline(tmp_path, approver=approving())
    try:
        await built.call("write_file", path="notes.txt", content="x")
        await built.call("read_file", path="notes.txt")
        await built.call("read_file", path="/etc/hostname")
        await built.call("shell_execute", command="touch made.txt")
        await built.call("find_files", pattern="*.py")
        built.dispatcher.approver = approving(ApprovalVerdict.REJECTED)
        await built.call("shell_execute", command="touch other.txt")
        built.journal.update_devices(
            lambda r: r.pair(PHONE, "Pixel", bytes(range(16)), "s" * 40, PAIRED_AT)
        )
        yield built
    finally:
        built.close()


def query(pipeline: Pipeline, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows `sql` returns from the pipeline's journal file."""
    with closing(sqlite3.connect(pipeline.home.database)) as db:
        return db.execute(sql, params).fetchall()


def caught_up(pipeline: Pipeline) -> ProjectionRunner:
    """A runner over every projection, after one catch-up."""
    runner = ProjectionRunner(pipeline.home.database, ALL_PROJECTIONS)
    runner.catch_up()
    return runner


@pytest.mark.anyio
async def test_file_activity_says_which_files_the_session_changed(pipeline: Pipeline) -> None:
    """The written file is listed once, with the tool that wrote it; reads are separate.

    The command that ran adds the paths it was checked for, as shell candidates.
    """
    caught_up(pipeline)
    workspace = pipeline.workspace.resolve()
    notes = str(workspace / "notes.txt")
    expected = [
        (notes, "write", "write_file"),
        (notes, "read", "read_file"),
        (str(workspace), "shell_candidate", "shell_execute"),
        (str(workspace / "made.txt"), "shell_candidate", "shell_execute"),
    ]
    assert expected == query(
        pipeline,
        "SELECT path, operation, tool FROM file_activity WHERE session_id = ? ORDER BY at, rowid",
        pipeline.run.session_id,
    )
    assert [] == query(pipeline, "SELECT * FROM file_activity_attempts")


@pytest.mark.anyio
async def test_the_audit_says_which_calls_were_denied_and_why(pipeline: Pipeline) -> None:
    """Denied calls carry their tool, paths, denial category and the reason given."""
    caught_up(pipeline)
    expected = [
        (
            "read_file",
            '["/etc/hostname"]',
            "outside_roots",
            "/etc/hostname is outside every trusted root",
        ),
        ("shell_execute", None, "approval_rejected", "approval rejected by test operator"),
    ]
    actual = query(
        pipeline,
        "SELECT tool, CASE WHEN tool = 'read_file' THEN paths END, failure_category, detail"
        " FROM authorization_audit WHERE decision = 'denied' ORDER BY started_at",
    )
    assert expected == actual


@pytest.mark.anyio
async def test_the_audit_says_who_approved_what(pipeline: Pipeline) -> None:
    """Each asked call has the operator, verdict, scope, what was asked and how it ended."""
    caught_up(pipeline)
    workspace = pipeline.workspace.resolve()
    expected = [
        (
            f"shell_execute: touch made.txt (in {workspace})",
            "test operator",
            "approved",
            "once",
            "allowed",
            "success",
        ),
        (
            f"shell_execute: touch other.txt (in {workspace})",
            "test operator",
            "rejected",
            "once",
            "denied",
            None,
        ),
    ]
    actual = query(
        pipeline,
        "SELECT grant_key, decided_by, approval_verdict, approval_scope, decision, outcome"
        " FROM authorization_audit WHERE approval_asked = 1 ORDER BY started_at",
    )
    assert expected == actual


@pytest.mark.anyio
async def test_every_call_has_ended_with_a_duration(pipeline: Pipeline) -> None:
    """All six calls ended; each has an end time and a duration that is not negative."""
    caught_up(pipeline)
    expected = [("allowed", 3), ("corrected", 1), ("denied", 2)]
    actual = query(
        pipeline,
        "SELECT decision, COUNT(*) FROM authorization_audit"
        " WHERE ended_at >= started_at AND duration_ms >= 0 GROUP BY decision ORDER BY decision",
    )
    assert expected == actual


@pytest.mark.anyio
async def test_the_other_views_agree_with_the_session(pipeline: Pipeline) -> None:
    """Catalog, daily stats, working context and devices each answer from the same journal."""
    caught_up(pipeline)
    notes = str(pipeline.workspace.resolve() / "notes.txt")
    day = datetime.now(UTC).date().isoformat()
    assert [(6, 2)] == query(pipeline, "SELECT tool_calls, denials FROM sessions")
    expected_stats = [
        ("find_files", "corrected", 1, 0, 0),
        ("read_file", "denied", 1, 1, 0),
        ("read_file", "success", 1, 0, 0),
        ("shell_execute", "denied", 1, 1, 1),
        ("shell_execute", "success", 1, 0, 1),
        ("write_file", "success", 1, 0, 0),
    ]
    assert expected_stats == query(
        pipeline,
        "SELECT tool, outcome, calls, denials, approvals_asked FROM daily_stats"
        " WHERE day = ? AND p95_duration_ms >= 0 ORDER BY tool, outcome",
        day,
    )
    assert [f'["{notes}"]'] == [
        row[0] for row in query(pipeline, "SELECT recent_files FROM working_context")
    ]
    assert [(PHONE, "Pixel", PAIRED_AT.isoformat(), None)] == query(
        pipeline, "SELECT device_id, name, created_at, revoked_at FROM devices"
    )


@pytest.mark.anyio
async def test_a_second_catch_up_applies_only_new_events(pipeline: Pipeline) -> None:
    """Nothing is applied twice: a second catch-up applies 0, a new call only its events."""
    runner = caught_up(pipeline)
    assert 0 == runner.catch_up()
    await pipeline.call("read_file", path="notes.txt")
    head = runner.status()[0].head
    assert 3 * len(ALL_PROJECTIONS) == runner.catch_up()
    assert {(p.name, head, 0) for p in ALL_PROJECTIONS} == {
        (s.name, s.position, s.lag) for s in runner.status()
    }


@pytest.mark.anyio
async def test_a_projection_added_later_catches_up_alone(pipeline: Pipeline) -> None:
    """Positions are per projection: a newcomer starts at 0 while the others stay put."""
    without = [p for p in ALL_PROJECTIONS if not isinstance(p, DailyStats)]
    early = ProjectionRunner(pipeline.home.database, without)
    early.catch_up()
    head = early.status()[0].head
    runner = ProjectionRunner(pipeline.home.database, ALL_PROJECTIONS)
    assert [0] == [s.position for s in runner.status() if s.name == DailyStats.name]
    assert head == runner.catch_up()
    assert [(6,)] == query(pipeline, "SELECT SUM(calls) FROM daily_stats")


class AuthorizationAuditV2(AuthorizationAudit):
    """The audit with a new version number, as after a change of its shape."""

    version = AuthorizationAudit.version + 1


@pytest.mark.anyio
async def test_a_new_version_rebuilds_the_projection_from_the_start(pipeline: Pipeline) -> None:
    """A changed version drops the projection's rows and applies the whole log again."""
    runner = caught_up(pipeline)
    expected = query(pipeline, "SELECT * FROM authorization_audit ORDER BY attempt_id")
    with closing(sqlite3.connect(pipeline.home.database)) as db, db:
        db.execute("UPDATE authorization_audit SET decision = 'tampered'")
    head = runner.status()[0].head
    bumped = [
        AuthorizationAuditV2() if p.name == "authorization_audit" else p for p in ALL_PROJECTIONS
    ]
    rebuilt = ProjectionRunner(pipeline.home.database, bumped)
    assert head == rebuilt.catch_up()
    assert expected == query(pipeline, "SELECT * FROM authorization_audit ORDER BY attempt_id")
    bumped_version = AuthorizationAuditV2.version
    assert [(bumped_version, bumped_version)] == [
        (s.version, s.stored_version) for s in rebuilt.status() if s.name == "authorization_audit"
    ]


# -- how a catch-up from nothing works ------------------------------------------------------

READER_INDEXES = {
    f"idx_{table.name}_{'_'.join(columns)}"
    for projection in ALL_PROJECTIONS
    for table in projection.tables
    for columns in table.indexes
}
LOOKUP_INDEXES = {
    f"idx_{table.name}_{'_'.join(columns)}"
    for projection in ALL_PROJECTIONS
    for table in projection.tables
    if table.looked_up
    for columns in table.indexes
}


def indexes(database: Path) -> set[str]:
    """The names of the indexes created on the file's tables (not the keys' own)."""
    with closing(sqlite3.connect(database)) as db:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'index'").fetchall()
    return {name for (name,) in rows if not name.startswith("sqlite_autoindex")}


class StopAfterFirstBatchError(Exception):
    """Raised by a progress callback once the first batch has committed."""


def stop(_done: int, _total: int) -> None:
    """Stop a catch-up after its first committed batch."""
    raise StopAfterFirstBatchError


@pytest.mark.anyio
async def test_read_models_built_from_nothing_get_their_indexes_at_the_head(
    pipeline: Pipeline,
) -> None:
    """A catch-up that stops early leaves the readers' indexes to the next, which builds them."""
    runner = ProjectionRunner(pipeline.home.database, ALL_PROJECTIONS)
    with pytest.raises(StopAfterFirstBatchError):
        runner.catch_up(stop, batch_size=3)
    assert LOOKUP_INDEXES == indexes(pipeline.home.database)
    assert runner.catch_up(batch_size=3) > 0
    assert READER_INDEXES == indexes(pipeline.home.database)


def test_an_empty_journal_gets_every_index_at_once(tmp_path: Path) -> None:
    """With no event to wait for, the read models are created whole."""
    database = tmp_path / "empty.db"
    assert 0 == ProjectionRunner(database, ALL_PROJECTIONS).catch_up()
    assert READER_INDEXES == indexes(database)


@pytest.mark.anyio
@pytest.mark.parametrize("collecting", [True, False], ids=["collector-on", "collector-off"])
async def test_a_catch_up_pauses_the_garbage_collector_and_leaves_it_as_it_was(
    pipeline: Pipeline, collecting: bool
) -> None:
    """No collection runs between batches; afterwards the collector is on only if it was."""
    seen: list[bool] = []
    was = gc.isenabled()
    (gc.enable if collecting else gc.disable)()
    try:
        ProjectionRunner(pipeline.home.database, ALL_PROJECTIONS).catch_up(
            lambda _done, _total: seen.append(gc.isenabled()), batch_size=4
        )
        assert collecting == gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()
    assert seen
    assert not any(seen)


@pytest.mark.anyio
async def test_the_log_reads_the_same_rows_through_a_connection_it_is_lent(
    pipeline: Pipeline,
) -> None:
    """`batch_rows` through a held connection gives `batch`'s events as plain tuples."""
    log = SqliteEventLog(pipeline.home.database)
    expected = [tuple(event) for event in log.batch(2, 5)]
    with closing(sqlite3.connect(pipeline.home.database)) as db:
        assert expected == log.through(db).batch_rows(2, 5)
        assert expected == [tuple(event) for event in log.through(db).batch(2, 5)]
    assert 5 == len(expected)


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-11-30T10:15:02.123456Z",
        "2026-11-30T10:15:02Z",
        "2026-11-30T10:15:02.000000Z",
        "2026-11-30T12:15:02.5+02:00",
        "2026-11-30T10:15:02.123456+00:00",
    ],
)
def test_a_stored_time_reads_as_the_read_models_write_times(stamp: str) -> None:
    """The `Z` form pydantic writes, and any other ISO form, read as `utc_text` writes."""
    assert utc_text(datetime.fromisoformat(stamp)) == utc_text_of(stamp)
