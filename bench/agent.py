"""Benchmark of the agent loop: journaled ledgerclaw turns beside LangGraph's prebuilt ReAct agent.

Run from the repository root: `.venv/bin/python bench/agent.py [--turns N] [--repeat R] [--quick]`.

For each durability (`full`, `normal`) every repeat runs three cases, each in a fresh temporary
directory, one after another in an order that rotates from repeat to repeat (as dispatch.py
rotates its blocks), so that each case meets the same disk conditions:

* ledgerclaw: one `AgentSession.run(prompt)` whose scripted model answers instantly, N times
  with one `read_file` call of a 10-line file in the trusted project directory, then with a
  text answer; every record journaled with that durability before the driver acts on it;
* LangGraph, like for like: `langgraph.prebuilt.create_react_agent` with a fake chat model
  that answers the same way, a `read_file` tool reading the same file, and a `SqliteSaver`
  checkpointer on a WAL file with the same `synchronous`, invoked with `durability="sync"`,
  so each step's checkpoint is on disk before the next step starts;
* LangGraph as it ships: the same, with its default `durability="async"`, which saves each
  checkpoint in a background thread while the next step already runs.

A ledgerclaw turn is timed from its TurnBegun record to its TurnClosed record, as
`RunView.on_records` reports them once durable; the gap from TurnClosed to the next TurnBegun
(the next prompt gathered and its TurnBegun committed) is printed beside it. A LangGraph turn
is the interval between two consecutive calls of the fake model. turns/s is N over the whole
run's wall time. Each figure is the median over the repeats; nothing asserts a timing. The
ratios to LangGraph and the overhead per turn also go to `bench/all.py` through
`figures.report`, each with the aim of not falling below the figure bench/README.md records.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import itertools
import json
import os
import pstats
import sqlite3
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.prebuilt import create_react_agent
from langgraph.types import Durability as GraphDurability
from langgraph.warnings import LangGraphDeprecatedSinceV10
from pydantic import Field
from rich.console import Console
from rich.table import Table

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# The agent runtime imports the `projections` package, which bench/projections.py would shadow
# if this script's directory came first on sys.path, as it does for a script; so the
# repository root goes first and the bench directory (for `paths`) last.
sys.path[:] = [
    str(REPO_ROOT),
    *(entry for entry in sys.path if Path(entry or ".").resolve() != BENCH_DIR),
    str(BENCH_DIR),
]

from figures import report  # noqa: E402 - the bench directory is on sys.path from here on
from paths import workdir  # noqa: E402

from adapters.api.agent_run import RunView, agent_session  # noqa: E402
from adapters.home import Home, ensure_home  # noqa: E402
from adapters.settings.journal import Durability  # noqa: E402
from domain.agent import records  # noqa: E402
from domain.values.receipts import OutcomeCategory  # noqa: E402
from domain.values.runs import RunEndReason  # noqa: E402

WARMUP = 5
"""Turns of one untimed run of every case per durability (imports, caches, first commits)."""
FILE_NAME = "notes.txt"
FILE_TEXT = "".join(f"line {n}: a small text file that read_file numbers\n" for n in range(10))
PROMPT = "Read the notes again and again, then say you are done."
ANSWER = "Done."
TURN_LIMIT = 10_000
"""`[agent] turn_limit`: the most config.toml allows, and more turns than any run here."""
CONTEXT_WINDOW = 10_000_000
"""The most config.toml allows: the transcript grows by a read per turn and must always fit."""
RATE_TARGET = 2.0
"""ledgerclaw must reach this multiple of LangGraph's like-for-like turns/s."""
OVERHEAD_TARGET = 0.002
"""At most this many seconds of ledgerclaw's own work per turn at `full`."""
RECORDED = {
    Durability.FULL: {"sync": 1.59, "async": 1.58},
    Durability.NORMAL: {"sync": 2.27, "async": 2.09},
}
"""ledgerclaw's turns/s ÷ each LangGraph case's, as bench/README.md "agent" records them
(2026-12-02): the figures that must not get worse."""
RECORDED_OVERHEAD = 0.0085
"""ledgerclaw's own seconds per turn at `full`, as bench/README.md "agent" records them."""
PROFILE_LINES = 25
LABELS = {
    "ledgerclaw": "ledgerclaw · AgentSession.run",
    "sync": "LangGraph · SqliteSaver, sync checkpoints",
    "async": "LangGraph · SqliteSaver, async (its default)",
}
VERDICT = {True: "[green]met[/green]", False: "[red]NOT met[/red]"}

progress = Console(stderr=True)


@dataclass
class Figures:
    """One case in one run: the run's wall time, every turn's time, the gaps between turns."""

    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    """ledgerclaw only: TurnClosed to the next TurnBegun, seconds."""

    @property
    def rate(self) -> float:
        """Turns per second."""
        return len(self.latencies) / self.seconds

    def percentile(self, share: int, values: Sequence[float] | None = None) -> float:
        """The time (seconds) under which `share` percent of the turns (or `values`) stayed."""
        values = self.latencies if values is None else values
        return statistics.quantiles(values, n=100, method="inclusive")[share - 1]


@dataclass
class Summary:
    """Medians over the repeats of one case."""

    rate: float
    p50: float
    p99: float
    gap: float | None


Case = Callable[[Path, Durability, int], Figures]
"""Runs `turns` turns of a case in a fresh directory with that durability; its figures."""


UNREAD = "a read_file call did not succeed, so there is nothing to measure: "


# -- ledgerclaw -------------------------------------------------------------------------------


def write_home(root: Path, durability: Durability, turns: int) -> Home:
    """A home whose scripted model reads the project's file `turns` times, then answers."""
    home_dir, project = root / "home", root / "proj"
    project.mkdir(parents=True)
    home = ensure_home(Home(home_dir))
    notes = project / FILE_NAME
    notes.write_text(FILE_TEXT, encoding="utf-8")
    call = {"name": "read_file", "arguments": {"path": str(notes)}}
    steps = [{"reply": {"text": "", "tool_calls": [{"id": f"c{n}", **call}]}} for n in range(turns)]
    steps.append({"reply": {"text": ANSWER, "tool_calls": []}})
    script = home_dir / "script.jsonl"
    script.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
    home.config.write_text(
        f"""[journal]
durability = "{durability}"

[agent]
model = "bench"
turn_limit = {TURN_LIMIT}

[models.bench]
provider = "scripted"
model = "bench"
script = "{script.name}"
context_window = {CONTEXT_WINDOW}

[[tools.roots]]
path = "{project}"
operations = ["read"]
audiences = ["personal"]
""",
        encoding="utf-8",
    )
    return home


def ledgerclaw_case(root: Path, durability: Durability, turns: int) -> Figures:
    """One agent run of `turns` read turns and a final answer in a fresh home."""
    home = write_home(root, durability, turns)
    begun: list[float] = []
    closed: list[float] = []
    succeeded: list[bool] = []

    def on_records(entries: Sequence[records.AgentRecord]) -> None:
        now = time.perf_counter()
        for entry in entries:
            if isinstance(entry, records.TurnBegun):
                begun.append(now)
            elif isinstance(entry, records.TurnClosed):
                closed.append(now)
            elif isinstance(entry, records.CallAnswered):
                succeeded.append(entry.outcome is OutcomeCategory.SUCCESS)

    figures = Figures()
    with agent_session(home, view=RunView(on_records=on_records)) as opened:
        gc.collect()
        started = time.perf_counter()
        outcome = anyio.run(opened.run, PROMPT)
        figures.seconds = time.perf_counter() - started
    if outcome.reason is not RunEndReason.NATURAL or outcome.answer != ANSWER:
        msg = f"the run ended {outcome.reason} ({outcome.detail}), not with the scripted answer"
        raise RuntimeError(msg)
    if len(succeeded) != turns or not all(succeeded):
        msg = f"{UNREAD}{succeeded.count(True)} of {turns} calls succeeded"
        raise RuntimeError(msg)
    # Turn N + 1 is the final answer: it closes the last gap and is not a read turn itself.
    figures.latencies = [
        end - start for start, end in zip(begun[:turns], closed[:turns], strict=True)
    ]
    figures.gaps = [start - end for end, start in zip(closed[:turns], begun[1:], strict=True)]
    return figures


# -- LangGraph --------------------------------------------------------------------------------


class ReadingChatModel(BaseChatModel):
    """Answers instantly: one `read_file` call for the first `turns` calls, then a text."""

    turns: int
    path: str
    stamps: list[float] = Field(default_factory=list)
    """`time.perf_counter()` at each call."""

    @property
    def _llm_type(self) -> str:
        return "bench-reading"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,  # noqa: ANN401 - LangChain's callback manager, unused
        **kwargs: Any,  # noqa: ANN401 - LangChain passes the bound tools here, unused
    ) -> ChatResult:
        del messages, stop, run_manager, kwargs
        self.stamps.append(time.perf_counter())
        number = len(self.stamps)
        if number <= self.turns:
            call = {"name": "read_file", "args": {"path": self.path}, "id": f"c{number}"}
            message = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
        else:
            message = AIMessage(content=ANSWER)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Sequence[object], **kwargs: object) -> ReadingChatModel:
        """The model itself: its replies do not depend on the tools offered."""
        del tools, kwargs
        return self


@tool
def read_file(path: str) -> str:
    """Read a text file and return its content."""
    return Path(path).read_text(encoding="utf-8")


def graph_case(mode: GraphDurability) -> Case:
    """LangGraph's prebuilt ReAct agent, checkpointed with `mode`, as a case."""

    def case(root: Path, durability: Durability, turns: int) -> Figures:
        notes = root / FILE_NAME
        notes.write_text(FILE_TEXT, encoding="utf-8")
        model = ReadingChatModel(turns=turns, path=str(notes))
        conn = sqlite3.connect(root / "checkpoints.db", check_same_thread=False)
        with closing(conn):
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={durability.value.upper()}")
            tools: list[BaseTool] = [read_file]
            with warnings.catch_warnings():
                # Deprecated for `langchain.agents.create_agent`; langchain is not installed.
                warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
                agent = create_react_agent(model, tools, checkpointer=SqliteSaver(conn))
            # Each turn is two steps (the model, the tools); the final answer is one more.
            config: RunnableConfig = {
                "configurable": {"thread_id": "bench"},
                "recursion_limit": 2 * turns + 8,
            }
            gc.collect()
            started = time.perf_counter()
            state = agent.invoke({"messages": [HumanMessage(PROMPT)]}, config, durability=mode)
            seconds = time.perf_counter() - started
        results = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        if len(results) != turns or any(m.status != "success" for m in results):
            msg = f"{UNREAD}{len(results)} tool results, the last {results[-1:]}"
            raise RuntimeError(msg)
        if state["messages"][-1].content != ANSWER:
            msg = f"the agent did not end with the fake model's answer: {state['messages'][-1]}"
            raise RuntimeError(msg)
        latencies = [later - earlier for earlier, later in itertools.pairwise(model.stamps)]
        return Figures(seconds=seconds, latencies=latencies)

    return case


CASES: dict[str, Case] = {
    "ledgerclaw": ledgerclaw_case,
    "sync": graph_case("sync"),
    "async": graph_case("async"),
}


# -- runs, medians, the tables ----------------------------------------------------------------


def direct_read_seconds() -> float:
    """The median time of reading the file with no pipeline: the tool's own work."""
    with workdir() as root:
        notes = root / FILE_NAME
        notes.write_text(FILE_TEXT, encoding="utf-8")
        times = []
        for _ in range(200):
            began = time.perf_counter()
            notes.read_bytes()
            times.append(time.perf_counter() - began)
    return statistics.median(times)


def measure(durability: Durability, turns: int, repeat: int) -> dict[str, Summary]:
    """Every case `repeat` times, in a rotating order, in fresh directories; the medians."""
    names = list(CASES)
    for name in names:
        with workdir() as root:
            CASES[name](root, durability, WARMUP)
    runs: dict[str, list[Figures]] = {name: [] for name in names}
    for index in range(repeat):
        progress.print(f"{durability}: run {index + 1}/{repeat}")
        for name in names[index % len(names) :] + names[: index % len(names)]:
            with workdir() as root:
                runs[name].append(CASES[name](root, durability, turns))
    return {
        name: Summary(
            rate=statistics.median(f.rate for f in figures),
            p50=statistics.median(f.percentile(50) for f in figures),
            p99=statistics.median(f.percentile(99) for f in figures),
            gap=statistics.median(f.percentile(50, f.gaps) for f in figures)
            if figures[0].gaps
            else None,
        )
        for name, figures in runs.items()
    }


def render(
    console: Console, durability: Durability, results: dict[str, Summary], direct: float
) -> None:
    """One table for one durability, then a verdict line per aim."""
    ours = results["ledgerclaw"]
    title = f"durability {durability} (synchronous={durability.value.upper()} on both journals)"
    table = Table(title=title, title_justify="left")
    columns = ("case", "turns/s", "p50 ms/turn", "p99 ms/turn", "gap p50 ms", "ledgerclaw ÷ row")
    for name in columns:
        table.add_column(name, justify="left" if name == "case" else "right", no_wrap=True)
    for name, row in results.items():
        table.add_row(
            LABELS[name],
            f"{row.rate:,.0f}",
            f"{row.p50 * 1000:.3f}",
            f"{row.p99 * 1000:.3f}",
            "—" if row.gap is None else f"{row.gap * 1000:.3f}",
            f"{ours.rate / row.rate:.2f}x",
        )
    console.print(table)
    ratio, shipped = ours.rate / results["sync"].rate, ours.rate / results["async"].rate
    line = (
        f'turns/s ÷ LangGraph durability="sync" = {ratio:.2f} (aim >= {RATE_TARGET:.0f}): '
        f'{VERDICT[ratio >= RATE_TARGET]}; ÷ its default "async" = {shipped:.2f}: '
        f"{VERDICT[shipped >= RATE_TARGET]}"
    )
    if durability is Durability.FULL:
        own = overhead(results, direct)
        line += (
            f"; ledgerclaw overhead per turn = p50 turn + p50 gap - direct read "
            f"({direct * 1e6:.0f} µs) = {own * 1000:.3f} ms "
            f"(aim <= {OVERHEAD_TARGET * 1000:.0f} ms): {VERDICT[own <= OVERHEAD_TARGET]}"
        )
    console.print(line + "\n", highlight=False)


def overhead(results: dict[str, Summary], direct: float) -> float:
    """The seconds of ledgerclaw's own work per turn: p50 turn + p50 gap - a direct read."""
    ours = results["ledgerclaw"]
    return ours.p50 + (ours.gap or 0.0) - direct


def report_figures(durability: Durability, results: dict[str, Summary], direct: float) -> None:
    """Hand ledgerclaw's turns/s beside each LangGraph case, and its overhead, to all.py."""
    ours = results["ledgerclaw"].rate
    for case, recorded in RECORDED[durability].items():
        report(
            f"agent turns · {durability}, vs LangGraph {case}",
            ours,
            "turns/s",
            baseline=results[case].rate,
            baseline_name=f"LangGraph SqliteSaver, {case} checkpoints",
            aim=("ratio_at_least", recorded),
            script="agent.py",
        )
    if durability is Durability.FULL:
        report(
            "agent overhead per turn · full",
            overhead(results, direct) * 1000,
            "ms",
            aim=("value_at_most", RECORDED_OVERHEAD * 1000),
            script="agent.py",
        )


def profile(turns: int) -> str:
    """A cProfile of one ledgerclaw run at `full`: the top functions by own and total time."""
    profiler = cProfile.Profile()
    with workdir() as root:
        profiler.enable()
        ledgerclaw_case(root, Durability.FULL, turns)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(PROFILE_LINES)
    stats.sort_stats("cumulative").print_stats(PROFILE_LINES)
    return out.getvalue()


def main() -> None:
    """Parse the options, measure both durabilities, print the tables (and a profile if asked)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="read turns per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case and durability")
    parser.add_argument("--quick", action="store_true", help="10 turns, 1 run: a smoke check")
    parser.add_argument(
        "--profile", action="store_true", help="also print a cProfile of one ledgerclaw run"
    )
    args = parser.parse_args()
    turns, repeat = (10, 1) if args.quick else (max(2, args.turns), max(1, args.repeat))
    load_before, started = os.getloadavg()[0], time.perf_counter()
    results = {d: measure(d, turns, repeat) for d in (Durability.FULL, Durability.NORMAL)}
    direct = direct_read_seconds()
    console = Console(width=max(Console().width, 120))
    elapsed, version = time.perf_counter() - started, sqlite3.sqlite_version
    title = f"{turns:,} read_file turns per run, median of {repeat} run(s), SQLite {version}"
    console.print(f"ledgerclaw agent benchmark: {title}, WAL, {elapsed:.0f} s\n")
    for durability, summary in results.items():
        render(console, durability, summary, direct)
        report_figures(durability, summary, direct)
    console.print(
        f"Each run starts with an untimed run of {WARMUP} turns per case; the cases take turns "
        "in a rotating order. turns/s = turns / the run's wall time. ledgerclaw's turn runs "
        "from TurnBegun to TurnClosed as RunView.on_records reports them; its gap runs from "
        "TurnClosed to the next TurnBegun (the next prompt gathered and committed). LangGraph's "
        "turn runs from one model call to the next, its next prompt included. "
        f"1-minute load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, "
        f"on {os.cpu_count()} CPUs.",
        highlight=False,
    )
    if args.profile:
        Console(width=160).print(profile(turns), highlight=False, markup=False)


if __name__ == "__main__":
    main()
