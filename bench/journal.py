"""Benchmark of ledgerclaw's SQLite journal, each figure beside a baseline from the same run.

Run from the repository root:

    .venv/bin/python bench/journal.py [--events 10000] [--single 1000] [--repeat 3]
    .venv/bin/python bench/journal.py --quick     # a smoke check of a few seconds

Every measurement runs --repeat times in fresh temporary directories and the median is
printed. Baselines use the same payloads in the same run:

* the raw sqlite3 commit ceiling (WAL, synchronous FULL, the library's `stored_events`
  schema, hand-written INSERT and COMMIT statements);
* eventsourcing's default mapper: a plain `Application` with the library's own `Aggregate`
  and `@event` methods, the stock JSON transcoder and `eventsourcing.sqlite`;
* for the timeline, a raw SELECT of the rows and the full decode of every row through
  ledgerclaw's mapper (the path that rebuilds aggregates).

The output is one table: measurement, ledgerclaw figure, baseline figure, ratio, target and
verdict, followed by footnotes; the main figures also go to `bench/all.py` through
`figures.report`. This module holds the command line, the medians and the
table; `paths.py` holds the measured paths, the raw sqlite3 baseline and the timing,
`stock.py` the default-mapper baseline, `session_data.py` the payloads and the long session.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from figures import report  # noqa: E402 - the bench directory is on sys.path from here on
from paths import (  # noqa: E402
    HEAD_APPENDS,
    INNER_SAMPLES,
    AppendFigures,
    ReadFigures,
    append_run,
    import_seconds,
    mcp_loaded_by_cli,
    read_run,
    workdir,
)
from session_data import BUILD_BATCH, LongSession, payloads  # noqa: E402

from adapters.journal.application import SNAPSHOT_INTERVAL  # noqa: E402

MAPPER_TARGET = 0.9
"""ledgerclaw's pydantic/orjson path must reach this share of the default mapper's rate."""
SNAPSHOT_REPLAY_TARGET_MS = 10.0
TIMELINE_TARGET = 300_000

progress = Console(stderr=True)


# -- the table --------------------------------------------------------------------------------


@dataclass
class Row:
    """One line of the table."""

    measurement: str
    ours: str = ""
    baseline: str = ""
    ratio: float | None = None
    target: str = "—"
    met: bool | None = None


def rate(value: float) -> str:
    """An events-per-second figure."""
    return f"{value:,.0f} ev/s"


def millis(seconds: float) -> str:
    """A duration in milliseconds."""
    return f"{seconds * 1000:,.1f} ms"


def verdict(met: bool | None) -> str:
    """The verdict cell."""
    if met is None:
        return "[dim]info[/dim]"
    return "[green]met[/green]" if met else "[red]NOT met[/red]"


def render(rows: Sequence[Row], notes: Sequence[str], title: str) -> None:
    """Print the table and its footnotes."""
    table = Table(title=title, title_justify="left", show_lines=False)
    table.add_column("measurement", overflow="fold")
    table.add_column("ledgerclaw", justify="right", no_wrap=True)
    table.add_column("baseline", justify="right", no_wrap=True)
    table.add_column("ratio", justify="right", no_wrap=True)
    table.add_column("target", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    for row in rows:
        if not row.measurement:
            table.add_section()
            continue
        ratio = "—" if row.ratio is None else f"{row.ratio:.2f}x"
        table.add_row(row.measurement, row.ours, row.baseline, ratio, row.target, verdict(row.met))
    console = Console(width=max(Console().width, 118))
    console.print(table)
    for index, note in enumerate(notes, start=1):
        console.print(f"[{index}] {note}", highlight=False)


def median(values: Sequence[float]) -> float:
    """The median of the runs."""
    return statistics.median(values)


@dataclass
class Results:
    """Medians over the runs, and the facts the footnotes cite."""

    single: int
    repeat: int
    appends: dict[int, dict[str, float]]
    """Events/s per events-per-save setting and path."""
    snapshot_share: dict[int, dict[str, float]]
    reads: dict[str, float]
    facts: LongSession
    bare_start: float
    mcp_import: float
    cli_import: float | None
    mcp_loaded: bool | None
    elapsed: float
    load: tuple[float, float]
    """The 1-minute load average before and after the runs."""


def measure(events: int, single: int, repeat: int) -> Results:
    """Run every measurement `repeat` times in fresh directories; keep the medians."""
    data = payloads(max(events, single))
    totals = {1: single, 10: events, 100: events}
    appends: dict[int, list[AppendFigures]] = {per_save: [] for per_save in totals}
    reads: list[ReadFigures] = []
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    for run in range(1, repeat + 1):
        for per_save, total in totals.items():
            progress.print(f"run {run}/{repeat}: {total:,} appends, {per_save} per save")
            with workdir() as root:
                appends[per_save].append(append_run(root, data, total, per_save))
        progress.print(f"run {run}/{repeat}: {events:,}-event session, replay and timeline")
        with workdir() as root:
            reads.append(read_run(root, events, data))
    progress.print("imports")
    bare_start = import_seconds("pass", repeat)
    has_cli = importlib.util.find_spec("cli.app") is not None
    return Results(
        single=single,
        repeat=repeat,
        appends={
            per_save: {name: median([f.rates[name] for f in runs]) for name in runs[0].rates}
            for per_save, runs in appends.items()
        },
        snapshot_share={
            per_save: {
                name: median([f.snapshot_share[name] for f in runs])
                for name in runs[0].snapshot_share
            }
            for per_save, runs in appends.items()
        },
        reads={
            name: median([getattr(r, name) for r in reads])
            for name in ReadFigures.__dataclass_fields__
            if name != "facts"
        },
        facts=reads[-1].facts,
        bare_start=bare_start,
        mcp_import=import_seconds("import mcp", repeat) - bare_start,
        cli_import=import_seconds("import cli.app", repeat) - bare_start if has_cli else None,
        mcp_loaded=mcp_loaded_by_cli() if has_cli else None,
        elapsed=time.perf_counter() - started,
        load=(load_before, os.getloadavg()[0]),
    )


def append_rows(results: Results) -> list[Row]:
    """Rows for measurements 1 and 2."""
    one = results.appends[1]
    head_update = HEAD_APPENDS / results.reads["head_update"]
    head_stock = HEAD_APPENDS / results.reads["head_stock"]
    target = f">= {MAPPER_TARGET:.2f}x"
    rows = [
        Row(
            "1 ev/save · update_session (kept copy, no re-read) vs raw sqlite3 [1]",
            rate(one["update"]),
            rate(one["raw"]),
            one["update"] / one["raw"],
        ),
        Row(
            "1 ev/save · update_session vs eventsourcing default mapper [1]",
            rate(one["update"]),
            rate(one["stock"]),
            one["update"] / one["stock"],
        ),
        Row(
            f"1 ev/save at v{results.facts.events:,} · update_session vs default mapper [1]",
            rate(head_update),
            rate(head_stock),
            head_update / head_stock,
        ),
        Row(""),
    ]
    for per_save, paths in results.appends.items():
        save, raw, stock = paths["save"], paths["raw"], paths["stock"]
        rows += [
            Row(
                f"{per_save} ev/save · journal.save, aggregate kept, vs raw sqlite3",
                rate(save),
                rate(raw),
                save / raw,
            ),
            Row(
                f"{per_save} ev/save · journal.save, aggregate kept, vs default mapper [2]",
                rate(save),
                rate(stock),
                save / stock,
                target,
                save / stock >= MAPPER_TARGET,
            ),
            Row(""),
        ]
    return rows


def read_rows(results: Results) -> list[Row]:
    """Rows for measurements 3, 4 and 5."""
    reads, facts = results.reads, results.facts
    n = facts.events
    snapshot, full, stock = reads["replay_snapshot"], reads["replay_full"], reads["stock_replay"]
    timeline, raw, decode = reads["timeline"], reads["raw_select"], reads["mapper_decode"]
    cli, loaded = results.cli_import, results.mcp_loaded
    return [
        Row(
            f"replay {n:,} ev · session() from snapshot @v{facts.snapshot_version:,} "
            "vs default mapper, no snapshot [3]",
            millis(snapshot),
            millis(stock),
            stock / snapshot,
            f"< {SNAPSHOT_REPLAY_TARGET_MS:.0f} ms",
            snapshot * 1000 < SNAPSHOT_REPLAY_TARGET_MS,
        ),
        Row(
            f"replay {n:,} ev · session() without snapshots vs default mapper, no snapshot [3]",
            millis(full),
            millis(stock),
            stock / full,
        ),
        Row(""),
        Row(
            f"timeline {n:,} ev · JournalReader.timeline vs raw sqlite3 SELECT [4]",
            rate(n / timeline),
            rate(n / raw),
            raw / timeline,
            f">= {TIMELINE_TARGET:,} ev/s",
            n / timeline >= TIMELINE_TARGET,
        ),
        Row(
            f"timeline {n:,} ev · JournalReader.timeline vs mapper.to_domain_event [4]",
            rate(n / timeline),
            rate(n / decode),
            decode / timeline,
        ),
        Row(""),
        Row(
            "import cli.app vs import mcp, net of interpreter start [5]",
            "n/a" if cli is None else millis(cli),
            millis(results.mcp_import),
            None if cli is None else results.mcp_import / cli,
        ),
        Row(
            "mcp in sys.modules after import cli.app",
            "n/a" if loaded is None else ("yes" if loaded else "no"),
            "—",
            None,
            "no",
            None if loaded is None else not loaded,
        ),
    ]


def footnotes(results: Results) -> list[str]:
    """The footnotes under the table."""
    facts, share, rates = results.facts, results.snapshot_share, results.appends
    without = {
        per_save: rates[per_save]["save"] / (1 - share[per_save]["save"]) for per_save in rates
    }
    snapshot_how = (
        "stored by journal.save inside the batched commands"
        if facts.snapshot_automatic
        else "stored explicitly with journal._snapshot (no save crossed the head's interval)"
    )
    return [
        (
            "update_session keeps the last saved Session of each stream in memory and runs the "
            "next command on that copy as it is (a conflicting save or a refusal reloads it), "
            "then saves through journal.save, snapshots included. "
            f"The first two rows cover the first {results.single:,} events of a fresh session, "
            "interleaved with the other one-per-save paths (snapshots took "
            f"{share[1]['update']:.1%} of its time); the third times {HEAD_APPENDS} commands at "
            f"the head of the long session of measurement 3, whose kept copy is current, "
            "against the default mapper appending to its twin kept in memory."
        ),
        (
            f"The {MAPPER_TARGET:.2f}x target applies to these like-for-like rows: the ledgerclaw "
            "Session is kept in memory between saves and stored with journal.save, as the "
            "baseline keeps its StockSession and calls app.save. journal.save also stores one "
            "snapshot, taken from the Session in memory, per save that crosses a multiple of "
            f"{SNAPSHOT_INTERVAL} (here one per {SNAPSHOT_INTERVAL} events at every setting); "
            "the baseline never snapshots. Snapshots (journal._snapshot) took "
            + " / ".join(f"{share[k]['save']:.1%}" for k in rates)
            + " of ledgerclaw's time at "
            + " / ".join(str(k) for k in rates)
            + " ev/save; without them the rates would be "
            + " / ".join(
                f"{without[k]:,.0f} ev/s ({without[k] / rates[k]['stock']:.2f}x)" for k in rates
            )
            + "."
        ),
        (
            f"Session of {facts.events:,} events: {facts.messages:,} messages and "
            f"{facts.attempts:,} attempt lifecycles (start, allow, receipt with file activity, "
            "context change), built by update_session commands of "
            f"{BUILD_BATCH} events in {facts.build_seconds:.1f} s. The head snapshot at "
            f"v{facts.snapshot_version:,} was {snapshot_how}. session() rebuilds the state "
            "(message count, runs, attempts, working context), not the transcript, which "
            "transcript() reads back; the baseline's StockSession likewise counts messages. "
            "'Without snapshots' replays a copy of the file whose stored_snapshots table was "
            f"emptied. Median of {INNER_SAMPLES} warm calls per run. Ratio = baseline time / "
            "ledgerclaw time."
        ),
        (
            "Ratio = ledgerclaw's rate / baseline rate. The raw SELECT (same query, no decode) "
            "is the ceiling; the mapper row decodes every row into a pydantic event, as a "
            "replay without snapshot does, which the lean reader skips."
        ),
        (
            "Wall time of a fresh interpreter minus a bare start "
            f"({millis(results.bare_start)}); median of {max(results.repeat, 3)}. Ratio = "
            "import mcp time / import cli.app time."
            + ("" if results.cli_import is not None else " cli/app.py does not exist yet.")
        ),
        (
            f"1-minute load average {results.load[0]:.2f} before the runs and "
            f"{results.load[1]:.2f} after, on {os.cpu_count()} CPUs; other busy processes "
            "skew absolute figures (ratios less, as the paths alternate)."
        ),
    ]


def report_figures(results: Results) -> None:
    """Hand the timeline (with its aim) and the main append, replay, import figures to all.py."""
    reads, n, script = results.reads, results.facts.events, "journal.py"
    report(
        f"timeline decode · {n:,}-event session",
        n / reads["timeline"],
        "ev/s",
        baseline=n / reads["raw_select"],
        baseline_name="raw sqlite3 SELECT",
        aim=("value_at_least", TIMELINE_TARGET),
        script=script,
    )
    for per_save, paths in results.appends.items():
        report(
            f"journal.save · {per_save} ev/save",
            paths["save"],
            "ev/s",
            baseline=paths["stock"],
            baseline_name="eventsourcing default mapper",
            script=script,
        )
    report(
        f"replay from snapshot · {n:,}-event session",
        reads["replay_snapshot"] * 1000,
        "ms",
        baseline=reads["stock_replay"] * 1000,
        baseline_name="default mapper, no snapshot",
        script=script,
    )
    if results.cli_import is not None:
        report(
            "import cli.app, net of interpreter start",
            results.cli_import * 1000,
            "ms",
            baseline=results.mcp_import * 1000,
            baseline_name="import mcp",
            script=script,
        )


def main() -> None:
    """Parse the options, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--events", type=int, default=10_000, help="long session and batched appends"
    )
    parser.add_argument("--single", type=int, default=1_000, help="appends at one event per save")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument(
        "--quick", action="store_true", help="400 events, 50 single appends, 1 run: a smoke check"
    )
    args = parser.parse_args()
    if args.quick:
        args.events, args.single, args.repeat = 400, 50, 1
    results = measure(args.events, args.single, args.repeat)
    title = (
        f"ledgerclaw journal benchmark: median of {results.repeat} runs, SQLite "
        f"{sqlite3.sqlite_version}, WAL, synchronous FULL, {results.elapsed:.0f} s"
    )
    render(append_rows(results) + read_rows(results), footnotes(results), title)
    report_figures(results)


if __name__ == "__main__":
    main()
