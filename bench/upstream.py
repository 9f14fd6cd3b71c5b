"""Benchmark of governed calls to an upstream MCP server beside the SDK client calling it directly.

Run from the repository root: `.venv/bin/python bench/upstream.py [--calls N] [--quick]`.

The server is `mcp-server-time` over stdio (`python -m mcp_server_time --local-timezone UTC`),
and every call is `get_current_time` with `{"timezone": "UTC"}`. Two processes of it run, one
per case:

* direct: one SDK `mcp.Client` over `stdio_client`, as the upstream link opens it; at one
  caller the calls follow one another, at 16 callers 16 tasks share the one client;
* governed: `Dispatcher.call` of `time/get_current_time` on a fresh home with a real SQLite
  journal at the default durability. An `UpstreamManager` runs the server's one link and
  attaches its tools to the dispatcher's tool set, as the daemon does. The server is
  configured with `trust_read_only = true` and `loading = "core"`, so no call waits for an
  approval or a `load_tool`. At one caller one session makes the calls in sequence; at 16
  callers 16 sessions (one run each) make them, one task per session, as `dispatch.py` does.

At each level the two cases take turns in blocks, in a rotating order, after a warm-up. A
governed result that is not a successful receipt, or a direct result with `isError`, stops the
script: it never times failures. The output is one table (calls/s of both, their ratio, the
0.8 aim) and a line of per-call costs; the governed rate beside the direct one at each level
also goes to `bench/all.py` through `figures.report`. Nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import itertools
import os
import pstats
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# `bench/projections.py` shadows the `projections` package when the bench directory comes
# first on sys.path, as it does for a script; so the repository root goes first and the
# bench directory last, as in `mcp_calls.py`.
sys.path[:] = [
    str(REPO_ROOT),
    *(entry for entry in sys.path if Path(entry or ".").resolve() != BENCH_DIR),
    str(BENCH_DIR),
]

import anyio  # noqa: E402 - sys.path is set from here on
import anyio.to_thread  # noqa: E402
from dispatch import Figures  # noqa: E402
from figures import report  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from paths import workdir  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adapters.home import Home, ensure_home  # noqa: E402
from adapters.journal.journal import SqliteJournal  # noqa: E402
from adapters.journal.writer import SessionWriter  # noqa: E402
from adapters.pipeline.context import RunScope  # noqa: E402
from adapters.pipeline.dispatcher import Dispatcher  # noqa: E402
from adapters.runtime.runs import begin_run  # noqa: E402
from adapters.settings.config_file import Config  # noqa: E402
from adapters.settings.mcp import Loading, ServerSettings  # noqa: E402
from adapters.upstream.manager import UpstreamManager  # noqa: E402
from adapters.wiring.tools import dispatcher as build_dispatcher  # noqa: E402
from adapters.wiring.tools import first_party_tools, pipeline_policy  # noqa: E402
from domain.ids import CallId  # noqa: E402
from domain.tools.result import ToolResult  # noqa: E402
from domain.upstream.states import ServerState  # noqa: E402
from domain.values.audience import Audience  # noqa: E402
from domain.values.conversation import ToolCallRequest  # noqa: E402

SERVER = "time"
TOOL = "get_current_time"
ARGUMENTS: dict[str, Any] = {"timezone": "UTC"}
COMMAND = (sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC")
SETTINGS = ServerSettings(
    transport="stdio",
    command=COMMAND[0],
    args=COMMAND[1:],
    trust_read_only=True,
    loading=Loading.CORE,
)
"""The upstream server as config.toml would give it: read-only marks trusted, tools core."""
MANY = 16
"""Concurrent callers of the second level."""
RATIO_TARGET = 0.8
"""The governed rate must reach this share of the direct rate at each level."""
CONNECT_TIMEOUT = 30.0
POLL_SECONDS = 0.02
PROFILE_LINES = 30
CALL_NUMBERS = itertools.count()  # call ids are unique in the whole run, as a model's are
VERDICT = {True: "[green]yes[/green]", False: "[red]no[/red]"}

progress = Console(stderr=True)


@dataclass(frozen=True)
class Plan:
    """How many calls each level makes, in how many blocks, after how many untimed ones."""

    single: int
    """Timed calls of the one caller."""
    per_caller: int
    """Timed calls of each of the 16 callers."""
    blocks: int
    warmup: int
    """Untimed calls per caller before the timed ones."""

    def calls(self, callers: int) -> int:
        """Timed calls per case at the level of `callers`."""
        return self.single if callers == 1 else self.per_caller * callers


Call = Callable[[], Awaitable[str | None]]
"""One call of the tool: None when it succeeded, else the text of its failure."""
Block = Callable[[int, Figures], Awaitable[None]]
"""Runs one block of `calls` calls per caller, adding their latencies to the figures."""


# -- the two cases ----------------------------------------------------------------------------


def discard() -> TextIO:
    """Where the server's stderr goes: nowhere, as for a link without an error log."""
    return Path(os.devnull).open("w", encoding="utf-8")


@asynccontextmanager
async def direct_client() -> AsyncIterator[Client]:
    """One SDK client over stdio to the server, opened as the upstream link opens its own."""
    params = StdioServerParameters(command=COMMAND[0], args=list(COMMAND[1:]))
    with discard() as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            await client.list_tools()
            yield client


def direct_call(client: Client) -> Call:
    """A call of the tool on the shared client."""

    async def call() -> str | None:
        result = await client.call_tool(TOOL, ARGUMENTS)
        return str(result.content) if result.is_error else None

    return call


@dataclass
class Governed:
    """The governed side: a home's journal, its upstream manager and dispatcher, the runs."""

    dispatcher: Dispatcher
    manager: UpstreamManager
    runs: dict[int, list[RunScope]]
    """Per level, one run per caller, each of its own session."""
    durability: str


@asynccontextmanager
async def governed_pipeline(root: Path) -> AsyncIterator[Governed]:
    """A fresh home with the server configured; yields once its link is connected."""
    home = ensure_home(Home(root))
    config = Config()
    journal = SqliteJournal(home.database, config.journal)
    try:
        tools, policy = first_party_tools(config, home), pipeline_policy(home, config)
        manager = UpstreamManager(journal, {SERVER: SETTINGS}, {})
        manager.attach(tools)
        governed = Governed(
            dispatcher=build_dispatcher(journal, tools, policy, None),
            manager=manager,
            runs={
                callers: [
                    begin_run(journal, home.root, audience=Audience.PERSONAL)
                    for _ in range(callers)
                ]
                for callers in (1, MANY)
            },
            durability=str(config.journal.durability),
        )
        async with anyio.create_task_group() as tasks:
            await tasks.start(manager.run)
            await connected(manager)
            try:
                yield governed
            finally:
                await manager.stop()
    finally:
        journal.close()


async def connected(manager: UpstreamManager) -> None:
    """Wait until the link is connected with its tool offered; stop with its reason if not."""
    link = manager.links[SERVER]
    for _ in range(round(CONNECT_TIMEOUT / POLL_SECONDS)):  # the link has no event to await
        if link.state is ServerState.CONNECTED and manager.catalogs.get(SERVER):
            return
        await anyio.sleep(POLL_SECONDS)
    msg = f"upstream {SERVER} did not connect within {CONNECT_TIMEOUT:.0f} s: {link.reason}"
    raise RuntimeError(msg)


def governed_call(dispatcher: Dispatcher, run: RunScope) -> Call:
    """A call of `SERVER/TOOL` through the governed pipeline on `run`."""
    name = f"{SERVER}/{TOOL}"

    async def call() -> str | None:
        request = ToolCallRequest(
            call_id=CallId(f"call_{next(CALL_NUMBERS)}"), name=name, arguments=ARGUMENTS
        )
        result: ToolResult = await dispatcher.call(run, request)
        return result.text if result.is_error else None

    return call


def case(callers: list[Call]) -> Block:
    """Blocks of calls, one task per caller making its calls in sequence."""

    async def drive(call: Call, calls: int, figures: Figures, failures: list[str]) -> None:
        for _ in range(calls):
            started = time.perf_counter()
            failure = await call()
            figures.latencies.append(time.perf_counter() - started)
            if failure is not None:
                failures.append(failure)

    async def block(calls: int, figures: Figures) -> None:
        failures: list[str] = []
        async with anyio.create_task_group() as tasks:
            for call in callers:
                tasks.start_soon(drive, call, calls, figures, failures)
        if failures:
            msg = (
                f"{len(failures)} of {calls * len(callers)} calls did not succeed, so there is "
                f"nothing to measure; the first: {failures[0]}"
            )
            raise RuntimeError(msg)

    return block


# -- the run ----------------------------------------------------------------------------------


async def race(root: Path, plan: Plan) -> tuple[dict[int, dict[str, Figures]], str]:
    """Both cases at both levels, taking turns in blocks; their figures and the durability."""
    results: dict[int, dict[str, Figures]] = {}
    async with direct_client() as client, governed_pipeline(root / "home") as governed:
        for callers in (1, MANY):
            cases = {
                "direct": case([direct_call(client)] * callers),
                "governed": case(
                    [governed_call(governed.dispatcher, run) for run in governed.runs[callers]]
                ),
            }
            for block in cases.values():
                await block(plan.warmup, Figures())
            writer = cast("SessionWriter", governed.dispatcher.writer)
            writer.batches = writer.requests = 0  # count the timed calls only
            figures = {name: Figures() for name in cases}
            names = list(cases)
            per_block = plan.calls(callers) // callers // plan.blocks
            gc.collect()
            progress.print(f"{callers} caller(s): {plan.calls(callers):,} calls per case")
            for turn in range(plan.blocks):
                for name in names[turn % len(names) :] + names[: turn % len(names)]:
                    started = time.perf_counter()
                    await cases[name](per_block, figures[name])
                    figures[name].seconds += time.perf_counter() - started
            figures["governed"].batch = writer.requests / writer.batches
            results[callers] = figures
    return results, governed.durability


def render(console: Console, results: dict[int, dict[str, Figures]]) -> None:
    """The table, then the cost per call of each case at each level."""
    table = Table()
    for name in ("figure", "direct calls/s", "governed calls/s", "ratio", "aim", "met"):
        table.add_column(name, justify="left" if name == "figure" else "right", no_wrap=True)
    costs = []
    for callers, figures in results.items():
        direct, governed = figures["direct"].rate, figures["governed"].rate
        ratio = governed / direct
        label = "1 caller" if callers == 1 else f"{callers} callers"
        table.add_row(
            f"{TOOL} · {label}",
            f"{direct:,.0f}",
            f"{governed:,.0f}",
            f"{ratio:.2f}x",
            f">= {RATIO_TARGET:.1f}x",
            VERDICT[ratio >= RATIO_TARGET],
        )
        costs.append(
            f"{label}: direct {1000 / direct:.3f} ms, governed {1000 / governed:.3f} ms "
            f"(+{1000 / governed - 1000 / direct:.3f} ms, "
            f"{figures['governed'].batch:.2f} sessions per journal transaction)"
        )
    console.print(table)
    console.print("Wall time per call, " + "; ".join(costs), highlight=False)


def report_figures(results: dict[int, dict[str, Figures]], durability: str) -> None:
    """Hand the governed rate beside the direct SDK client's, at each level, to `bench/all.py`."""
    for callers, figures in results.items():
        label = "1 caller" if callers == 1 else f"{callers} callers"
        report(
            f"governed upstream {TOOL} · {label}, {durability}",
            figures["governed"].rate,
            "calls/s",
            baseline=figures["direct"].rate,
            baseline_name="SDK client called directly",
            aim=("ratio_at_least", RATIO_TARGET),
            script="upstream.py",
        )


@contextmanager
def threads_inline() -> Iterator[None]:
    """Run the work sent to worker threads on the event loop's thread, so cProfile sees it."""
    sent = anyio.to_thread.run_sync

    async def inline(function: Callable[..., object], *args: object, **_: object) -> object:
        return function(*args)

    anyio.to_thread.run_sync = inline  # type: ignore[assignment]
    try:
        yield
    finally:
        anyio.to_thread.run_sync = sent


def profile(calls: int) -> str:
    """A cProfile of `calls` governed calls by one caller: the top functions by total time."""

    async def governed_only(root: Path) -> None:
        async with governed_pipeline(root) as governed:
            block = case([governed_call(governed.dispatcher, governed.runs[1][0])])
            await block(20, Figures())
            profiler.enable()
            await block(calls, Figures())
            profiler.disable()

    profiler = cProfile.Profile()
    with workdir() as root, threads_inline():
        anyio.run(governed_only, root / "home")
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("cumulative").print_stats(PROFILE_LINES)
    stats.sort_stats("tottime").print_stats(PROFILE_LINES)
    return out.getvalue()


def main() -> None:
    """Parse the options, run both cases at both levels, print the table (and a profile)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400, help="timed calls of the one caller")
    parser.add_argument(
        "--per-caller", type=int, default=50, help=f"timed calls of each of the {MANY} callers"
    )
    parser.add_argument("--quick", action="store_true", help="20 and 2x16 calls: a smoke check")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print a cProfile of the governed calls of one caller, worker threads inline",
    )
    args = parser.parse_args()
    if args.quick:
        plan = Plan(single=20, per_caller=2, blocks=2, warmup=2)
    else:
        blocks = 10
        plan = Plan(
            single=max(blocks, args.calls - args.calls % blocks),
            per_caller=max(blocks, args.per_caller - args.per_caller % blocks),
            blocks=blocks,
            warmup=20,
        )
    load_before, started = os.getloadavg()[0], time.perf_counter()
    with workdir() as root:
        results, durability = anyio.run(race, root, plan)
    elapsed = time.perf_counter() - started
    console = Console(width=max(Console().width, 100))
    console.print(
        f"ledgerclaw upstream benchmark: {TOOL} of mcp-server-time over stdio, "
        f"{plan.single:,} calls at 1 caller, {MANY}x{plan.per_caller:,} at {MANY}; journal "
        f"durability {durability}, SQLite {sqlite3.sqlite_version}, {elapsed:.0f} s",
        highlight=False,
    )
    render(console, results)
    report_figures(results, durability)
    console.print(
        f"The cases take turns in {plan.blocks} blocks after {plan.warmup} untimed calls per "
        "caller; calls/s from the blocks' wall time. Direct: one SDK Client, shared by the "
        f"callers. Governed: Dispatcher.call, one session per caller, one link. 1-minute load "
        f"average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after, on "
        f"{os.cpu_count()} CPUs.",
        highlight=False,
    )
    if args.profile:
        Console(width=160).print(profile(plan.single), highlight=False, markup=False)


if __name__ == "__main__":
    main()
