"""The authorization decides from facts gathered before its journal command, off the loop.

The command runs inside the journal's lock on the session's stream, and for a session kept
in memory on the event loop itself. These tests watch the filesystem calls the facts need
(`os.lstat`, `os.stat`, `os.readlink`, `os.walk`, `os.scandir`) on real files: none may be
made while a journal command runs, and the gathering runs in a worker thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import anyio
import pytest

from adapters.journal.writer import SessionWriter
from adapters.pipeline.dispatcher import Dispatcher
from adapters.pipeline.ports import SessionReads
from adapters.runtime.runs import begin_run
from domain.ids import SessionId
from domain.session.aggregate import Session
from domain.session.events import AuthorizationAttemptStarted
from domain.session.opening import SessionOpening
from domain.tools.exposure import ExposurePolicy
from domain.values.attempts import AttemptEnd
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalMode, DenialCategory
from domain.values.receipts import OutcomeCategory
from tests.pipeline import ALL, Pipeline, approving, make_pipeline

T = TypeVar("T")
WATCHED = ("lstat", "stat", "readlink", "walk", "scandir")


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio."""
    return "asyncio"


@dataclass
class FilesystemCalls:
    """Counts the watched filesystem calls, and those made while a journal command runs."""

    total: int = 0
    inside: list[str] = field(default_factory=list)
    threads: list[tuple[str, int]] = field(default_factory=list)
    running: int = 0

    @contextmanager
    def command(self) -> Iterator[None]:
        """Mark a journal command as running."""
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1

    def wrap(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        """`real`, counted."""

        def watched(*args: Any, **kwargs: Any) -> Any:
            self.total += 1
            self.threads.append((str(args[0]) if args else "", threading.get_ident()))
            if self.running:
                self.inside.append(f"os.{name}({args[0] if args else ''!s})")
            return real(*args, **kwargs)

        return watched


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> FilesystemCalls:
    """Every watched `os` function, counted for the test's duration."""
    found = FilesystemCalls()
    for name in WATCHED:
        monkeypatch.setattr(os, name, found.wrap(name, getattr(os, name)))
    return found


class WatchedWriter:
    """The real writer, whose commands fail the test if they touch the filesystem."""

    def __init__(self, writer: SessionWriter, calls: FilesystemCalls) -> None:
        self.writer = writer
        self.calls = calls

    @property
    def journal(self) -> SessionReads:
        """The real journal."""
        return self.writer.journal

    async def update(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """Run `command` through the real writer, counting what it reads from the disk."""
        return await self.writer.update(session_id, self._watch(command))

    async def update_prepared(
        self, session_id: SessionId, prepare: Callable[[], Callable[[Session], T]]
    ) -> T:
        """Prepare freely (that is where the disk is read), then watch the command."""
        return await self.writer.update_prepared(session_id, lambda: self._watch(prepare()))

    def _watch(self, command: Callable[[Session], T]) -> Callable[[Session], T]:
        def watched(session: Session) -> T:
            before = len(self.calls.inside)
            with self.calls.command():
                result = command(session)
            assert self.calls.inside[before:] == [], "the journal command read the filesystem"
            return result

        return watched


def _watched(pipeline: Pipeline, calls: FilesystemCalls, **changes: Any) -> Dispatcher:
    base = pipeline.dispatcher
    writer = base.writer
    assert isinstance(writer, SessionWriter)
    policy = base.policy
    if changes:
        policy = policy.__class__(**{**policy.__dict__, **changes})
    return Dispatcher(WatchedWriter(writer, calls), base.tools, policy, base.approver)


def _starts(pipeline: Pipeline) -> int:
    return sum(isinstance(e, AuthorizationAttemptStarted) for e in pipeline.events())


@pytest.mark.anyio
async def test_no_journal_command_reads_the_filesystem(
    tmp_path: Path, calls: FilesystemCalls
) -> None:
    """Allowed, denied, corrected and approved calls decide from facts gathered first."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('hi')\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    pipeline = make_pipeline(tmp_path, roots=[(project, ALL)], approver=approving())
    (pipeline.workspace / "notes.txt").write_text("notes\n")
    (pipeline.workspace / "leak").symlink_to(outside)
    dispatcher = _watched(
        pipeline,
        calls,
        exposure=ExposurePolicy(approval_modes={"write_file": ApprovalMode.REQUEST}),
    )

    async def call(tool: str, /, **arguments: Any) -> Any:
        return await dispatcher.call(pipeline.run, pipeline.request(tool, **arguments))

    try:
        read = await call("read_file", path="notes.txt")
        assert OutcomeCategory.SUCCESS == read.outcome, read.text
        leaked = await call("read_file", path="leak/secret.txt")
        assert DenialCategory.LINK_BOUNDARY == leaked.denial, leaked.text
        far = await call("read_file", path=str(outside / "secret.txt"))
        assert DenialCategory.OUTSIDE_ROOTS == far.denial, far.text
        journal = await call("read_file", path=str(pipeline.home.database))
        assert DenialCategory.PROTECTED_PATH == journal.denial, journal.text
        declared = await call("set_working_directory", path=str(project))
        assert OutcomeCategory.SUCCESS == declared.outcome, declared.text
        relative = await call("read_file", path="src/main.py")
        assert OutcomeCategory.SUCCESS == relative.outcome, relative.text
        written = await call("write_file", path="src/new.py", content="x = 1\n")
        assert OutcomeCategory.SUCCESS == written.outcome, written.text
        assert (project / "src" / "new.py").read_text() == "x = 1\n"
        unknown = await call("no_such_tool")
        assert AttemptEnd.DENIED == unknown.end
        invalid = await call("read_file", path=3)
        assert OutcomeCategory.INVALID_INPUT == invalid.outcome
        pipeline.new_run()
        again = await call("read_file", path="src/main.py")
        assert OutcomeCategory.SUCCESS == again.outcome, again.text
    finally:
        pipeline.close()
    assert [] == calls.inside
    assert calls.total > 0, "the filesystem calls were not watched"


@pytest.mark.anyio
async def test_a_subagents_calls_decide_from_facts_gathered_first(
    tmp_path: Path, calls: FilesystemCalls
) -> None:
    """A subagent's project is its run's own; its commands read no filesystem either."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "inside.txt").write_text("inside\n")
    pipeline = make_pipeline(tmp_path, roots=[(project, ALL)])
    dispatcher = _watched(pipeline, calls)
    try:
        child_id = SessionId.new()
        pipeline.journal.open_session(
            SessionOpening(
                child_id, "child", SessionKind.SUBAGENT, Audience.PERSONAL, pipeline.run.session_id
            )
        )
        child = begin_run(pipeline.journal, pipeline.home.root, child_id)
        declared = await dispatcher.call(
            child, pipeline.request("set_working_directory", path=str(project))
        )
        assert OutcomeCategory.SUCCESS == declared.outcome, declared.text
        result = await dispatcher.call(child, pipeline.request("read_file", path="inside.txt"))
        assert OutcomeCategory.SUCCESS == result.outcome, result.text
        assert "inside" in result.text
    finally:
        pipeline.close()
    assert [] == calls.inside
    assert calls.total > 0


@pytest.mark.anyio
async def test_the_facts_are_gathered_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow filesystem holds up a call with effects, never the event loop.

    (A call that stays inside, like `read_file`, reads its few facts on the loop once its
    run's roots are known, as it reads a small file there: ADR 0023.)
    """
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "slow.txt"
    target.write_text("slow\n")
    pipeline = make_pipeline(tmp_path)
    real_lstat = os.lstat
    seen: list[int] = []

    def slow_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path) == str(target):
            seen.append(threading.get_ident())
            # A real sleep, as a slow disk would be; an event loop thread would stall.
            threading.Event().wait(0.2)
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", slow_lstat)
    loop_thread = threading.get_ident()
    ticks = 0
    try:
        await pipeline.call("read_file", path="missing.txt")  # the run's first call

        async def tick() -> None:
            nonlocal ticks
            while True:
                await anyio.sleep(0.01)
                ticks += 1

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            result = await pipeline.call("write_file", path=str(target), content="fast\n")
            tasks.cancel_scope.cancel()
    finally:
        pipeline.close()
    assert DenialCategory.OUTSIDE_ROOTS == result.denial, result.text
    assert seen, "the target was never looked at"
    assert loop_thread not in seen
    assert ticks >= 5, f"the event loop ticked only {ticks} times in a 0.2 s gathering"


@pytest.mark.anyio
async def test_facts_for_a_project_the_session_left_are_gathered_again(
    tmp_path: Path, calls: FilesystemCalls
) -> None:
    """Facts read for another project than the session declares decide nothing."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "inside.txt").write_text("inside\n")
    pipeline = make_pipeline(tmp_path, roots=[(project, ALL)])
    watched = _watched(pipeline, calls)
    assert isinstance(watched.writer, WatchedWriter)
    reads = StaleReads(watched.writer.journal)
    watched.writer = StaleWriter(watched.writer, reads)
    try:
        declared = await pipeline.call("set_working_directory", path=str(project))
        assert OutcomeCategory.SUCCESS == declared.outcome, declared.text
        before = _starts(pipeline)
        result = await watched.call(pipeline.run, pipeline.request("read_file", path="inside.txt"))
        assert OutcomeCategory.SUCCESS == result.outcome, result.text
        assert "inside" in result.text
        assert before + 1 == _starts(pipeline)
        assert reads.stale_served == 1
        assert reads.reads >= 2
    finally:
        pipeline.close()
    assert [] == calls.inside


class StaleReads:
    """A journal whose first read of a session says no project is declared."""

    def __init__(self, journal: SessionReads) -> None:
        self.real = journal
        self.reads = 0
        self.stale_served = 0

    def session(self, session_id: SessionId) -> Session:
        """The real session."""
        return self.real.session(session_id)

    def is_kept(self, stream_id: UUID) -> bool:
        """As the real journal says."""
        return self.real.is_kept(stream_id)

    def read_session(self, session_id: SessionId, view: Callable[[Session], T]) -> T:
        """The first view is of a fresh session with no project; later ones are real."""
        self.reads += 1
        if self.stale_served:
            return self.real.read_session(session_id, view)
        self.stale_served += 1
        stale = self.real.session(session_id)
        stale.working_context = stale.working_context.model_copy(update={"project_directory": None})
        return view(stale)


class StaleWriter:
    """A writer that reads through `StaleReads` and updates through another writer."""

    def __init__(self, writer: WatchedWriter, reads: StaleReads) -> None:
        self.writer = writer
        self.reads = reads

    @property
    def journal(self) -> SessionReads:
        """The stale reads."""
        return self.reads

    async def update(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """The other writer's update."""
        return await self.writer.update(session_id, command)

    async def update_prepared(
        self, session_id: SessionId, prepare: Callable[[], Callable[[Session], T]]
    ) -> T:
        """The other writer's prepared update."""
        return await self.writer.update_prepared(session_id, prepare)


@pytest.mark.anyio
async def test_a_kept_project_scope_never_reaches_through_a_swapped_project(
    tmp_path: Path,
) -> None:
    """Reads keep the run's project facts; a project swapped for a link still denies.

    Between two reads, another process replaces the declared project directory with a link
    to a directory outside every root. The second read's base is the kept project path, but
    its target is resolved afresh, through the link, and checked against the project root as
    it really was: the outside file is never read.
    """
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("inside\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("not for this session\n")
    pipeline = make_pipeline(tmp_path, roots=[(project, ALL)])
    try:
        await pipeline.call("set_working_directory", path=str(project))
        first = await pipeline.call("read_file", path="notes.txt")
        assert "inside" in first.text, first.text
        assert pipeline.run.scope is not None
        assert pipeline.run.scope.project == os.path.realpath(project)
        project.rename(tmp_path / "moved")
        project.symlink_to(outside, target_is_directory=True)
        second = await pipeline.call("read_file", path="notes.txt")
    finally:
        pipeline.close()
    assert "not for this session" not in second.text
    assert DenialCategory.LINK_BOUNDARY == second.denial, second.text


@pytest.mark.anyio
async def test_a_call_with_effects_drops_the_kept_scope(tmp_path: Path) -> None:
    """After a write the project and workspace facts are gathered again."""
    pipeline = make_pipeline(tmp_path)
    try:
        (pipeline.workspace / "a.txt").write_text("a\n")
        await pipeline.call("read_file", path="a.txt")
        await pipeline.call("read_file", path="a.txt")
        assert pipeline.run.scope is not None
        await pipeline.call("write_file", path="b.txt", content="b\n")
        assert pipeline.run.scope is None
    finally:
        pipeline.close()
