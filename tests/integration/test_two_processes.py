"""Operating-system processes sharing one SQLite journal; integration tests.

Each child process runs a small worker script with its own SqliteJournal on the same file, so
the write fence, the optimistic-concurrency retry and WAL reads are exercised across processes.
"""

from __future__ import annotations

import select
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from adapters.journal.journal import SqliteJournal
from adapters.journal.reader import JournalReader
from domain.ids import RunId, SessionId
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.runs import RunEndReason
from tests.builders import start_and_claim

TIMEOUT = 60
STALE_WRITER_EXIT = 3

WORKER = '''\
"""A child process that works on a shared ledgerclaw journal."""

import sys
from pathlib import Path

from adapters.journal.journal import SqliteJournal
from domain.ids import RunId, SessionId
from domain.session.errors import StaleWriterError
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage, MessageRole
from domain.session.opening import SessionOpening

STALE_WRITER_EXIT = 3


def start_and_claim(session, run_id):
    session.start_run(run_id)
    session.claim_writer(run_id)


def append(journal, session_id, run_id, tag, count):
    print("ready", flush=True)
    sys.stdin.readline()
    for number in range(count):
        message = ChatMessage(role=MessageRole.USER, content=f"{tag}-{number}")
        journal.update_session(session_id, lambda s: s.append_message(run_id, message))
    print(f"appended {count}", flush=True)


def hold_writer(journal, session_id, run_id):
    opening = SessionOpening(session_id, "main:shared", SessionKind.MAIN, Audience.PERSONAL)
    journal.open_session(opening)
    journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
    print("claimed", flush=True)
    sys.stdin.readline()
    message = ChatMessage(role=MessageRole.USER, content="from the stale writer")
    try:
        journal.update_session(session_id, lambda s: s.append_message(run_id, message))
    except StaleWriterError as error:
        print(f"stale writer: {error}", flush=True)
        sys.exit(STALE_WRITER_EXIT)
    print("appended", flush=True)


def main():
    command, path, session_id, run_id, *rest = sys.argv[1:]
    journal = SqliteJournal(Path(path))
    try:
        session_id, run_id = SessionId(session_id), RunId(run_id)
        if command == "append":
            append(journal, session_id, run_id, rest[0], int(rest[1]))
        elif command == "claim":
            journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
        elif command == "hold-writer":
            hold_writer(journal, session_id, run_id)
    finally:
        journal.close()


main()
'''


@pytest.fixture
def worker(tmp_path: Path) -> Path:
    """The worker script, written next to the journal."""
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    return script


@pytest.fixture
def path(tmp_path: Path) -> Path:
    """Where the shared journal lives."""
    return tmp_path / "ledgerclaw.db"


@contextmanager
def spawn(worker: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    """Start the worker with `args`; kill it if it is still running when the block ends."""
    process = subprocess.Popen(
        [sys.executable, str(worker), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=TIMEOUT)


def read_line(process: subprocess.Popen[str]) -> str:
    """The next line the worker prints, waiting at most TIMEOUT seconds."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT)
    assert ready, "the worker printed nothing in time"
    return process.stdout.readline().strip()


def signal(process: subprocess.Popen[str]) -> None:
    """Let a waiting worker go on."""
    assert process.stdin is not None
    process.stdin.write("go\n")
    process.stdin.flush()


def finish(process: subprocess.Popen[str]) -> tuple[str, str]:
    """Wait for the worker to end and return what it printed and what it logged."""
    out, err = process.communicate(timeout=TIMEOUT)
    return out, err


def open_with_writer(path: Path) -> tuple[SessionId, RunId]:
    """Open a session whose writer is a fresh run, from the test process."""
    session_id, run_id = SessionId.new(), RunId.new()
    journal = SqliteJournal(path)
    try:
        journal.open_session(
            SessionOpening(session_id, "main:shared", SessionKind.MAIN, Audience.PERSONAL)
        )
        journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
    finally:
        journal.close()
    return session_id, run_id


@pytest.mark.slow
def test_a_reader_sees_a_growing_gap_free_stream_while_another_process_appends(worker, path):
    """While a child appends 300 messages, every read shows versions 1..N with nothing lost."""
    count = 300
    session_id, run_id = open_with_writer(path)
    journal = SqliteJournal(path)
    reader = JournalReader(path)
    heads: list[int] = []
    try:
        with spawn(worker, "append", str(path), session_id, run_id, "m", str(count)) as child:
            assert "ready" == read_line(child)
            signal(child)
            while True:
                running = child.poll() is None
                timeline = reader.timeline(session_id)
                assert list(range(1, len(timeline) + 1)) == [e.position for e in timeline]
                session = journal.session(session_id)
                contents = [m.content for m in journal.transcript(session_id)]
                assert [f"m-{n}" for n in range(len(contents))] == contents
                assert len(timeline) <= session.version
                heads.extend([len(timeline), session.version])
                if not running:
                    break
            out, err = finish(child)
        assert 0 == child.returncode, err
        assert f"appended {count}" == out.strip()
        final = journal.session(session_id)
        final_contents = [m.content for m in journal.transcript(session_id)]
    finally:
        journal.close()

    assert sorted(heads) == heads
    assert any(3 < head < 3 + count for head in heads), "no read happened during the appends"
    assert 3 + count == final.version
    assert [f"m-{n}" for n in range(count)] == final_contents
    assert 3 + count == len(reader.timeline(session_id))


def test_a_superseded_writer_in_another_process_gets_stale_writer_error(worker, path):
    """Process A claims, process B claims over it, and A's next append fails with nothing stored."""
    session_id, first, second = SessionId.new(), RunId.new(), RunId.new()

    with spawn(worker, "hold-writer", str(path), session_id, first) as holder:
        assert "claimed" == read_line(holder)
        claimer = subprocess.run(
            [sys.executable, str(worker), "claim", str(path), session_id, second],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        assert 0 == claimer.returncode, claimer.stderr
        signal(holder)
        out, err = finish(holder)

    timeline = JournalReader(path).timeline(session_id)
    assert [
        ("session.opened", {"session_key": "main:shared", "kind": "main", "audience": "personal"}),
        ("session.run_started", {"run_id": first}),
        ("session.writer_claimed", {"run_id": first}),
        ("session.run_started", {"run_id": second}),
        ("session.writer_claimed", {"run_id": second, "superseded_run_id": first}),
        ("session.run_ended", {"run_id": first, "reason": "superseded"}),
    ] == [(e.event, e.fields) for e in timeline]
    journal = SqliteJournal(path)
    try:
        session = journal.session(session_id)
        transcript = journal.transcript(session_id)
    finally:
        journal.close()
    assert [] == transcript
    assert 0 == session.message_count
    assert second == session.writer
    assert RunEndReason.SUPERSEDED == session.runs[first].ended
    assert STALE_WRITER_EXIT == holder.returncode, err
    assert out.startswith("stale writer:")


@pytest.mark.slow
@pytest.mark.parametrize(("processes", "count"), [(2, 100), (4, 100)], ids=["two", "four"])
def test_concurrent_appends_from_several_processes_all_land(worker, path, processes, count):
    """Processes appending as the same writer store every message, each process's in order."""
    session_id, run_id = open_with_writer(path)
    tags = "abcd"[:processes]
    with ExitStack() as stack:
        children = [
            stack.enter_context(
                spawn(worker, "append", str(path), session_id, run_id, tag, str(count))
            )
            for tag in tags
        ]
        assert ["ready"] * processes == [read_line(child) for child in children]
        for child in children:
            signal(child)
        errors = "".join(finish(child)[1] for child in children)

    assert [0] * processes == [child.returncode for child in children], errors
    journal = SqliteJournal(path)
    try:
        session = journal.session(session_id)
        contents = [m.content for m in journal.transcript(session_id)]
    finally:
        journal.close()
    assert 3 + processes * count == session.version
    for tag in tags:
        assert [f"{tag}-{n}" for n in range(count)] == [c for c in contents if c[0] == tag]
    positions = [e.position for e in JournalReader(path).timeline(session_id)]
    assert list(range(1, 3 + processes * count + 1)) == positions
