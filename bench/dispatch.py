"""Benchmark of the governed tool pipeline: durable `read_file` calls beside their ceilings.

Run from the repository root: `.venv/bin/python bench/dispatch.py [--calls N] [--quick]`.

For each durability (`full`, `normal`) every repeat sets up four cases in a fresh temporary
directory and runs them in turns, BLOCKS blocks in a rotating order, so that each case meets
the same disk conditions (fsync latency drifts a lot on a shared disk):

* pipeline, 1 session: `Dispatcher.call` of `read_file` on a 10-line file in the session's
  workspace, one call after another, on a SQLite journal with that durability;
* pipeline, 16 sessions: as many calls over 16 sessions of another journal, one anyio task
  per session calling in sequence; the writer's group commit may put several sessions in
  one transaction, and its average batch size is printed;
* pipeline with effects, 1 session: `Dispatcher.call` of `write_file`, replacing a 10-line
  file in the session's workspace, one call after another, on a journal of its own;
* direct read: the same file opened, read and closed, with no pipeline;
* direct write: the same text written with the tool's `atomic_replace` (a temporary file,
  flushed, renamed over the target, the directory flushed), with no pipeline;
* bare sqlite3 ceilings: two single-row transactions per call (BEGIN, INSERT of a 300-byte
  row into the library's `stored_events` schema, COMMIT) on a WAL connection with the same
  `synchronous`: a call with effects needs its attempt durable before it runs and its
  receipt durable after, so two commits per call is the floor of any durable pipeline for
  it; and one such transaction per call, the floor for a call with no effect outside the
  session, whose attempt, decision and receipt can be committed together after it ran;
* LangGraph's SqliteSaver sync step: one synchronous `invoke` of a one-node graph reading
  the same file, checkpointed on a WAL file with the same `synchronous`, always on the same
  thread id (`langgraph_step.py`).

Each figure is the median over the repeats; tables go to stdout, and the figures that
`bench/all.py` tabulates go through `figures.report`. Nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack, closing
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import cast

import anyio
from rich.console import Console
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from figures import report  # noqa: E402 - the bench directory is on sys.path from here on
from paths import DDL, INSERT, workdir  # noqa: E402

from adapters.home import Home, ensure_home  # noqa: E402
from adapters.journal.journal import SqliteJournal  # noqa: E402
from adapters.journal.writer import SessionWriter  # noqa: E402
from adapters.pipeline.context import RunScope  # noqa: E402
from adapters.pipeline.dispatcher import Dispatcher  # noqa: E402
from adapters.runtime.runs import begin_run  # noqa: E402
from adapters.settings.config_file import Config  # noqa: E402
from adapters.settings.journal import Durability, JournalSettings  # noqa: E402
from adapters.tools.files.atomic import atomic_replace  # noqa: E402
from adapters.wiring.tools import dispatcher as build_dispatcher  # noqa: E402
from adapters.wiring.tools import first_party_tools, pipeline_policy  # noqa: E402
from domain.ids import CallId  # noqa: E402
from domain.values.conversation import ToolCallRequest  # noqa: E402
from domain.values.receipts import OutcomeCategory  # noqa: E402

SESSIONS = 16
BLOCKS = 10
"""The cases take turns in this many blocks of calls."""
WARMUP = 20
"""Untimed calls per session before the timed ones (imports, caches, kept copies)."""
FILE_NAME = "notes.txt"
READ = {"path": FILE_NAME}
WRITE = {"path": "written.txt", "content": ""}
"""The arguments of the call with effects; its content is set to the file's text below."""
CALL_NUMBERS = itertools.count()  # call ids are unique in the whole run, as a model's are
FILE_TEXT = "".join(f"line {n}: a small text file that read_file numbers\n" for n in range(10))
WRITE["content"] = FILE_TEXT
WRITTEN = FILE_TEXT.encode()
BLOB = bytes(range(256)) + bytes(44)
"""The 300-byte state of each ceiling row."""
READ_TARGET = 0.35
"""A read-only call, 1 session at `full`, must reach this share of the one-commit ceiling."""
GRAPH_TARGET = 2.0
"""... and this multiple of LangGraph's SqliteSaver sync step."""
EFFECT_TARGET = 0.35
"""A call with effects, 1 session at `full`, must reach this share of the two-commit ceiling."""
MANY_TARGET = 0.8
"""16 sessions at `full` must reach this share of the two-commit ceiling."""
SCALING_TARGET = 1.5
"""16 sessions must reach this multiple of the one-session rate."""
LABELS = {
    "one": "pipeline · read_file, 1 session",
    "many": f"pipeline · read_file, {SESSIONS} sessions",
    "effect": "pipeline · write_file, 1 session",
    "direct": "direct read (open/read/close)",
    "written": "direct write (atomic_replace)",
    "ceiling": "bare sqlite3 · 2 commits/call",
    "ceiling1": "bare sqlite3 · 1 commit/call",
    "graph": "LangGraph · SqliteSaver sync step",
}
VERDICT = {True: "[green]met[/green]", False: "[red]NOT met[/red]"}

progress = Console(stderr=True)


@dataclass
class Figures:
    """One case in one run: its timed seconds, every call's latency, the average batch size."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    batch: float = 0.0
    """Sessions per journal transaction in the timed part; 0 for a case without a journal."""

    @property
    def rate(self) -> float:
        """Calls per second."""
        return len(self.latencies) / self.seconds

    def percentile(self, share: int) -> float:
        """The latency (seconds) under which `share` percent of the calls finished."""
        return statistics.quantiles(self.latencies, n=100, method="inclusive")[share - 1]


@dataclass
class Summary:
    """Medians over the repeats of one case."""

    rate: float
    p50: float
    p99: float
    batch: float


Block = Callable[[int, Figures], Awaitable[None]]
"""Runs one block of `calls` calls of a case, adding their latencies to the figures."""


# -- the cases --------------------------------------------------------------------------------


def open_pipeline(
    stack: ExitStack, root: Path, durability: Durability, sessions: int
) -> tuple[Dispatcher, list[RunScope]]:
    """A fresh home, its journal and dispatcher, and one run per session with the file."""
    home = ensure_home(Home(root))
    config = Config(journal=JournalSettings(durability=durability))
    journal = SqliteJournal(home.database, config.journal)
    stack.callback(journal.close)
    tools, policy = first_party_tools(config, home), pipeline_policy(home, config)
    dispatcher = build_dispatcher(journal, tools, policy, None)
    runs = [begin_run(journal, home.root) for _ in range(sessions)]
    for run in runs:
        (run.envelope.workspace / FILE_NAME).write_text(FILE_TEXT)
    return dispatcher, runs


async def drive(  # noqa: PLR0913, PLR0917 - start_soon passes them by position; one task's calls: where, how many, which tool, with what
    dispatcher: Dispatcher,
    run: RunScope,
    calls: int,
    latencies: list[float],
    tool: str = "read_file",
    arguments: dict[str, str] = READ,
) -> None:
    """`calls` sequential calls of `tool` on `run`, each call's latency appended to `latencies`."""
    for _ in range(calls):
        number = next(CALL_NUMBERS)
        call = ToolCallRequest(call_id=CallId(f"call_{number}"), name=tool, arguments=arguments)
        started = time.perf_counter()
        result = await dispatcher.call(run, call)
        latencies.append(time.perf_counter() - started)
        if result.outcome is not OutcomeCategory.SUCCESS:
            msg = f"{tool} did not succeed, so there is nothing to measure: {result.text}"
            raise RuntimeError(msg)


def pipeline_case(
    dispatcher: Dispatcher,
    runs: list[RunScope],
    tool: str = "read_file",
    arguments: dict[str, str] = READ,
) -> Block:
    """Blocks of calls spread over the runs' sessions, one concurrent task per session."""

    async def block(calls: int, figures: Figures) -> None:
        share = calls // len(runs)
        async with anyio.create_task_group() as tasks:
            for run in runs:
                tasks.start_soon(drive, dispatcher, run, share, figures.latencies, tool, arguments)

    return block


def sync_case(action: Callable[[], object]) -> Block:
    """Blocks of calls of `action`, one after another, on the event loop's thread."""

    async def block(calls: int, figures: Figures) -> None:
        for _ in range(calls):
            began = time.perf_counter()
            action()
            figures.latencies.append(time.perf_counter() - began)

    return block


def ceiling_action(
    stack: ExitStack, path: Path, durability: Durability, commits: int = 2
) -> Callable[[], None]:
    """`commits` single-row transactions on a bare WAL connection with the same `synchronous`."""
    conn = stack.enter_context(closing(sqlite3.connect(path, isolation_level=None)))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={durability.value.upper()}")
    conn.execute(DDL)
    versions = itertools.count(1)

    def commit_each() -> None:
        for _ in range(commits):
            conn.execute("BEGIN")
            conn.execute(INSERT, ("stream", next(versions), "bench.row", BLOB))
            conn.execute("COMMIT")

    return commit_each


async def race(root: Path, durability: Durability, calls: int) -> dict[str, Figures]:
    """Set up the cases under `root`, warm them up, run them in turns; their figures."""
    with ExitStack() as stack:
        (root / FILE_NAME).write_text(FILE_TEXT)
        pipelines = {
            "one": open_pipeline(stack, root / "one", durability, 1),
            "many": open_pipeline(stack, root / "many", durability, SESSIONS),
            "effect": open_pipeline(stack, root / "effect", durability, 1),
        }
        # LangGraph loads only here: mcp_calls.py and upstream.py import this module's cases.
        from langgraph_step import graph_step  # noqa: PLC0415

        graph = graph_step(
            stack, root / "checkpoints.db", root / FILE_NAME, durability.value.upper()
        )
        cases = {
            "ceiling": sync_case(ceiling_action(stack, root / "ceiling.db", durability)),
            "direct": sync_case((root / FILE_NAME).read_bytes),
            "written": sync_case(partial(atomic_replace, str(root / "written.txt"), WRITTEN)),
            "one": pipeline_case(*pipelines["one"]),
            "many": pipeline_case(*pipelines["many"]),
            "ceiling1": sync_case(ceiling_action(stack, root / "ceiling1.db", durability, 1)),
            "graph": sync_case(graph),
            "effect": pipeline_case(*pipelines["effect"], "write_file", WRITE),
        }
        for name, block in cases.items():
            await block(WARMUP * (SESSIONS if name == "many" else 1), Figures())
        writers = {
            name: cast("SessionWriter", dispatcher.writer)
            for name, (dispatcher, _) in pipelines.items()
        }
        for writer in writers.values():
            writer.batches = writer.requests = 0  # count the timed calls only
        figures = {name: Figures() for name in cases}
        names = list(cases)
        gc.collect()
        for turn in range(BLOCKS):
            for name in names[turn % len(names) :] + names[: turn % len(names)]:
                started = time.perf_counter()
                await cases[name](calls // BLOCKS, figures[name])
                figures[name].seconds += time.perf_counter() - started
        for name, writer in writers.items():
            figures[name].batch = writer.requests / writer.batches
    return figures


# -- runs, medians, the tables ----------------------------------------------------------------


def measure(durability: Durability, calls: int, repeat: int) -> dict[str, Summary]:
    """The race `repeat` times in fresh directories; the medians of each case."""
    runs: dict[str, list[Figures]] = {name: [] for name in LABELS}
    for index in range(repeat):
        progress.print(f"{durability}: run {index + 1}/{repeat}")
        with workdir() as root:
            for name, figures in anyio.run(race, root, durability, calls).items():
                runs[name].append(figures)
    return {
        case: Summary(
            rate=statistics.median(f.rate for f in figures),
            p50=statistics.median(f.percentile(50) for f in figures),
            p99=statistics.median(f.percentile(99) for f in figures),
            batch=statistics.median(f.batch for f in figures),
        )
        for case, figures in runs.items()
    }


ROWS = ("one", "many", "effect", "direct", "written", "ceiling", "ceiling1", "graph")
"""The table's rows, in order."""
AIMS = (
    # (figure, case, baseline case, baseline's name, target share)
    ("read_file · 1 session", "one", "ceiling1", "bare sqlite3 · 1 commit/call", READ_TARGET),
    ("read_file · 1 session", "one", "graph", "LangGraph SqliteSaver sync step", GRAPH_TARGET),
    ("write_file · 1 session", "effect", "ceiling", "bare sqlite3 · 2 commits/call", EFFECT_TARGET),
    (
        f"read_file · {SESSIONS} sessions",
        "many",
        "ceiling",
        "bare sqlite3 · 2 commits/call",
        MANY_TARGET,
    ),
)
"""The aims of the issue, all set at `full`: a case's rate as a share of a baseline's."""


def write_floor(results: dict[str, Summary]) -> float:
    """The rate of two bare commits and a direct write in sequence: a durable write's floor."""
    return 1 / (1 / results["ceiling"].rate + 1 / results["written"].rate)


def render(console: Console, durability: Durability, results: dict[str, Summary]) -> None:
    """One table for one durability, then a line of the aims' ratios (verdicts at `full`)."""
    ceiling, ceiling1, one = (results[n].rate for n in ("ceiling", "ceiling1", "one"))
    title = f"durability {durability} (synchronous={durability.value.upper()})"
    table = Table(title=title, title_justify="left")
    columns = (
        "case",
        "calls/s",
        "p50 ms",
        "p99 ms",
        "vs 2-commit ceiling",
        "vs 1-commit ceiling",
        "vs 1 session",
        "batch",
    )
    for name in columns:
        table.add_column(name, justify="left" if name == "case" else "right", no_wrap=True)
    for case in ROWS:
        row = results[case]
        table.add_row(
            LABELS[case],
            f"{row.rate:,.0f}",
            f"{row.p50 * 1000:.3f}",
            f"{row.p99 * 1000:.3f}",
            f"{row.rate / ceiling:.2f}x",
            f"{row.rate / ceiling1:.2f}x",
            f"{row.rate / one:.2f}x",
            f"{row.batch:.2f}" if row.batch else "—",
        )
    console.print(table)
    parts = []
    for figure, case, base, name, target in AIMS:
        share = results[case].rate / results[base].rate
        verdict = f": {VERDICT[share >= target]}" if durability is Durability.FULL else ""
        parts.append(f"{figure} / {name} = {share:.2f} (aim >= {target:g}){verdict}")
    floor = write_floor(results)
    parts.append(
        f"write_file · 1 session / (2 commits + a direct write: {floor:,.0f} calls/s) = "
        f"{results['effect'].rate / floor:.2f} (for information)"
    )
    scaling = results["many"].rate / one
    parts.append(
        f"{SESSIONS} sessions / 1 session = {scaling:.2f} (aim >= {SCALING_TARGET:.1f}): "
        f"{VERDICT[scaling >= SCALING_TARGET]}"
    )
    if durability is not Durability.FULL:
        parts.append("the issue's aims are set at full")
    console.print("\n".join(parts) + "\n", highlight=False)


def report_figures(durability: Durability, results: dict[str, Summary]) -> None:
    """Hand the aims' figures to `bench/all.py`: with their aims at `full`, without at `normal`."""
    for figure, case, base, name, target in AIMS:
        report(
            f"{figure} · {durability}",
            results[case].rate,
            "calls/s",
            baseline=results[base].rate,
            baseline_name=name,
            aim=("ratio_at_least", target) if durability is Durability.FULL else None,
            script="dispatch.py",
        )
    report(
        f"write_file · 1 session · {durability}",
        results["effect"].rate,
        "calls/s",
        baseline=write_floor(results),
        baseline_name="2 bare commits + a direct atomic_replace",
        script="dispatch.py",
    )


def main() -> None:
    """Parse the options, measure both durabilities, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=4000, help="timed calls per case")
    parser.add_argument("--repeat", type=int, default=3, help="runs per durability (median)")
    parser.add_argument("--quick", action="store_true", help="320 calls, 1 run: a smoke check")
    args = parser.parse_args()
    calls, repeat = (320, 1) if args.quick else (args.calls, args.repeat)
    calls = max(unit := SESSIONS * BLOCKS, calls - calls % unit)
    load_before, started = os.getloadavg()[0], time.perf_counter()
    results = {d: measure(d, calls, repeat) for d in (Durability.FULL, Durability.NORMAL)}
    console = Console(width=max(Console().width, 136))
    elapsed, version = time.perf_counter() - started, sqlite3.sqlite_version
    title = f"{calls:,} calls per case, median of {repeat} run(s), SQLite {version}"
    console.print(f"ledgerclaw dispatch benchmark: {title}, WAL, {elapsed:.0f} s\n")
    for durability, summary in results.items():
        render(console, durability, summary)
        report_figures(durability, summary)
    console.print(
        f"The cases take turns in {BLOCKS} blocks after {WARMUP} untimed calls per session; "
        "calls/s from the blocks' wall time, latency per call; batch = sessions per journal "
        f"transaction (SessionWriter requests / batches). 1-minute load average "
        f"{load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs.",
        highlight=False,
    )


if __name__ == "__main__":
    main()
