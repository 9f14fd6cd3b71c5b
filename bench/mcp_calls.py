"""Benchmark of governed tool calls over the daemon's `/mcp`, beside a bare MCP server.

Run from the repository root:

    .venv/bin/python bench/mcp_calls.py [--calls N] [--quick] [--legacy] [--same-name]

Two servers run as subprocesses on loopback, and this process is the client of both:

* the daemon: `python -m cli daemon run` on a fresh home whose config.toml trusts a work
  directory for reads; one device is paired through the CLI, and every request carries its
  token;
* a bare `MCPServer` with an equivalent `read_file` tool (numbered lines and a revision,
  nothing journaled), served by the SDK over Streamable HTTP on uvicorn.

At 1, 4 and 16 concurrent clients each client is its own `mcp.Client` over
`streamable_http_client` with its own `httpx2.AsyncClient`, calling `read_file` on a 10-line
file one call after another. Beside them, in this process, the in-process pipeline of
`bench/dispatch.py`: `Dispatcher.call` of `read_file` with as many sessions as clients. The
three cases of a level take turns in BLOCKS blocks, in a rotating order, after a warm-up.

The output is one table (calls/s, p50 and p99 latency, the governed rate as a share of the
bare one and of the in-process one), a verdict line per level against the 0.8 aim, the
daemon's resident memory idle and after the run, and how many sessions it journaled. The
governed rate at each level, beside the bare one, also goes to `bench/all.py` through
`figures.report`. Nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
# `bench/projections.py` shadows the `projections` package when the bench directory comes
# first on sys.path, as it does for a script; so the repository root goes first and the
# bench directory last, as in that script.
sys.path[:] = [
    str(REPO_ROOT),
    *(entry for entry in sys.path if Path(entry or ".").resolve() != BENCH_DIR),
    str(BENCH_DIR),
]

import anyio  # noqa: E402 - sys.path is set from here on
import httpx2  # noqa: E402
import mcp_types as types  # noqa: E402
from dispatch import FILE_TEXT, Block, Figures, open_pipeline, pipeline_case  # noqa: E402
from figures import report  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from paths import workdir  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adapters.home import Home  # noqa: E402
from adapters.journal.reader import JournalReader  # noqa: E402
from adapters.settings.journal import Durability  # noqa: E402

LEVELS = (1, 4, 16)
"""Concurrent clients (and in-process sessions) per level."""
BLOCKS = 10
"""The cases of a level take turns in this many blocks of calls."""
WARMUP = 20
"""Untimed calls per client before the timed ones (connections, tool listing, sessions)."""
QUICK_CALLS = 160
"""Timed calls per case and level with --quick, the fewest there can be (16 clients x 10 blocks)."""
RATIO_TARGET = 0.8
"""The daemon's rate must reach this share of the bare server's at every level."""
FILE_NAME = "notes.txt"
START_TIMEOUT = 30.0
CLI = [sys.executable, "-m", "cli"]
LABELS = {
    "in-process": "in-process Dispatcher.call",
    "governed": "daemon /mcp · governed",
    "bare": "bare MCPServer /mcp",
}
VERDICT = {True: "[green]met[/green]", False: "[red]NOT met[/red]"}
BARE_SERVER = """
import hashlib, sys
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("bare", log_level="WARNING")

@server.tool(structured_output=False)
def read_file(path: str) -> str:
    '''Numbered lines of a text file, under a header with its revision.'''
    data = Path(path).read_bytes()
    lines = data.decode().splitlines()
    head = f"path: {path}  revision: {hashlib.sha256(data).hexdigest()[:16]}"
    body = "".join(f"{n:>6}\\t{line}\\n" for n, line in enumerate(lines, 1))
    return f"{head}  lines 1-{len(lines)} of {len(lines)}\\n{body}"

server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
"""
"""The bare server: the SDK's own `MCPServer` and uvicorn, importing nothing of ledgerclaw."""

progress = Console(stderr=True)


# -- the two server processes -----------------------------------------------------------------


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_mib(pid: int) -> float:
    """The resident memory of process `pid` (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    msg = f"no VmRSS for process {pid}"
    raise RuntimeError(msg)


@dataclass
class Server:
    """One server subprocess on a loopback port."""

    name: str
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        """The MCP endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def wait_until(self, ready: Callable[[], bool]) -> None:
        """Poll `ready` until it holds; stop with the server's stderr if it exits or hangs."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                msg = f"{self.name} exited with {self.process.returncode}: {self.output()}"
                raise RuntimeError(msg)
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.05)
        msg = f"{self.name} did not answer within {START_TIMEOUT:.0f} s: {self.output()}"
        raise RuntimeError(msg)

    def output(self) -> str:
        """What the server wrote to stderr so far."""
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not exited within 30 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def spawn(stack: ExitStack, name: str, args: list[str], root: Path, env: dict[str, str]) -> Server:
    """Start `args` with its stderr in a file under `root`; stopped when `stack` closes."""
    port = free_port()
    log = root / f"{name}.err"
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - our own interpreter with fixed arguments
            [*args, str(port)], env=env, stdout=subprocess.DEVNULL, stderr=sink
        )
    server = Server(name, process, port, log)
    stack.callback(server.stop)
    return server


def home_environment(home: Path) -> dict[str, str]:
    """The environment of a ledgerclaw command for `home`."""
    return {**os.environ, "LEDGERCLAW_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}


def cli_json(home: Path, *args: str) -> Any:  # noqa: ANN401 - whatever the command prints
    """Run a `--json` ledgerclaw command for `home` that must succeed; its parsed output."""
    done = subprocess.run(  # noqa: S603 - our own interpreter with fixed arguments
        [*CLI, *args, "--json"],
        env=home_environment(home),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        msg = f"ledgerclaw {' '.join(args)} failed: {done.stderr}"
        raise RuntimeError(msg)
    return json.loads(done.stdout)


def health(server: Server) -> dict[str, Any]:
    """The daemon's `/healthz` answer."""
    url = f"http://127.0.0.1:{server.port}/healthz"
    with urllib.request.urlopen(url, timeout=5) as answer:
        return dict(json.loads(answer.read()))


def start_daemon(stack: ExitStack, root: Path, work: Path, durability: Durability) -> Server:
    """A daemon on a fresh home that trusts `work` for reads, serving up to 16 calls at once."""
    home = root / "home"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text(
        f"""
[journal]
durability = "{durability}"

[daemon]
max_concurrent_calls = {max(LEVELS)}

[tools]
roots = [{{ path = "{work}", operations = ["read"] }}]
"""
    )
    args = [*CLI, "daemon", "run", "--port"]
    daemon = spawn(stack, "daemon", args, root, home_environment(home))
    daemon.wait_until(lambda: health(daemon)["status"] == "ok")
    return daemon


def pair(home: Path) -> str:
    """Pair a device with the running daemon of `home` through the CLI; its token."""
    code = cli_json(home, "daemon", "pair", "--name", "bench")["code"]
    return str(cli_json(home, "devices", "pair", code)["token"])


def start_bare(stack: ExitStack, root: Path) -> Server:
    """The bare `MCPServer`, once it accepts connections."""
    bare = spawn(stack, "bare", [sys.executable, "-c", BARE_SERVER], root, dict(os.environ))

    def listening() -> bool:
        with socket.create_connection(("127.0.0.1", bare.port), timeout=1):
            return True

    bare.wait_until(listening)
    return bare


# -- the clients and the cases ----------------------------------------------------------------


@asynccontextmanager
async def connect(url: str, token: str, name: str, mode: str) -> AsyncIterator[Client]:
    """One MCP client on `url` with its own HTTP client, declaring `name`."""
    http = httpx2.AsyncClient(
        headers={"authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=120)
    )
    info = types.Implementation(name=name, version="1")
    transport = streamable_http_client(url, http_client=http)
    async with http, Client(transport, mode=mode, client_info=info) as client:
        yield client


async def call_in_turn(
    client: Client, calls: int, arguments: dict[str, Any], latencies: list[float]
) -> None:
    """`calls` sequential reads on one client, each call's latency appended to `latencies`."""
    for _ in range(calls):
        started = time.perf_counter()
        result = await client.call_tool("read_file", arguments)
        latencies.append(time.perf_counter() - started)
        if result.is_error:
            text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
            msg = f"read_file did not succeed, so there is nothing to measure: {text}"
            raise RuntimeError(msg)


def client_case(clients: list[Client], arguments: dict[str, Any]) -> Block:
    """Blocks of calls spread over the clients, one concurrent task per client."""

    async def block(calls: int, figures: Figures) -> None:
        async with anyio.create_task_group() as tasks:
            for client in clients:
                per_client = calls // len(clients)
                tasks.start_soon(call_in_turn, client, per_client, arguments, figures.latencies)

    return block


@dataclass
class Options:
    """What one benchmark run does."""

    calls: int
    mode: str
    durability: Durability
    same_name: bool


@dataclass
class Servers:
    """The running servers, the token and the files they read."""

    daemon: Server
    bare: Server
    token: str
    target: Path


async def race(root: Path, level: int, servers: Servers, options: Options) -> dict[str, Figures]:
    """Open `level` clients per server and `level` in-process sessions; run them in turns."""
    arguments = {"path": str(servers.target)}
    names = ["bench" if options.same_name else f"bench-{level}x-{i}" for i in range(level)]
    async with AsyncExitStack() as connections:
        with ExitStack() as stack:
            dispatcher, runs = open_pipeline(stack, root, options.durability, level)
            clients: dict[str, list[Client]] = {"governed": [], "bare": []}
            for case, server in (("governed", servers.daemon), ("bare", servers.bare)):
                for name in names:
                    client = connect(server.url, servers.token, name, options.mode)
                    clients[case].append(await connections.enter_async_context(client))
            cases = {
                "in-process": pipeline_case(dispatcher, runs),
                **{case: client_case(group, arguments) for case, group in clients.items()},
            }
            for block in cases.values():
                await block(WARMUP * level, Figures())
            figures = {case: Figures() for case in cases}
            order = list(cases)
            gc.collect()
            for turn in range(BLOCKS):
                for case in order[turn % len(order) :] + order[: turn % len(order)]:
                    started = time.perf_counter()
                    await cases[case](options.calls // BLOCKS, figures[case])
                    figures[case].seconds += time.perf_counter() - started
    return figures


# -- the run, the table -----------------------------------------------------------------------


@dataclass
class Results:
    """Everything the table and its footnotes show."""

    figures: dict[int, dict[str, Figures]] = field(default_factory=dict)
    rss: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Per server: resident MiB after start (and pairing), and after the last level."""
    served: int = 0
    live_sessions: int = 0
    journaled: int = 0
    events: int = 0
    elapsed: float = 0.0


async def run_levels(root: Path, servers: Servers, options: Options, results: Results) -> None:
    """Every level in turn, in one event loop."""
    for level in LEVELS:
        progress.print(f"{level} client(s)")
        level_root = root / f"in-process-{level}"
        results.figures[level] = await race(level_root, level, servers, options)


def measure(options: Options) -> Results:
    """Start both servers, run the levels against them, read the daemon's journal back."""
    results = Results()
    started = time.perf_counter()
    with workdir() as root, ExitStack() as stack:
        work = root / "work"
        work.mkdir()
        target = work / FILE_NAME
        target.write_text(FILE_TEXT)
        daemon = start_daemon(stack, root, work.resolve(), options.durability)
        bare = start_bare(stack, root)
        token = pair(root / "home")
        idle = {"daemon": rss_mib(daemon.process.pid), "bare": rss_mib(bare.process.pid)}
        servers = Servers(daemon, bare, token, target.resolve())
        anyio.run(run_levels, root, servers, options, results)
        results.rss = {
            "daemon": (idle["daemon"], rss_mib(daemon.process.pid)),
            "bare": (idle["bare"], rss_mib(bare.process.pid)),
        }
        answer = health(daemon)
        results.served, results.live_sessions = answer["calls_served"], answer["sessions"]
        sessions = JournalReader(Home(root / "home").database).sessions()
        results.journaled = len(sessions)
        results.events = sum(s.events for s in sessions)
    results.elapsed = time.perf_counter() - started
    return results


def render(console: Console, results: Results, options: Options) -> None:
    """The table, the verdicts, memory and sessions."""
    table = Table(title_justify="left")
    columns = ("clients", "case", "calls/s", "p50 ms", "p99 ms", "vs bare", "vs in-process")
    for name in columns:
        table.add_column(name, justify="left" if name == "case" else "right", no_wrap=True)
    for level, figures in results.figures.items():
        bare, local = figures["bare"].rate, figures["in-process"].rate
        for case in ("in-process", "governed", "bare"):
            row = figures[case]
            table.add_row(
                str(level) if case == "in-process" else "",
                LABELS[case],
                f"{row.rate:,.0f}",
                f"{row.percentile(50) * 1000:.3f}",
                f"{row.percentile(99) * 1000:.3f}",
                f"{row.rate / bare:.2f}x",
                f"{row.rate / local:.2f}x",
            )
        table.add_section()
    console.print(table)
    shares = {level: f["governed"].rate / f["bare"].rate for level, f in results.figures.items()}
    console.print(
        "daemon / bare: "
        + "; ".join(
            f"{level} client(s) {share:.2f} {VERDICT[share >= RATIO_TARGET]}"
            for level, share in shares.items()
        )
        + f" (aim >= {RATIO_TARGET:.1f})",
        highlight=False,
    )
    daemon_idle, daemon_after = results.rss["daemon"]
    bare_idle, bare_after = results.rss["bare"]
    console.print(
        f"resident memory (VmRSS): daemon {daemon_idle:.1f} MiB idle, {daemon_after:.1f} MiB "
        f"after the run ({daemon_after - daemon_idle:+.1f}); bare MCPServer {bare_idle:.1f} MiB "
        f"idle, {bare_after:.1f} MiB after ({bare_after - bare_idle:+.1f})",
        highlight=False,
    )
    clients = sum(LEVELS)
    calls = clients * WARMUP + len(LEVELS) * options.calls
    names = 1 if options.same_name else clients
    expected = clients if options.mode == "legacy" else names
    boundary = (
        "one per client connection (handshake era)"
        if options.mode == "legacy"
        else f"one per device and client name (modern era, {names} name(s))"
    )
    console.print(
        f"sessions journaled by the daemon: {results.journaled} (expected {expected}: "
        f"{boundary}), {results.live_sessions} still hosted at the end; "
        f"{results.served:,} calls served (expected {calls:,}), "
        f"{results.events:,} events in the journal",
        highlight=False,
    )


def report_figures(results: Results, options: Options) -> None:
    """Hand the governed rate beside the bare server's, at each level, to `bench/all.py`."""
    era = "handshake era" if options.mode == "legacy" else "modern era"
    for level, figures in results.figures.items():
        clients = "1 client" if level == 1 else f"{level} clients"
        report(
            f"governed MCP read_file over HTTP · {clients}, {era}, {options.durability}",
            figures["governed"].rate,
            "calls/s",
            baseline=figures["bare"].rate,
            baseline_name="bare MCPServer",
            aim=("ratio_at_least", RATIO_TARGET),
            script="mcp_calls.py",
        )


def main() -> None:
    """Parse the options, measure, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--calls",
        type=int,
        default=2000,
        help="timed calls per case and level, rounded down to a multiple of 160",
    )
    parser.add_argument("--quick", action="store_true", help="160 calls per level: a smoke check")
    parser.add_argument("--legacy", action="store_true", help="clients use the handshake era")
    parser.add_argument(
        "--durability", choices=[d.value for d in Durability], default=Durability.FULL.value
    )
    parser.add_argument(
        "--same-name", action="store_true", help="every client declares the same name"
    )
    args = parser.parse_args()
    calls = QUICK_CALLS if args.quick else args.calls
    calls = max(unit := max(LEVELS) * BLOCKS, calls - calls % unit)
    options = Options(
        calls=calls,
        mode="legacy" if args.legacy else "auto",
        durability=Durability(args.durability),
        same_name=args.same_name,
    )
    load_before = os.getloadavg()[0]
    results = measure(options)
    console = Console(width=max(Console().width, 120))
    era = "handshake era (legacy)" if options.mode == "legacy" else "modern era (auto)"
    console.print(
        f"ledgerclaw MCP calls benchmark: {calls:,} read_file calls per case and level, {era}, "
        f"durability {options.durability}, {results.elapsed:.0f} s\n",
        highlight=False,
    )
    render(console, results, options)
    report_figures(results, options)
    console.print(
        f"\nThe cases of a level take turns in {BLOCKS} blocks after {WARMUP} untimed calls per "
        "client; calls/s from the blocks' wall time, latency per call as the client sees it. "
        "Both servers are subprocesses on 127.0.0.1, and this one process drives every client "
        f"and the in-process pipeline. 1-minute load average {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs.",
        highlight=False,
    )


if __name__ == "__main__":
    main()
