"""Benchmark of `ledgerclaw session list`, cold, beside `sqlite-utils query` on the same table.

Run from the repository root:

    .venv/bin/python bench/session_list.py [--sessions 400] [--events 50000] [--runs 15]
    .venv/bin/python bench/session_list.py --quick      # a smoke check of a few seconds
    .venv/bin/python bench/session_list.py --code /work/baseline   # another checkout's command

A home is built once with a journal of `--events` events in `--sessions` sessions, written
through `update_session` as the runtime writes them (user and assistant messages, and every
tenth turn a read with its whole attempt lifecycle), and its read models are caught up. Then
hyperfine times two fresh processes on it, alternately warmed up and run: `ledgerclaw
--home HOME session list` (the console script's module, `python -m cli`, from `--code`) and
`sqlite-utils query` selecting the same rows of the same catalog table. "Cold" means a new
interpreter per run with the read models already current, as a person typing the command
meets it; the file's pages may be in the page cache for both. Without hyperfine the runs are
timed here with `subprocess`, and the table says so.

The table gives both means, their ratio (ledgerclaw ÷ sqlite-utils) and the aim from the
issue (at most 1.5); the figure goes to `bench/all.py` through `figures.report`. Nothing
asserts a timing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# The script's directory, which Python puts first, holds bench/projections.py, which would
# shadow the `projections` package: the repository root goes first, the bench directory last.
sys.path[:] = [
    str(REPO_ROOT),
    *(entry for entry in sys.path if Path(entry or ".").resolve() != BENCH_DIR),
    str(BENCH_DIR),
]

from figures import report  # noqa: E402 - the bench directory is on sys.path from here on
from paths import workdir  # noqa: E402
from session_data import Conversation  # noqa: E402

from adapters.journal.journal import SqliteJournal  # noqa: E402
from adapters.projections.runner import ProjectionRunner  # noqa: E402
from adapters.settings.journal import Durability, JournalSettings  # noqa: E402
from domain.ids import RunId, SessionId  # noqa: E402
from domain.session.aggregate import Session  # noqa: E402
from domain.session.opening import SessionOpening  # noqa: E402
from domain.values.audience import Audience, SessionKind  # noqa: E402
from projections.registry import ALL_PROJECTIONS  # noqa: E402

AIM = 1.5
"""`session list` may take at most this many times as long as `sqlite-utils query`."""
HYPERFINE = "/usr/bin/hyperfine"
LISTED = 50
"""The rows `session list` shows by default (its --limit), and so the rows both select."""
QUERY = (
    "select * from (select * from sessions order by created_at desc, session_id desc"
    f" limit {LISTED}) order by created_at, session_id"
)
"""The rows `session list` prints, in its order, from the session catalog."""
EVENTS_PER_SAVE = 250

progress = Console(stderr=True)


@dataclass(frozen=True)
class Timing:
    """One command's mean and spread over the runs, and its mean CPU time, in milliseconds."""

    mean: float
    stddev: float
    runs: int
    cpu: float
    """User and system time of the process: less moved by other busy processes than `mean`."""


@dataclass(frozen=True)
class Results:
    """What was built and what was measured."""

    events: int
    sessions: int
    build_seconds: float
    ledgerclaw: Timing
    sqlite_utils: Timing
    timer: str
    code: Path
    load_before: float
    load_after: float


def build_home(home: Path, sessions: int, events: int) -> int:
    """A home whose journal holds about `events` events in `sessions` sessions; its head."""
    home.mkdir(parents=True)
    journal = SqliteJournal(home / "ledgerclaw.db", JournalSettings(durability=Durability.NORMAL))
    per_session = max(events // sessions, 4)
    try:
        for index in range(sessions):
            session_id, run_id = SessionId.new(), RunId.new()
            journal.open_session(
                SessionOpening(
                    session_id, f"cli:session-{index}", SessionKind.MAIN, Audience.PERSONAL
                )
            )

            def start(session: Session, run: RunId = run_id) -> None:
                session.start_run(run)
                session.claim_writer(run)

            journal.update_session(session_id, start)
            play = partial(Conversation(run_id).play, target=per_session, batch=EVENTS_PER_SAVE)
            version = 3
            while version < per_session:
                version = journal.update_session(session_id, play)
    finally:
        journal.close()
    ProjectionRunner(home / "ledgerclaw.db", ALL_PROJECTIONS).catch_up()
    with closing(sqlite3.connect(home / "ledgerclaw.db")) as db:
        return int(db.execute("SELECT COALESCE(MAX(rowid), 0) FROM stored_events").fetchone()[0])


def ledgerclaw_command(home: Path) -> list[str]:
    """`ledgerclaw --home HOME session list`, through the console script's module."""
    return [sys.executable, "-m", "cli", "--home", str(home), "session", "list"]


def sqlite_utils_command(home: Path) -> list[str]:
    """`sqlite-utils query` of the rows `session list` shows, from the same file."""
    return [
        str(Path(sys.executable).with_name("sqlite-utils")),
        "query",
        str(home / "ledgerclaw.db"),
        QUERY,
    ]


def environment(code: Path) -> dict[str, str]:
    """The measured processes' environment: `code` first on the path, no home of the caller."""
    env = {k: v for k, v in os.environ.items() if k not in ("LEDGERCLAW_HOME", "PYTHONPATH")}
    return env | {"PYTHONPATH": str(code)}


def check_current(home: Path, code: Path) -> None:
    """Run the command once (it catches up what its code finds behind) and check its rows."""
    listed = subprocess.run(  # noqa: S603 - fixed commands of this venv
        [*ledgerclaw_command(home), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=code,
        env=environment(code),
        timeout=600,
    )
    queried = subprocess.run(  # noqa: S603 - fixed commands of this venv
        sqlite_utils_command(home), capture_output=True, text=True, check=True, timeout=60
    )
    shown = [row["session_id"] for row in json.loads(listed.stdout)]
    selected = [row["session_id"] for row in json.loads(queried.stdout)]
    if shown != selected:
        msg = "session list and the sqlite-utils query do not show the same sessions"
        raise RuntimeError(msg)


def shell_words(command: Sequence[str]) -> str:
    """`command` as one line hyperfine splits back into the same words."""
    return " ".join("'" + word.replace("'", "'\\''") + "'" for word in command)


def with_hyperfine(
    commands: Sequence[Sequence[str]], code: Path, warmup: int, runs: int, export: Path
) -> list[Timing]:
    """Each command's timing, measured by hyperfine without a shell in between."""
    subprocess.run(  # noqa: S603 - fixed commands of this venv
        [
            HYPERFINE,
            "-N",
            "--warmup",
            str(warmup),
            "--runs",
            str(runs),
            "--export-json",
            str(export),
            "--style",
            "none",
            *(shell_words(command) for command in commands),
        ],
        check=True,
        cwd=code,
        env=environment(code),
        stdout=subprocess.DEVNULL,
        timeout=1800,
    )
    found = json.loads(export.read_text())["results"]
    return [
        Timing(
            result["mean"] * 1000,
            (result["stddev"] or 0.0) * 1000,
            len(result["times"]),
            (result["user"] + result["system"]) * 1000,
        )
        for result in found
    ]


def with_subprocess(
    commands: Sequence[Sequence[str]], code: Path, warmup: int, runs: int
) -> list[Timing]:
    """Each command's timing, measured here: the commands alternate, run after run."""
    times: list[list[float]] = [[] for _ in commands]
    cpu = [0.0 for _ in commands]
    for run in range(warmup + runs):
        for index, command in enumerate(commands):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(  # noqa: S603 - fixed commands of this venv
                command,
                check=True,
                cwd=code,
                env=environment(code),
                stdout=subprocess.DEVNULL,
                timeout=600,
            )
            if run >= warmup:
                times[index].append((time.perf_counter() - started) * 1000)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                used = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                cpu[index] += used * 1000 / runs
    return [
        Timing(statistics.mean(each), statistics.stdev(each) if len(each) > 1 else 0.0, runs, used)
        for each, used in zip(times, cpu, strict=True)
    ]


def measure(sessions: int, events: int, warmup: int, runs: int, code: Path) -> Results:
    """Build the home, check both commands show the same rows, and time them."""
    load_before = os.getloadavg()[0]
    with workdir() as root:
        home = root / "home"
        progress.print(f"building a home of about {events:,} events in {sessions} sessions")
        started = time.perf_counter()
        head = build_home(home, sessions, events)
        build_seconds = time.perf_counter() - started
        check_current(home, code)
        commands = [ledgerclaw_command(home), sqlite_utils_command(home)]
        if Path(HYPERFINE).exists():
            timer = "hyperfine"
            progress.print(f"hyperfine: {warmup} warm-up and {runs} runs of each command")
            ours, theirs = with_hyperfine(commands, code, warmup, runs, root / "hyperfine.json")
        else:
            timer = "subprocess (hyperfine is not installed)"
            progress.print(f"no hyperfine: timing {runs} runs of each command with subprocess")
            ours, theirs = with_subprocess(commands, code, warmup, runs)
    return Results(
        events=head,
        sessions=sessions,
        build_seconds=build_seconds,
        ledgerclaw=ours,
        sqlite_utils=theirs,
        timer=timer,
        code=code,
        load_before=load_before,
        load_after=os.getloadavg()[0],
    )


def render(results: Results) -> None:
    """The table: both means, the ratio, the aim and the verdict; then how it was measured."""
    ratio = results.ledgerclaw.mean / results.sqlite_utils.mean
    table = Table(title="ledgerclaw session list, cold, against sqlite-utils query")
    for column in ("measurement", "ledgerclaw", "sqlite-utils", "ratio", "aim", "verdict"):
        table.add_column(column, justify="left" if column == "measurement" else "right")
    met = ratio <= AIM
    table.add_row(
        f"session list · {results.events:,} events, {results.sessions} sessions [1]",
        f"{results.ledgerclaw.mean:,.1f} ms ± {results.ledgerclaw.stddev:,.1f}",
        f"{results.sqlite_utils.mean:,.1f} ms ± {results.sqlite_utils.stddev:,.1f}",
        f"{ratio:.2f}x",
        f"≤ {AIM}x",
        "[green]met[/green]" if met else "[red]missed[/red]",
    )
    console = Console(width=120)
    console.print(table)
    cpu_ratio = results.ledgerclaw.cpu / results.sqlite_utils.cpu
    console.print(
        f"CPU (user + system) per run: ledgerclaw {results.ledgerclaw.cpu:,.1f} ms, sqlite-utils"
        f" {results.sqlite_utils.cpu:,.1f} ms, ratio {cpu_ratio:.2f}x (for information).",
        highlight=False,
        markup=False,
    )
    console.print(
        f"[1] Mean wall time of {results.ledgerclaw.runs} fresh processes each, timed by"
        f" {results.timer}; ledgerclaw is `python -m cli --home HOME session list` from"
        f" {results.code}, sqlite-utils selects the same {LISTED} rows of the sessions table"
        f" of the same file. The read models were current (built and caught up in"
        f" {results.build_seconds:.1f} s). Ratio = ledgerclaw ÷ sqlite-utils.",
        highlight=False,
        markup=False,
    )
    console.print(
        f"[2] 1-minute load average {results.load_before:.2f} before the runs and"
        f" {results.load_after:.2f} after, on {os.cpu_count()} CPUs.",
        highlight=False,
        markup=False,
    )


def main() -> None:
    """Parse the options, build, measure, print the table and hand the figure on."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=None, help="sessions (400; quick 40)")
    parser.add_argument("--events", type=int, default=None, help="events (50,000; quick 2,000)")
    parser.add_argument("--runs", type=int, default=None, help="timed runs of each (15; quick 5)")
    parser.add_argument("--warmup", type=int, default=None, help="warm-up runs (2; quick 1)")
    parser.add_argument(
        "--code",
        type=Path,
        default=REPO_ROOT,
        help="the checkout whose `ledgerclaw` is measured (default: this one)",
    )
    parser.add_argument("--quick", action="store_true", help="a small home and few runs")
    args = parser.parse_args()
    sessions = args.sessions or (40 if args.quick else 400)
    events = args.events or (2_000 if args.quick else 50_000)
    runs = args.runs or (5 if args.quick else 15)
    warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    results = measure(sessions, events, warmup, runs, args.code.resolve())
    render(results)
    report(
        f"`session list`, cold · {results.events:,} events",
        results.ledgerclaw.mean,
        "ms",
        baseline=results.sqlite_utils.mean,
        baseline_name="sqlite-utils query",
        aim=("ratio_at_most", AIM),
        script="session_list.py",
    )


if __name__ == "__main__":
    main()
