"""The measured paths of the journal benchmark and the baselines they race.

ledgerclaw is measured on its own entry points: `EventJournal.update_session`, which the
runtime calls, and `EventJournal.save` on a Session kept in memory, which is like for like
with the baselines. Both include ledgerclaw's snapshots, which `journal.save` takes from the
in-memory aggregate once per save that crosses a multiple of SNAPSHOT_INTERVAL. The
baselines are the raw sqlite3 commit ceiling and eventsourcing's default mapper (`stock.py`).
"""

from __future__ import annotations

import gc
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from session_data import LongSession, Payloads, build_long_session, copy_without_snapshots
from stock import StockApplication, StockSession, mirror_to_stock, new_stock_session, stock_app

from adapters.journal.journal import SqliteJournal
from adapters.journal.reader import JournalReader
from domain.base import Aggregate
from domain.ids import RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage

REPO_ROOT = Path(__file__).resolve().parent.parent
BLOCKS = 20
"""The append paths alternate in this many blocks of events."""
HEAD_APPENDS = 50
"""One-message commands timed at the head of the long session."""
INNER_SAMPLES = 5
"""Timed calls per run for the read measurements (after one warm-up call)."""
DDL = (
    "CREATE TABLE stored_events (originator_id TEXT, originator_version INTEGER, topic TEXT,"
    " state BLOB, PRIMARY KEY (originator_id, originator_version))"
)
INSERT = "INSERT INTO stored_events VALUES (?, ?, ?, ?)"


# -- ledgerclaw setup -------------------------------------------------------------------------


@dataclass
class Ledger:
    """An open ledgerclaw journal with one session whose writer is `run_id`."""

    journal: SqliteJournal
    session_id: SessionId
    run_id: RunId
    snapshot_seconds: list[float] = field(default_factory=list)
    """Seconds of each `journal._snapshot` call, to report the snapshots' share of saves."""

    def session(self) -> Session:
        """The session as stored."""
        return self.journal.session(self.session_id)


def open_ledger(path: Path) -> Ledger:
    """A fresh journal whose session has a started run holding the writer.

    `EventJournal._snapshot`, which `journal.save` calls after the events commit when the
    save crosses a snapshot interval, is wrapped on this instance only, to report how much
    of the save time snapshots take.
    """
    journal = SqliteJournal(path)
    session_id, run_id = SessionId.new(), RunId.new()
    journal.open_session(SessionOpening(session_id, "bench", SessionKind.MAIN, Audience.PERSONAL))

    def start(session: Session) -> None:
        session.start_run(run_id)
        session.claim_writer(run_id)

    journal.update_session(session_id, start)
    ledger = Ledger(journal, session_id, run_id)
    snapshot = journal._snapshot  # noqa: SLF001 - the step save() runs after the commit

    def timed_snapshot(aggregate: Aggregate) -> None:
        started = time.perf_counter()
        snapshot(aggregate)
        ledger.snapshot_seconds.append(time.perf_counter() - started)

    journal._snapshot = timed_snapshot  # type: ignore[method-assign]  # noqa: SLF001
    return ledger


# -- timing helpers ---------------------------------------------------------------------------


@contextmanager
def workdir() -> Iterator[Path]:
    """A fresh temporary directory, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="ledgerclaw-bench-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def timed(action: Callable[[], object]) -> float:
    """Seconds `action` takes, after a full garbage collection."""
    gc.collect()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def sampled(action: Callable[[], object]) -> float:
    """Median seconds of INNER_SAMPLES calls of `action`, after one warm-up call."""
    action()
    return statistics.median(timed(action) for _ in range(INNER_SAMPLES))


# -- 1 and 2: appends -------------------------------------------------------------------------

Appender = Callable[[range], None]
"""Appends the events whose indexes are in the range."""


def raw_path(
    stack: ExitStack, path: Path, rows: Sequence[tuple[Any, ...]], per_save: int
) -> Appender:
    """Hand-written INSERTs, one COMMIT per `per_save` rows (WAL, synchronous FULL)."""
    conn = stack.enter_context(closing(sqlite3.connect(path, isolation_level=None)))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(DDL)

    def append(part: range) -> None:
        for start in range(part.start, part.stop, per_save):
            conn.execute("BEGIN")
            conn.executemany(INSERT, rows[start : min(start + per_save, part.stop)])
            conn.execute("COMMIT")

    return append


def stock_path(
    stack: ExitStack, path: Path, payloads: Sequence[dict[str, Any]], per_save: int
) -> Appender:
    """The default mapper: MessageAppended events on a StockSession kept in memory."""
    run_id = RunId.new()
    app = stock_app(path)
    stack.callback(app.close)
    session = new_stock_session(app, run_id)

    def append(part: range) -> None:
        for start in range(part.start, part.stop, per_save):
            for payload in payloads[start : min(start + per_save, part.stop)]:
                session.append_message(run_id, payload)
            app.save(session)

    return append


def ledger_save_path(
    stack: ExitStack, path: Path, messages: Sequence[ChatMessage], per_save: int
) -> tuple[Appender, Ledger]:
    """The ledgerclaw path `journal.save` on a Session kept in memory between saves."""
    ledger = open_ledger(path)
    stack.callback(ledger.journal.close)
    session = ledger.session()
    save = ledger.journal.save

    def append(part: range) -> None:
        for start in range(part.start, part.stop, per_save):
            for message in messages[start : min(start + per_save, part.stop)]:
                session.append_message(ledger.run_id, message)
            save(session)

    return append, ledger


def append_command(run_id: RunId, message: ChatMessage) -> Callable[[Session], None]:
    """The update_session command that appends `message`."""

    def command(session: Session) -> None:
        session.append_message(run_id, message)

    return command


def ledger_update_path(
    stack: ExitStack, path: Path, messages: Sequence[ChatMessage]
) -> tuple[Appender, Ledger]:
    """The ledgerclaw path `update_session`: kept copy, one `append_message`, save; per event."""
    ledger = open_ledger(path)
    stack.callback(ledger.journal.close)
    journal, session_id, run_id = ledger.journal, ledger.session_id, ledger.run_id

    def append(part: range) -> None:
        for index in part:
            journal.update_session(session_id, append_command(run_id, messages[index]))

    return append, ledger


def race(appenders: dict[str, Appender], total: int, block: int) -> dict[str, float]:
    """Seconds each appender spends on `total` events, run in alternating blocks.

    fsync latency drifts a lot on shared disks; alternating blocks (in a rotating order)
    gives every path the same conditions, which separate runs per path do not.
    """
    spent = dict.fromkeys(appenders, 0.0)
    names = list(appenders)
    gc.collect()
    for turn, start in enumerate(range(0, total, block)):
        part = range(start, min(start + block, total))
        shift = turn % len(names)
        for name in names[shift:] + names[:shift]:
            began = time.perf_counter()
            appenders[name](part)
            spent[name] += time.perf_counter() - began
    return spent


@dataclass
class AppendFigures:
    """Events/s of each path at one events-per-save setting, and the snapshot shares."""

    rates: dict[str, float]
    snapshot_share: dict[str, float]


def append_run(root: Path, data: Payloads, total: int, per_save: int) -> AppendFigures:
    """Race the raw, default-mapper and ledgerclaw paths on the same `total` messages."""
    block = per_save * max(1, total // (BLOCKS * per_save))
    with ExitStack() as stack:
        save, save_ledger = ledger_save_path(stack, root / "save.db", data.messages, per_save)
        appenders = {
            "raw": raw_path(stack, root / "raw.db", data.rows, per_save),
            "stock": stock_path(stack, root / "stock.db", data.payloads, per_save),
            "save": save,
        }
        ledgers = {"save": save_ledger}
        if per_save == 1:
            appenders["update"], ledgers["update"] = ledger_update_path(
                stack, root / "update.db", data.messages
            )
        spent = race(appenders, total, block)
    return AppendFigures(
        rates={name: total / seconds for name, seconds in spent.items()},
        snapshot_share={
            name: sum(ledger.snapshot_seconds) / spent[name] for name, ledger in ledgers.items()
        },
    )


# -- 3 and 4: the long session ----------------------------------------------------------------


@dataclass
class ReadFigures:
    """Seconds of each read measurement in one run."""

    replay_snapshot: float
    replay_full: float
    stock_replay: float
    timeline: float
    raw_select: float
    mapper_decode: float
    head_update: float
    """Seconds of HEAD_APPENDS update_session commands at the head of the long session."""
    head_stock: float
    """Seconds of HEAD_APPENDS default-mapper saves at the head of its twin."""
    facts: LongSession


def head_appends(
    ledger: Ledger, stock: StockApplication, twin: StockSession, data: Payloads
) -> dict[str, float]:
    """Seconds of HEAD_APPENDS one-message commands at the head of each long session.

    ledgerclaw goes through `update_session` (kept copy, command, save); the
    baseline keeps its aggregate in memory, as in measurement 1.
    """
    journal, session_id, run_id = ledger.journal, ledger.session_id, ledger.run_id
    stock_run = str(run_id)

    def update(part: range) -> None:
        for index in part:
            journal.update_session(session_id, append_command(run_id, data.messages[index]))

    def default(part: range) -> None:
        for index in part:
            twin.append_message(stock_run, data.payloads[index])
            stock.save(twin)

    return race({"update": update, "stock": default}, HEAD_APPENDS, HEAD_APPENDS // 5)


def read_run(root: Path, target: int, data: Payloads) -> ReadFigures:
    """Build the long session and its default-mapper twin; time replays, timelines, appends."""
    ledger = open_ledger(root / "ledgerclaw.db")
    stock = stock_app(root / "stock.db")
    journal, session_id = ledger.journal, ledger.session_id
    try:
        facts = build_long_session(journal, session_id, ledger.run_id, target)
        twin = mirror_to_stock(journal, session_id, stock)
        stock_id = twin.id
        replay_snapshot = sampled(lambda: journal.session(session_id))
        stock_replay = sampled(lambda: stock.repository.get(stock_id))

        reader = JournalReader(journal.path)
        timeline = sampled(lambda: reader.timeline(session_id))
        uri = f"{journal.path.as_uri()}?mode=ro"
        query = (
            "SELECT originator_version, rowid, topic, state FROM stored_events"
            " WHERE originator_id = ? ORDER BY originator_version LIMIT ?"
        )

        def raw_select() -> list[Any]:
            with closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn:
                return conn.execute(query, (session_id.hex, -1)).fetchall()

        raw = sampled(raw_select)
        recorder, mapper = journal.app.recorder, journal.app.mapper
        stream = session_id.as_uuid()
        decode = sampled(
            lambda: [mapper.to_domain_event(row) for row in recorder.select_events(stream)]
        )
        copy_without_snapshots(journal.path, root / "no-snapshots.db")
        head = head_appends(ledger, stock, twin, data)
    finally:
        journal.close()
        stock.close()
    bare = SqliteJournal(root / "no-snapshots.db")
    try:
        replay_full = sampled(lambda: bare.session(session_id))
    finally:
        bare.close()
    return ReadFigures(
        replay_snapshot=replay_snapshot,
        replay_full=replay_full,
        stock_replay=stock_replay,
        timeline=timeline,
        raw_select=raw,
        mapper_decode=decode,
        head_update=head["update"],
        head_stock=head["stock"],
        facts=facts,
    )


# -- 5: imports -------------------------------------------------------------------------------


def import_seconds(code: str, repeat: int) -> float:
    """Median wall time of a fresh interpreter running `code`."""

    def once() -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)  # noqa: S603 - fixed arguments
        return time.perf_counter() - started

    return statistics.median(once() for _ in range(max(repeat, 3)))


def mcp_loaded_by_cli() -> bool:
    """Whether `import cli.app` leaves any `mcp` module in sys.modules."""
    code = (
        "import sys, cli.app; print(any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules))"
    )
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [sys.executable, "-c", code], cwd=REPO_ROOT, check=True, capture_output=True, text=True
    )
    return done.stdout.strip() == "True"
