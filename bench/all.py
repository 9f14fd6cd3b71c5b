"""Every benchmark in one run, and one table of all their figures against baselines and aims.

Run from the repository root: `.venv/bin/python bench/all.py [--quick] [--json] [--only NAME]`.

Each benchmark script in this directory (a module with a main guard, the rule `.ci/run` uses)
runs as a subprocess, one after another so that none competes with another for the cores or
the disk, with `--quick` when given and with `LEDGERCLAW_BENCH_FIGURES` naming a fresh file,
to which the script's `figures.report` calls append one JSON line per figure. The table has
one row per figure: its value, its baseline measured in the same run, their ratio, the aim and
whether it is met. A script that fails, or that runs past its time limit, is a row of its own
with its exit status, and the tail of its stderr is printed under the table; a script the
issue's figures need that is missing, or that reported nothing, is a row too. The exit status
is 1 when a script failed, whatever the aims; `--json` prints the same facts as one document.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from figures import ENVIRONMENT, aim_met, ratio_of, read_figures
from rich.console import Console
from rich.markup import escape
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
GUARD = re.compile(r'^if __name__ == "__main__":', re.MULTILINE)
"""The line that makes a bench module a script, for `.ci/run` and for this runner."""
NEEDED = (
    "dispatch.py",
    "projections.py",
    "mcp_calls.py",
    "session_list.py",
    "journal.py",
    "agent.py",
)
"""The scripts whose figures the issue's table and aims name: a missing one is a row."""
QUICK_LIMIT = 300.0
FULL_LIMIT = 3600.0
"""Seconds a script may run, with and without --quick, before it is stopped as failed."""
FAILURES = frozenset({"failed", "timed out"})
"""The statuses that make the exit status 1; a missing script, or one without figures, does not."""
TAIL_LINES = 15
VERDICT = {True: "[green]yes[/green]", False: "[red]no[/red]", None: "—"}

progress = Console(stderr=True, highlight=False)


@dataclass
class Run:
    """One script's run: how it ended, how long it took, the figures it reported."""

    script: str
    status: str
    """`ok`, `failed`, `timed out`, `missing` (not in bench/) or `no figures`."""
    returncode: int | None = None
    seconds: float = 0.0
    stderr_tail: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)


def scripts(only: Sequence[str]) -> list[Path]:
    """The bench scripts with a main guard (this runner has none), or those named in `only`."""
    found = sorted(
        path
        for path in BENCH_DIR.glob("*.py")
        if path.name != Path(__file__).name and GUARD.search(path.read_text(encoding="utf-8"))
    )
    if not only:
        return found
    wanted = {name.removesuffix(".py") for name in only}
    unknown = wanted - {path.stem for path in found}
    if unknown:
        msg = f"no benchmark script named {', '.join(sorted(unknown))} in {BENCH_DIR}"
        raise SystemExit(msg)
    return [path for path in found if path.stem in wanted]


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop a script that ran too long, and the servers it started, by its process group."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sent)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            continue
        return


def run_script(path: Path, *, quick: bool, limit: float, outputs: Path | None) -> Run:
    """Run one script with its figures file; how it went, and what it reported."""
    command = [sys.executable, str(path), *(["--quick"] if quick else [])]
    progress.print(f"bench: {path.name}{' --quick' if quick else ''}")
    with tempfile.TemporaryDirectory(prefix="ledgerclaw-figures-") as scratch:
        figures_file = Path(scratch) / "figures.jsonl"
        environment = {**os.environ, ENVIRONMENT: str(figures_file)}
        started = time.perf_counter()
        # Its own process group, so that a script stopped for running too long takes the
        # daemons and servers it started with it.
        process = subprocess.Popen(  # noqa: S603 - this interpreter and a script of bench/
            command,
            cwd=REPO_ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            out, err = process.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            stop(process)
            out, err = process.communicate()
            status = "timed out"
        else:
            status = "ok" if process.returncode == 0 else "failed"
        seconds = time.perf_counter() - started
        figures = read_figures(figures_file)
    if outputs is not None:
        (outputs / f"{path.stem}.out").write_bytes(out)
        (outputs / f"{path.stem}.err").write_bytes(err)
    if status == "ok" and not figures:
        status = "no figures"
    tail = err.decode("utf-8", "replace").splitlines()[-TAIL_LINES:] if status in FAILURES else []
    progress.print(f"  {status}, {len(figures)} figure(s), {seconds:.1f} s")
    return Run(path.name, status, process.returncode, seconds, tail, figures)


def run_all(options: argparse.Namespace) -> list[Run]:
    """Every chosen script in turn, then a row for each needed script that is not there."""
    limit = options.limit or (QUICK_LIMIT if options.quick else FULL_LIMIT)
    if options.outputs is not None:
        options.outputs.mkdir(parents=True, exist_ok=True)
    chosen = scripts(options.only)
    runs = [
        run_script(path, quick=options.quick, limit=limit, outputs=options.outputs)
        for path in chosen
    ]
    if not options.only:
        present = {path.name for path in chosen}
        runs += [Run(name, "missing") for name in NEEDED if name not in present]
    return runs


# -- the table --------------------------------------------------------------------------------


def number(value: float) -> str:
    """A figure with as many digits as it needs."""
    size = abs(value)
    if size >= 100:
        return f"{value:,.0f}"
    if size >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}" if size >= 0.01 else f"{value:.2g}"


def ratio_text(ratio: float) -> str:
    """A ratio with three decimals below 10, so that one just under its aim reads as under."""
    return f"{ratio:.3f}x" if ratio < 10 else f"{ratio:.1f}x"


def aim_text(figure: dict[str, Any]) -> str:
    """The aim as the table shows it."""
    aim = figure.get("aim")
    if aim is None:
        return "—"
    kind, target = aim["kind"], float(aim["target"])
    return {
        "ratio_at_least": f"ratio ≥ {target:g}",
        "ratio_at_most": f"ratio ≤ {target:g}",
        "value_at_least": f"≥ {number(target)} {figure['unit']}",
        "value_at_most": f"≤ {number(target)} {figure['unit']}",
    }[kind]


def baseline_text(figure: dict[str, Any]) -> str:
    """The baseline's name and value, or a dash."""
    baseline = figure.get("baseline")
    if baseline is None:
        return "—"
    name = figure.get("baseline_name") or "baseline"
    return f"{name}: {number(float(baseline))} {figure['unit']}"


def script_rows(run: Run) -> list[tuple[str, ...]]:
    """The table's rows of one script: a failure's row first, then one row per figure."""
    rows: list[tuple[str, ...]] = []
    if run.status in FAILURES:
        detail = (
            f"timed out after {run.seconds:.0f} s"
            if run.status == "timed out"
            else f"failed, exit status {run.returncode}"
        )
        rows.append((f"[red]{detail}[/red]", "", "", "", "", "[red]failed[/red]"))
    elif run.status != "ok":
        rows.append((f"[yellow]{run.status}[/yellow]", "", "", "", "", "[yellow]n/a[/yellow]"))
    for figure in run.figures:
        ratio = ratio_of(figure)
        rows.append(
            (
                escape(figure["figure"]),
                f"{number(float(figure['value']))} {escape(figure['unit'])}",
                escape(baseline_text(figure)),
                "—" if ratio is None else ratio_text(ratio),
                escape(aim_text(figure)),
                VERDICT[aim_met(figure)],
            )
        )
    return rows


def render(console: Console, runs: list[Run], title: str) -> None:
    """The table of every figure and failed script, then the failures' stderr tails."""
    table = Table(title=title, title_justify="left")
    for name in ("script", "figure", "value", "baseline", "ratio", "aim", "met"):
        table.add_column(
            name,
            justify="right" if name in {"value", "ratio"} else "left",
            no_wrap=name not in {"figure", "baseline"},
        )
    for index, run in enumerate(runs):
        if index:
            table.add_section()
        for number_in_script, row in enumerate(script_rows(run)):
            table.add_row(run.script if number_in_script == 0 else "", *row)
    console.print(table)
    for run in runs:
        if run.stderr_tail:
            console.print(f"\n{run.script} ({run.status}), the last lines of its stderr:")
            console.print("\n".join(run.stderr_tail), markup=False, highlight=False)


def summary(runs: list[Run]) -> dict[str, int]:
    """How many scripts failed, how many figures there are, and how many aims are met."""
    figures = [figure for run in runs for figure in run.figures]
    verdicts = [aim_met(figure) for figure in figures]
    return {
        "scripts": len(runs),
        "failed": sum(run.status in FAILURES for run in runs),
        "missing": sum(run.status in {"missing", "no figures"} for run in runs),
        "figures": len(figures),
        "aims": sum(verdict is not None for verdict in verdicts),
        "met": sum(verdict is True for verdict in verdicts),
    }


def document(runs: list[Run], facts: dict[str, Any]) -> dict[str, Any]:
    """Everything the table shows, for `--json`: each figure with its ratio and verdict."""
    return {
        **facts,
        "summary": summary(runs),
        "scripts": [
            {key: value for key, value in asdict(run).items() if key != "figures"} for run in runs
        ],
        "figures": [
            {**figure, "script": run.script, "ratio": ratio_of(figure), "met": aim_met(figure)}
            for run in runs
            for figure in run.figures
        ],
    }


def main() -> int:
    """Parse the options, run the scripts, print the table (or the JSON); 1 if a script failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="run every script with --quick")
    parser.add_argument("--json", action="store_true", help="print one JSON document, no table")
    parser.add_argument(
        "--only", nargs="+", default=[], metavar="NAME", help="run only these scripts (dispatch …)"
    )
    parser.add_argument(
        "--limit",
        type=float,
        default=None,
        help=f"seconds per script before it is stopped ({QUICK_LIMIT:.0f} quick, "
        f"{FULL_LIMIT:.0f} otherwise)",
    )
    parser.add_argument(
        "--outputs", type=Path, default=None, help="keep each script's stdout and stderr here"
    )
    options = parser.parse_args()
    load_before, started = os.getloadavg()[0], time.perf_counter()
    runs = run_all(options)
    elapsed, load_after = time.perf_counter() - started, os.getloadavg()[0]
    counts = summary(runs)
    if options.json:
        facts = {"quick": options.quick, "seconds": elapsed, "load": [load_before, load_after]}
        print(json.dumps(document(runs, facts), indent=2, ensure_ascii=False))
    else:
        console = Console(width=max(Console().width, 180))
        mode = " --quick (smoke figures: too small to judge by)" if options.quick else ""
        title = (
            f"ledgerclaw benchmarks{mode}: {counts['scripts']} scripts, {counts['failed']} "
            f"failed, {counts['missing']} missing or silent, {counts['figures']} figures, "
            f"{counts['met']} of {counts['aims']} aims met, {elapsed:.0f} s"
        )
        render(console, runs, title)
        times = ", ".join(f"{run.script} {run.seconds:.1f} s" for run in runs if run.seconds)
        console.print(
            f"\nScripts run one after another: {times}. Ratio = value / baseline, both from "
            f"the same run. 1-minute load average {load_before:.2f} before, {load_after:.2f} "
            f"after, on {os.cpu_count()} CPUs.",
            highlight=False,
        )
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
