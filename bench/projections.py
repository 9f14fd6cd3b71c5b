"""Benchmark of projection catch-up: every read model from position 0 beside its ceilings.

Run from the repository root: `.venv/bin/python bench/projections.py [--events N] [--quick]`.

A journal of `--events` events is built once, through `update_session`, as the runtime writes
it: several main sessions whose runs alternate user and assistant messages, and every tenth
turn a tool call with its whole attempt lifecycle (allowed reads with a receipt and file
activity, approved writes, policy denials, corrections), the working-context changes that
receipts cause, and run ends. The sessions take turns, so their streams interleave in the log.

Each repeat then works on fresh copies of that file and measures, in the same batches of
`BATCH_SIZE` rows that the runner reads (`rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?`):

* bare read: the notification-log rows fetched with sqlite3, nothing decoded, in batches of
  1,000 rows and of the runner's size, whichever is faster (the ceiling);
* decode only: the same rows, each decoded by `mapper.to_domain_event`, nothing applied;
* catch-up: `ProjectionRunner(copy, ALL_PROJECTIONS).catch_up()` from position 0, every
  projection, tables created, statements executed and committed with their positions; all
  projections stand at 0, so the runner reads and decodes each batch once for all of them;
* each projection alone, from position 0 on its own fresh copy (for information: the cost
  of each projection's own work on top of a read and decode of the whole log).

The rate of a catch-up is the log's events divided by its wall time, whatever the number of
projections. Each figure is the median over the repeats; the table goes to stdout, progress
to stderr, and the catch-up figure goes to `bench/all.py` through `figures.report`. Nothing
asserts a timing. The aim (from the issue): catch-up of all projections at least 0.25 of the
bare read rate.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import os
import pstats
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from eventsourcing.persistence import StoredEvent
from rich.console import Console
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# This script shares its name with the `projections` package. Python puts the script's
# directory first on sys.path, where `import projections` would find this file; so the
# repository root goes first and the bench directory (for `paths`, `session_data`) last.
sys.path[:] = [
    str(REPO_ROOT),
    *(entry for entry in sys.path if Path(entry or ".").resolve() != BENCH_DIR),
    str(BENCH_DIR),
]

from figures import report  # noqa: E402 - the bench directory is on sys.path from here on
from paths import workdir  # noqa: E402
from session_data import TURN_CYCLE, sentence  # noqa: E402

from adapters.journal.journal import SqliteJournal  # noqa: E402
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder  # noqa: E402
from adapters.projections.runner import BATCH_SIZE, ProjectionRunner  # noqa: E402
from adapters.settings.journal import Durability, JournalSettings  # noqa: E402
from domain.ids import AttemptId, CallId, RunId, SessionId  # noqa: E402
from domain.session.aggregate import Session  # noqa: E402
from domain.session.opening import SessionOpening  # noqa: E402
from domain.values.audience import Audience, SessionKind  # noqa: E402
from domain.values.authorization import (  # noqa: E402
    ApprovalMode,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest  # noqa: E402
from domain.values.receipts import FileActivity, OutcomeCategory, RemediationCode, ToolReceipt  # noqa: E402
from domain.values.runs import RunEndReason  # noqa: E402
from projections.contract import Projection  # noqa: E402
from projections.registry import ALL_PROJECTIONS  # noqa: E402

AIM = 0.25
"""Catch-up of every projection must reach this share of the bare read rate."""
EVENTS_PER_SESSION = 5_000
"""About how many events each session of the journal holds."""
EVENTS_PER_RUN = 1_000
"""A session's run ends (naturally) after about this many events and the next one starts."""
EVENTS_PER_SAVE = 250
"""Events per `update_session` while the journal is built; sessions take turns per save."""
READ = "SELECT rowid, originator_id, originator_version, topic, state FROM stored_events"
CEILING_BATCH = 1_000
"""Rows per query of the bare read's other batch size (the runner's until 2026-12-02)."""
BATCH = READ + " WHERE rowid > ? AND rowid <= ? ORDER BY rowid LIMIT ?"
"""The runner's batch query, on the journal file itself."""
PROFILE_LINES = 18

progress = Console(stderr=True)


# -- the journal ------------------------------------------------------------------------------


@dataclass
class Composition:
    """What the built journal holds."""

    events: int = 0
    sessions: int = 0
    runs: int = 0
    messages: int = 0
    attempts: dict[str, int] = field(default_factory=dict)
    build_seconds: float = 0.0


@dataclass
class Conversation:
    """One session's turns, continued across saves and runs.

    Most turns append one message, user and assistant in turn. Every tenth turn the assistant
    calls a tool and the attempt goes through one of four lifecycles, in rotation: an allowed
    read with a receipt naming the file (three times in six), a write that needs approval and
    is approved, then succeeds; a call the policy denies; a call corrected instead of run.
    """

    session_id: SessionId
    composition: Composition
    run_id: RunId | None = None
    run_events: int = 0
    turn: int = 0
    tool_turns: int = 0

    def play(self, session: Session, budget: int) -> None:
        """Append turns until `budget` more events (a turn is never split)."""
        start = session.version
        while session.version - start < budget:
            if self.run_id is None or self.run_events >= EVENTS_PER_RUN:
                self._next_run(session)
            before = session.version
            if self.turn % TURN_CYCLE == TURN_CYCLE - 1:
                self._tool_turn(session)
            else:
                role = MessageRole.USER if self.turn % 2 == 0 else MessageRole.ASSISTANT
                self._say(session, ChatMessage(role=role, content=sentence(self.turn)))
            self.run_events += session.version - before
            self.turn += 1

    def _next_run(self, session: Session) -> None:
        if self.run_id is not None:
            session.end_run(self.run_id, RunEndReason.NATURAL)
        self.run_id = RunId.new()
        session.start_run(self.run_id)
        session.claim_writer(self.run_id)
        self.run_events = 0
        self.composition.runs += 1

    def _say(self, session: Session, message: ChatMessage) -> None:
        assert self.run_id is not None  # noqa: S101 - set by _next_run
        session.append_message(self.run_id, message)
        self.composition.messages += 1

    def _tool_turn(self, session: Session) -> None:
        assert self.run_id is not None  # noqa: S101 - set by _next_run
        run_id, turn = self.run_id, self.turn
        shape = ("read", "write", "read", "denied", "read", "corrected")[self.tool_turns % 6]
        tool = "write_file" if shape == "write" else "read_file"
        call_id = CallId(f"call_{turn}")
        path = f"/work/project/src/module_{turn % 37}.py"
        request = ToolCallRequest(call_id=call_id, name=tool, arguments={"path": path})
        self._say(
            session,
            ChatMessage(
                role=MessageRole.ASSISTANT, content=sentence(turn, 60), tool_calls=(request,)
            ),
        )
        attempt_id = AttemptId.new()
        session.start_attempt(run_id, attempt_id, call_id, tool)
        operation = FileOperation.WRITE if shape == "write" else FileOperation.READ
        target = (FileActivity(path=path, operation=operation),)
        if shape == "read":
            session.evaluate_policy(
                run_id, attempt_id, PolicyDecision.ALLOW, rule="read-in-root", targets=target
            )
            receipt = ToolReceipt(outcome=OutcomeCategory.SUCCESS, file_activity=target)
            session.record_receipt(run_id, attempt_id, receipt)
            result = sentence(turn, 400)
        elif shape == "write":
            session.evaluate_policy(
                run_id,
                attempt_id,
                PolicyDecision.APPROVAL_REQUIRED,
                rule="write-asks",
                approval_mode=ApprovalMode.REQUEST,
                targets=target,
            )
            session.request_approval(run_id, attempt_id, f"write {path}", ApprovalMode.REQUEST)
            session.decide_approval(attempt_id, ApprovalVerdict.APPROVED, "operator")
            receipt = ToolReceipt(outcome=OutcomeCategory.SUCCESS, file_activity=target)
            session.record_receipt(run_id, attempt_id, receipt)
            result = "written"
        elif shape == "denied":
            session.evaluate_policy(
                run_id,
                attempt_id,
                PolicyDecision.DENY,
                rule="protected-path",
                detail=f"{path} is protected",
                denial=DenialCategory.PROTECTED_PATH,
                targets=target,
            )
            result = "denied: protected path"
        else:
            session.issue_correction(
                run_id, attempt_id, RemediationCode.USE_FILE_TOOL, "use read_file instead"
            )
            result = "corrected: use the file tool"
        self._say(session, ChatMessage(role=MessageRole.TOOL, content=result, call_id=call_id))
        self.composition.attempts[shape] = self.composition.attempts.get(shape, 0) + 1
        self.tool_turns += 1


def build_journal(path: Path, events: int) -> Composition:
    """Fill a journal with about `events` events from interleaved sessions; return its facts."""
    started = time.perf_counter()
    composition = Composition(sessions=max(1, events // EVENTS_PER_SESSION))
    journal = SqliteJournal(path, JournalSettings(durability=Durability.NORMAL))
    try:
        conversations = []
        for index in range(composition.sessions):
            session_id = SessionId.new()
            journal.open_session(
                SessionOpening(
                    session_id, f"cli:session-{index}", SessionKind.MAIN, Audience.PERSONAL
                )
            )
            conversations.append(Conversation(session_id, composition))
        written = composition.sessions
        while written < events:
            for conversation in conversations:
                budget = min(EVENTS_PER_SAVE, events - written)
                if budget <= 0:
                    break
                before = journal.stream_version(conversation.session_id.as_uuid())

                def play(session: Session, c: Conversation = conversation, b: int = budget) -> int:
                    c.play(session, b)
                    return session.version

                written += journal.update_session(conversation.session_id, play) - before
    finally:
        journal.close()
    composition.events = head_of(path)
    composition.build_seconds = time.perf_counter() - started
    return composition


def head_of(path: Path) -> int:
    """The last position of the journal's log."""
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT COALESCE(MAX(rowid), 0) FROM stored_events").fetchone()[0])


def fresh_copy(source: Path, target: Path) -> Path:
    """A consistent copy of the journal (no projection tables in it), cold in no cache of ours."""
    target.unlink(missing_ok=True)
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
    return target


# -- the measured paths -----------------------------------------------------------------------


def batches(
    path: Path,
    head: int,
    each: Callable[[list[tuple[object, ...]]], None],
    size: int = BATCH_SIZE,
) -> None:
    """Read the log in batches of `size` rows (the runner's) and hand each batch to `each`."""
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        position = 0
        while position < head:
            rows = db.execute(BATCH, (position, head, size)).fetchall()
            if not rows:
                break
            each(rows)
            position = rows[-1][0]


def bare_read(path: Path, head: int) -> float:
    """Seconds to fetch every row of the log, nothing decoded, in the faster batch size.

    The ceiling must not depend on the runner's own batch size, which a catch-up may choose
    for its own sake: a larger batch reads more slowly here. So the log is read in batches
    of CEILING_BATCH rows and of the runner's, and the faster of the two is the ceiling.
    """
    times = []
    for size in sorted({CEILING_BATCH, BATCH_SIZE}):
        started = time.perf_counter()
        batches(path, head, lambda _rows: None, size)
        times.append(time.perf_counter() - started)
    return min(times)


def json_only(path: Path, head: int) -> float:
    """Seconds to fetch every row and parse its JSON state with orjson, nothing validated."""

    def parse(rows: list[tuple[object, ...]]) -> None:
        for row in rows:
            orjson.loads(row[4])  # type: ignore[arg-type]  # the state is bytes

    started = time.perf_counter()
    batches(path, head, parse)
    return time.perf_counter() - started


def decode_only(path: Path, head: int) -> float:
    """Seconds to fetch every row and decode it with the journal's mapper."""
    mapper = CatalogMapper(transcoder=OrjsonTranscoder())

    def decode(rows: list[tuple[object, ...]]) -> None:
        for _log, originator, version, topic, state in rows:
            mapper.to_domain_event(
                StoredEvent(
                    originator_id=originator,  # type: ignore[arg-type]
                    originator_version=version,  # type: ignore[arg-type]
                    topic=topic,  # type: ignore[arg-type]
                    state=state,  # type: ignore[arg-type]
                )
            )

    started = time.perf_counter()
    batches(path, head, decode)
    return time.perf_counter() - started


def catch_up(path: Path, projections: Sequence[Projection]) -> tuple[float, int]:
    """Seconds for one runner to catch `projections` up from 0; and the events it applied."""
    runner = ProjectionRunner(path, projections)
    gc.collect()
    started = time.perf_counter()
    applied = runner.catch_up()
    return time.perf_counter() - started, applied


def timed(function: Callable[[], float]) -> float:
    """Run `function` after a full collection, the collector on (a catch-up pauses it itself)."""
    gc.collect()
    return function()


# -- the runs ---------------------------------------------------------------------------------


@dataclass
class Results:
    """Medians over the repeats, and the facts the footnotes cite."""

    events: int
    repeat: int
    composition: Composition
    seconds: dict[str, float]
    """Median seconds per measured path: bare, decode, all, and one per projection name."""
    database_mib: float
    elapsed: float
    load: tuple[float, float]


def measure(events: int, repeat: int, *, alone: bool) -> Results:
    """Build the journal once, then time every path `repeat` times on fresh copies."""
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    runs: dict[str, list[float]] = {}
    with workdir() as root:
        journal = root / "journal.db"
        progress.print(f"building a journal of {events:,} events")
        composition = build_journal(journal, events)
        head = composition.events
        database_mib = journal.stat().st_size / 2**20
        copy = root / "copy.db"
        for run in range(1, repeat + 1):
            progress.print(
                f"run {run}/{repeat}: bare read, JSON only, decode only, catch-up of all"
            )
            fresh_copy(journal, copy)
            runs.setdefault("bare", []).append(timed(lambda: bare_read(copy, head)))
            runs.setdefault("json", []).append(timed(lambda: json_only(copy, head)))
            runs.setdefault("decode", []).append(timed(lambda: decode_only(copy, head)))
            fresh_copy(journal, copy)
            seconds, applied = catch_up(copy, ALL_PROJECTIONS)
            if applied != head * len(ALL_PROJECTIONS):
                msg = f"catch-up applied {applied:,} events, expected {head:,} per projection"
                raise RuntimeError(msg)
            runs.setdefault("all", []).append(seconds)
            if alone:
                for projection in ALL_PROJECTIONS:
                    progress.print(f"run {run}/{repeat}: {projection.name} alone")
                    fresh_copy(journal, copy)
                    runs.setdefault(projection.name, []).append(catch_up(copy, [projection])[0])
    return Results(
        events=head,
        repeat=repeat,
        composition=composition,
        seconds={name: statistics.median(values) for name, values in runs.items()},
        database_mib=database_mib,
        elapsed=time.perf_counter() - started,
        load=(load_before, os.getloadavg()[0]),
    )


def profile(events: int) -> str:
    """A cProfile of one catch-up of every projection: the top functions by own and total time."""
    with workdir() as root:
        journal = root / "journal.db"
        build_journal(journal, events)
        profiler = cProfile.Profile()
        runner = ProjectionRunner(journal, ALL_PROJECTIONS)
        profiler.enable()
        runner.catch_up()
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(PROFILE_LINES)
    stats.sort_stats("cumulative").print_stats(PROFILE_LINES)
    return out.getvalue()


# -- the table --------------------------------------------------------------------------------


def rate(value: float) -> str:
    """An events-per-second figure."""
    return f"{value:,.0f} ev/s"


def render(results: Results) -> bool:
    """Print the table, the aim's line and the footnotes; whether the aim is met."""
    n, seconds = results.events, results.seconds
    bare, decode, caught = n / seconds["bare"], n / seconds["decode"], n / seconds["all"]
    title = (
        f"ledgerclaw projections benchmark: {n:,} events, {len(ALL_PROJECTIONS)} projections, "
        f"batches of {BATCH_SIZE:,}, median of {results.repeat} run(s), SQLite "
        f"{sqlite3.sqlite_version}, {results.elapsed:.0f} s"
    )
    table = Table(title=title, title_justify="left")
    table.add_column("path", overflow="fold")
    table.add_column("events/s", justify="right", no_wrap=True)
    table.add_column("time", justify="right", no_wrap=True)
    table.add_column("vs bare read", justify="right", no_wrap=True)
    table.add_column("vs decode only", justify="right", no_wrap=True)

    def row(label: str, value: float, time_s: float) -> None:
        table.add_row(
            label, rate(value), f"{time_s:,.2f} s", f"{value / bare:.2f}x", f"{value / decode:.2f}x"
        )

    row("bare read · sqlite3 fetch of the log, no decode [1]", bare, seconds["bare"])
    row(
        "JSON only · orjson.loads of each state, no validation [2]",
        n / seconds["json"],
        seconds["json"],
    )
    row("decode only · mapper.to_domain_event per row [2]", decode, seconds["decode"])
    row(
        f"catch-up · all {len(ALL_PROJECTIONS)} projections from 0 (ProjectionRunner) [3]",
        caught,
        seconds["all"],
    )
    alone = [p.name for p in ALL_PROJECTIONS if p.name in seconds]
    if alone:
        table.add_section()
        for name in alone:
            row(f"catch-up · {name} alone [4]", n / seconds[name], seconds[name])
    console = Console(width=max(Console().width, 110))
    console.print(table)
    ratio = caught / bare
    met = ratio >= AIM
    verdict = "met" if met else "NOT met"
    console.print(
        f"catch-up / bare read = {ratio:.3f} (aim >= {AIM}): {verdict}; "
        f"catch-up / decode only = {caught / decode:.3f}",
        highlight=False,
    )
    c = results.composition
    attempts = ", ".join(f"{count:,} {shape}" for shape, count in sorted(c.attempts.items()))
    notes = [
        (
            f"The runner's batch query on a copy of the journal ({results.database_mib:,.1f} MiB), "
            "rows fetched with sqlite3 and dropped."
        ),
        (
            "The same rows, each state parsed by orjson only (the floor of any Python code that "
            "reads the payloads), or decoded into a pydantic event by the journal's CatalogMapper."
        ),
        (
            "One ProjectionRunner.catch_up() on a fresh copy: tables and indexes created. All "
            "projections stand at 0, so they move as one group: each batch is read and decoded "
            "once, every event goes to each projection through handlers resolved once per event "
            "type, and the batch's statements and positions of all commit in one transaction "
            "(positions re-checked first). Rate = log events / wall time."
        ),
        (
            f"Journal: {c.events:,} events in {c.sessions:,} interleaved sessions, "
            f"{c.runs:,} runs, "
            f"{c.messages:,} messages, tool calls: {attempts}; built by update_session in "
            f"{c.build_seconds:.1f} s."
        ),
        (
            f"1-minute load average {results.load[0]:.2f} before and {results.load[1]:.2f} after, "
            f"on {os.cpu_count()} CPUs."
        ),
    ]
    if alone:
        total = sum(seconds[name] for name in alone)
        notes.insert(
            3,
            f"Each projection alone on its own fresh copy, reading and decoding the whole log by "
            f"itself: these times sum to {total:,.2f} s, {total / seconds['all']:.1f}x the "
            f"{seconds['all']:,.2f} s of all together, which share one read and decode per batch.",
        )
    for index, note in enumerate(notes, start=1):
        console.print(f"[{index}] {note}", highlight=False)
    return met


def report_figures(results: Results) -> None:
    """Hand catch-up against the bare read, and decoding alone, to `bench/all.py`."""
    n, seconds = results.events, results.seconds
    bare = n / seconds["bare"]
    report(
        f"projection catch-up · {n:,} events, all {len(ALL_PROJECTIONS)} projections",
        n / seconds["all"],
        "ev/s",
        baseline=bare,
        baseline_name="bare log read",
        aim=("ratio_at_least", AIM),
        script="projections.py",
    )
    report(
        f"projection decode only · {n:,} events",
        n / seconds["decode"],
        "ev/s",
        baseline=bare,
        baseline_name="bare log read",
        script="projections.py",
    )


def main() -> None:
    """Parse the options, measure, print the table (and a profile if asked)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--events", type=int, default=None, help="events in the journal (100,000; quick 10,000)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--quick", action="store_true", help="10,000 events and 1 run")
    parser.add_argument(
        "--no-alone", action="store_true", help="skip the one-projection-at-a-time rows"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also print a cProfile of one catch-up"
    )
    args = parser.parse_args()
    events = args.events or (10_000 if args.quick else 100_000)
    repeat = 1 if args.quick else args.repeat
    results = measure(events, repeat, alone=not args.no_alone)
    render(results)
    report_figures(results)
    if args.profile:
        progress.print("profiling one catch-up of every projection")
        Console(width=160).print(profile(events), highlight=False, markup=False)


if __name__ == "__main__":
    main()
