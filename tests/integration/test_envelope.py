"""The session storage envelope: created and journaled once, never moved; subagent runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from adapters.fs.envelope import LAYOUT_VERSION, bind_envelope
from adapters.journal.journal import SqliteJournal
from adapters.journal.writer import SessionWriter
from adapters.runtime.runs import begin_run
from domain.ids import SessionId
from domain.session.aggregate import Session
from domain.session.events import StorageBound, WorkingContextChanged
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.receipts import OutcomeCategory
from tests.pipeline import make_pipeline


def _bound(journal: SqliteJournal, session_id: SessionId) -> list[StorageBound]:
    events = journal.app.events.get(session_id.as_uuid())
    return [e for e in events if isinstance(e, StorageBound)]


def test_the_first_run_creates_the_envelope_and_journals_it_once(tmp_path: Path) -> None:
    """Every area of the layout exists, and later runs reuse the one binding."""
    journal = SqliteJournal(tmp_path / "ledgerclaw.db")
    try:
        run = begin_run(journal, tmp_path / "home")
        root = run.envelope.root
        assert root == (tmp_path / "home" / "sessions" / str(run.session_id)).resolve()
        for area in (
            "attachment-staging",
            "workspace",
            "artifacts",
            "tmp/parent",
            "worktrees",
            "spills",
        ):
            assert (root / area).is_dir(), area
        assert (root / "logs" / "session.log").is_file()
        begin_run(journal, tmp_path / "home", run.session_id)
        [bound] = _bound(journal, run.session_id)
        assert (LAYOUT_VERSION, str(root)) == (bound.layout_version, bound.envelope_root)
    finally:
        journal.close()


def test_a_bound_envelope_never_moves_with_the_home(tmp_path: Path) -> None:
    """Binding again under another home keeps the journaled root and recreates its areas."""
    journal = SqliteJournal(tmp_path / "ledgerclaw.db")
    try:
        run = begin_run(journal, tmp_path / "home")
        shutil.rmtree(run.envelope.workspace)
        again = bind_envelope(journal, tmp_path / "elsewhere", run.session_id)
        assert run.envelope.root == again.root
        assert again.workspace.is_dir()
        assert not (tmp_path / "elsewhere").exists()
        assert 1 == len(_bound(journal, run.session_id))
    finally:
        journal.close()


def test_a_subagent_run_works_inside_its_parents_envelope(tmp_path: Path) -> None:
    """A child session binds its parent's root and gets subagents/<run>/ with its own tmp."""
    journal = SqliteJournal(tmp_path / "ledgerclaw.db")
    try:
        parent = begin_run(journal, tmp_path / "home")
        child_id = SessionId.new()
        journal.open_session(
            SessionOpening(
                child_id, "child", SessionKind.SUBAGENT, Audience.PERSONAL, parent.session_id
            )
        )
        child = begin_run(journal, tmp_path / "home", child_id)
        assert parent.envelope.root == child.envelope.root
        run_dir = child.envelope.root / "subagents" / str(child.run_id)
        for area in ("artifacts", "tmp", "logs/session.log"):
            assert (run_dir / area).exists(), area
        assert run_dir / "tmp" == child.tmp_dir
        assert parent.tmp_dir != child.tmp_dir
    finally:
        journal.close()


@pytest.mark.anyio
async def test_a_subagent_keeps_its_working_context_for_the_run_only(tmp_path: Path) -> None:
    """The child's context follows its receipts in memory; its stream journals no change."""
    pipeline = make_pipeline(tmp_path)
    try:
        child_id = SessionId.new()
        pipeline.journal.open_session(
            SessionOpening(
                child_id, "child", SessionKind.SUBAGENT, Audience.PERSONAL, pipeline.run.session_id
            )
        )
        child = begin_run(pipeline.journal, pipeline.home.root, child_id)
        (child.envelope.workspace / "a.txt").write_text("a\n")
        request = pipeline.request("read_file", path="a.txt")
        result = await pipeline.dispatcher.call(child, request)
        assert OutcomeCategory.SUCCESS == result.outcome
        assert (str((child.envelope.workspace / "a.txt").resolve()),) == (
            child.working_context.recent_files
        )
        events = list(pipeline.journal.app.events.get(child_id.as_uuid()))
        assert [] == [e for e in events if isinstance(e, WorkingContextChanged)]
        state = pipeline.journal.session(child_id).state()
        assert () == state.working_context.recent_files
    finally:
        pipeline.close()


def test_the_writer_commits_sessions_together(tmp_path: Path) -> None:
    """Concurrent updates of different sessions share transactions, each committed once."""
    journal = SqliteJournal(tmp_path / "ledgerclaw.db")
    writer = SessionWriter(journal)
    runs = [begin_run(journal, tmp_path / "home") for _ in range(8)]

    async def main() -> None:
        async def one(index: int) -> None:
            run = runs[index]

            def load_grep(session: Session) -> Session:
                session.load_tool_schema(run.run_id, "grep")
                return session

            for _ in range(5):
                await writer.update(run.session_id, load_grep)

        async with anyio.create_task_group() as tasks:
            for index in range(len(runs)):
                tasks.start_soon(one, index)

    try:
        anyio.run(main)
        assert 40 == writer.requests
        assert writer.batches < writer.requests
        for run in runs:
            assert frozenset({"grep"}) == journal.session(run.session_id).loaded_tools
    finally:
        journal.close()
