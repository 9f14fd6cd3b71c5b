"""Benchmark of the gateway: events fanned out to subscribers, and the first token of a send.

Run from the repository root: `.venv/bin/python bench/gateway.py [--words N] [--sends N]
[--repeat R] [--quick]`.

A real daemon (`ledgerclaw daemon run`, its agent on the scripted model, the home's default
`full` durability) serves every ledgerclaw figure; the clients are the project's
`GatewayClient`, one thread each. Beside it, in the same run, a bare `websockets` server that
speaks just enough of the protocol for the same client (a challenge, any `connect` accepted)
sends frames of the same size with no journal, no pipeline and no model behind them: the
ceiling of the socket path on this machine.

* **live fan-out**: 1 and 16 clients connected; one `chat.send` whose answer streams N words,
  each a `chat.delta` pushed to every client, then the run's records and its end. Events/s is
  every event every client received, over the time from the send to the last client seeing
  `chat.run_ended`. The bare server broadcasts as many frames of the same size.
* **replay fan-out**: 1 and 16 clients each `subscribe` from position 0 to a session of a few
  hundred journaled events at once; events/s is all they received over the time until the
  last has its session's last event. The bare server sends each the same count of frames.
* **first token**: `chat.send` to the first `chat.delta` at the client, against the same run
  in-process (`AgentSession.run` to its first streamed piece), each a new run of one session.

Each figure is the median over the repeats, also handed to `bench/all.py` through
`figures.report`; nothing asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path[:] = [
    str(REPO_ROOT),
    *(entry for entry in sys.path if Path(entry or ".").resolve() != BENCH_DIR),
    str(BENCH_DIR),
]

from figures import report  # noqa: E402 - the bench directory is on sys.path from here on
from paths import workdir  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from adapters.api.agent_run import RunView, agent_session  # noqa: E402
from adapters.control.gateway_client import GatewayClient  # noqa: E402
from adapters.home import resolve_home  # noqa: E402
from adapters.security.host_key import load_host_key  # noqa: E402

WAIT = 120.0
BARE = "--bare-server"


def progress(text: str) -> None:
    """One progress line on stderr."""
    print(text, file=sys.stderr, flush=True)


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# -- the homes and the daemon ----------------------------------------------------------------


def write_home(root: Path, steps: list[dict[str, Any]]) -> Path:
    """A home whose agent plays `steps`, with a trusted work directory holding notes.md."""
    home, work = root / "home", root / "work"
    home.mkdir(mode=0o700)
    work.mkdir()
    (work / "notes.md").write_text("".join(f"line {n}\n" for n in range(10)))
    (home / "script.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (home / "config.toml").write_text(
        f"""
[daemon]
projection_interval_seconds = 1.0

[tools]
roots = [{{ path = "{work}", operations = ["read"] }}]

[agent]
model = "demo"

[models.demo]
provider = "scripted"
model = "demo"
script = "script.jsonl"
"""
    )
    return home


def environment(home: Path) -> dict[str, str]:
    """The environment of a command for `home`."""
    return {**os.environ, "LEDGERCLAW_HOME": str(home), "NO_COLOR": "1"}


def wait_until_up(port: int, process: subprocess.Popen[bytes], path: str) -> None:
    """Wait until the server on `port` answers `path` (or accepts a connection)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"the server exited with {process.returncode}"
            raise RuntimeError(msg)
        try:
            if path:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1).close()
            else:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.05)
            continue
        return
    msg = f"nothing answered on port {port}"
    raise RuntimeError(msg)


@contextmanager
def daemon(home: Path) -> Iterator[int]:
    """A running daemon for `home`; its port."""
    port = free_port()
    command = [sys.executable, "-m", "cli", "daemon", "run", "--port", str(port)]
    process = subprocess.Popen(  # noqa: S603 - this interpreter, fixed arguments
        command, env=environment(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until_up(port, process, "/healthz")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def bare_server() -> Iterator[int]:
    """The bare websockets server of this module, in a process of its own; its port."""
    port = free_port()
    process = subprocess.Popen([sys.executable, __file__, BARE, str(port)])  # noqa: S603 - as above
    try:
        wait_until_up(port, process, "")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


# -- the bare server -------------------------------------------------------------------------


def serve_bare(port: int) -> None:
    """A websockets server with the daemon's frames and nothing behind them.

    It answers any `connect`, broadcasts deltas on `chat.send` and replays on `subscribe`.
    """
    from websockets.asyncio.server import broadcast, serve  # noqa: PLC0415 - this mode only

    logging.getLogger("websockets").setLevel(logging.CRITICAL)  # the readiness probe's close

    connections: set[Any] = set()
    seq = [0]

    def frame(event: str, payload: dict[str, Any]) -> str:
        seq[0] += 1
        return json.dumps(
            {"type": "event", "event": event, "payload": payload, "seq": seq[0], "stateVersion": 0}
        )

    async def handle(websocket: Any) -> None:  # noqa: ANN401 - the library's connection
        challenge = {"nonce": "0" * 64, "ts": 0}
        await websocket.send(
            json.dumps(
                {
                    "type": "event",
                    "event": "connect.challenge",
                    "payload": challenge,
                    "seq": 0,
                    "stateVersion": 0,
                }
            )
        )
        connections.add(websocket)
        try:
            async for raw in websocket:
                request = json.loads(raw)
                params, rid = request.get("params", {}), request["id"]
                await websocket.send(
                    json.dumps({"type": "res", "id": rid, "ok": True, "payload": {"protocol": 1}})
                )
                if request["method"] == "chat.send":
                    session = params["session"]
                    for n in range(int(params["words"])):
                        piece = {"session": session, "run_id": "run_" + "0" * 32, "text": f"w{n} "}
                        broadcast(connections, frame("chat.delta", piece))
                        if n % 64 == 0:
                            await asyncio.sleep(0)
                    end = {"session": session, "run_id": "run_" + "0" * 32, "reason": "natural"}
                    broadcast(connections, frame("chat.run_ended", end))
                elif request["method"] == "subscribe":
                    fields = {"text": "x" * int(params["size"])}
                    for position in range(1, int(params["events"]) + 1):
                        row = {
                            "session": params["session"],
                            "position": position,
                            "event": "session.message_appended",
                            "fields": fields,
                        }
                        await websocket.send(frame("session.event", row))
        finally:
            connections.discard(websocket)

    async def main() -> None:
        async with serve(handle, "127.0.0.1", port, max_size=None):
            await asyncio.Future()

    asyncio.run(main())


# -- clients ---------------------------------------------------------------------------------


def connect(port: int, key: bytes | None) -> GatewayClient:
    """A client of the daemon (with the home's key) or of the bare server (any proof)."""
    return GatewayClient.open(port, key=key or b"\0" * 32, timeout=WAIT)


def until(client: GatewayClient, done: Callable[[dict[str, Any]], bool]) -> int:
    """Read events until one satisfies `done`; how many events were read."""
    count, deadline = 0, time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for event in client.events(timeout=0.5):
            count += 1
            if done(event):
                return count
    msg = "the awaited event never came"
    raise RuntimeError(msg)


def together(clients: list[GatewayClient], work: Callable[[GatewayClient], int]) -> int:
    """Run `work` on each client in a thread of its own; the sum of what they return."""
    results = [0] * len(clients)

    def one(index: int) -> None:
        results[index] = work(clients[index])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(results)


def live_fan_out(port: int, key: bytes | None, fans: int, send: dict[str, Any]) -> float:
    """Events/s every client received while one send's answer streamed to `fans` clients."""
    clients = [connect(port, key) for _ in range(fans)]
    try:
        for client in clients:
            list(client.events())  # what arrived while connecting
        started = time.perf_counter()
        clients[0].call("chat.send", send)
        received = together(clients, lambda c: until(c, lambda e: e["event"] == "chat.run_ended"))
        return received / (time.perf_counter() - started)
    finally:
        for client in clients:
            client.close()


def replay_fan_out(port: int, key: bytes | None, fans: int, params: dict[str, Any]) -> float:
    """Events/s all `fans` clients received subscribing from 0 to a session of `events`."""
    clients = [connect(port, key) for _ in range(fans)]
    try:
        started = time.perf_counter()
        events = int(params["events"])
        asked = {k: v for k, v in params.items() if k in {"session", "after"} or key is None}

        def subscribe(client: GatewayClient) -> int:
            client.call("subscribe", asked)
            return until(
                client,
                lambda e: e["event"] == "session.event" and e["payload"]["position"] >= events,
            )

        received = together(clients, subscribe)
        return received / (time.perf_counter() - started)
    finally:
        for client in clients:
            client.close()


# -- the cases -------------------------------------------------------------------------------


@dataclass
class Figures:
    """Each measured figure, by name, with its bare or in-process baseline."""

    rows: dict[str, tuple[list[float], list[float]]]

    def add(self, name: str, ours: float, baseline: float) -> None:
        """One repeat's figure and its baseline."""
        mine, theirs = self.rows.setdefault(name, ([], []))
        mine.append(ours)
        theirs.append(baseline)


def answer_steps(runs: int, words: int) -> list[dict[str, Any]]:
    """For each run a read of notes.md, then an answer of `words` words."""
    read = {"id": "c1", "name": "read_file", "arguments": {"path": "notes.md"}}
    text = " ".join(f"w{n}" for n in range(words))
    steps: list[dict[str, Any]] = []
    for _ in range(runs):
        steps += [{"reply": {"text": "", "tool_calls": [read]}}, {"reply": {"text": text}}]
    return steps


def fan_out_case(figures: Figures, words: int, replay_runs: int) -> None:
    """Live and replay fan-out to 1 and 16 clients, against the bare server."""
    with workdir() as root:
        fans = (1, 16)
        home = write_home(root, answer_steps(len(fans) + replay_runs, words))
        with daemon(home) as port, bare_server() as bare:
            key = load_host_key(resolve_home({"LEDGERCLAW_HOME": str(home)}))
            with connect(port, key) as client:
                session = client.call("sessions.create")["session_id"]
                for _ in range(replay_runs):  # the replayed session's history
                    client.call("chat.send", {"session": session, "text": "fill"})
                    until(client, lambda e: e["event"] == "chat.run_ended")
                history = client.call("chat.history", {"session": session, "limit": 500})
            rows = history["events"]
            events = len(rows)
            size = max(1, round(statistics.mean(len(json.dumps(r["fields"])) for r in rows)))
            replay = {"session": session, "after": 0, "events": events, "size": size}
            for count in fans:
                ours = replay_fan_out(port, key, count, replay)
                bare_rate = replay_fan_out(bare, None, count, replay)
                figures.add(f"replay fan-out, {count} client(s) (events/s)", ours, bare_rate)
            for count in fans:
                ours = live_fan_out(port, key, count, {"session": session, "text": "stream"})
                bare_send = {"session": session, "text": "stream", "words": words}
                bare_rate = live_fan_out(bare, None, count, bare_send)
                figures.add(f"live fan-out, {count} client(s) (events/s)", ours, bare_rate)
        progress(f"  fan-out: {words} words live, {events} events replayed")


def first_token_case(figures: Figures, sends: int) -> None:
    """chat.send to the first delta over the gateway against the same run in-process (ms)."""
    steps = [{"reply": {"text": "hello there, here is the answer"}}] * sends
    with workdir() as root:
        home = write_home(root, steps)
        gateway_ms: list[float] = []
        with daemon(home) as port:
            key = load_host_key(resolve_home({"LEDGERCLAW_HOME": str(home)}))
            client = connect(port, key)
            session = client.call("sessions.create")["session_id"]
            for _ in range(sends):
                started = time.perf_counter()
                client.call("chat.send", {"session": session, "text": "hi"})
                until(client, lambda e: e["event"] == "chat.delta")
                gateway_ms.append((time.perf_counter() - started) * 1000)
                until(client, lambda e: e["event"] == "chat.run_ended")
            client.close()
    with workdir() as root:
        home = write_home(root, steps)
        local_ms: list[float] = []
        first: list[float] = []
        view = RunView(on_text=lambda _piece: first.append(time.perf_counter()))
        opened = agent_session(resolve_home({"LEDGERCLAW_HOME": str(home)}), view=view)
        with opened as session_run:

            async def runs() -> None:
                for _ in range(sends):
                    first.clear()
                    started = time.perf_counter()
                    await session_run.run("hi")
                    local_ms.append((first[0] - started) * 1000)

            asyncio.run(runs())
    figures.add(
        "chat.send to first token (ms)", statistics.median(gateway_ms), statistics.median(local_ms)
    )
    progress(f"  first token: {sends} sends each way")


def render(figures: Figures) -> None:
    """The table of medians and ratios."""
    table = Table(title="gateway (medians)")
    for column in ("figure", "ledgerclaw", "baseline", "ratio"):
        table.add_column(column, justify="left" if column == "figure" else "right")
    for name, (ours, theirs) in figures.rows.items():
        mine, base = statistics.median(ours), statistics.median(theirs)
        table.add_row(name, f"{mine:,.1f}", f"{base:,.1f}", f"{mine / base:.2f}x")
    Console().print(table)
    print(
        "baselines: the bare websockets server for fan-out; the same run in-process for the"
        " first token (a ratio above 1 there is the gateway's added latency)."
    )
    print(f"load average: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")


def report_figures(figures: Figures) -> None:
    """Hand each median and its baseline's to `bench/all.py`, with no aim."""
    for name, (ours, theirs) in figures.rows.items():
        label, _, unit = name.rpartition(" (")
        fan_out = "fan-out" in label
        report(
            f"gateway {label}",
            statistics.median(ours),
            unit.rstrip(")"),
            baseline=statistics.median(theirs),
            baseline_name="bare websockets server" if fan_out else "the same run in-process",
            script="gateway.py",
        )


def main() -> None:
    """Parse the options, run the cases, print the table."""
    if len(sys.argv) == 3 and sys.argv[1] == BARE:
        serve_bare(int(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=2000, help="words streamed per live send")
    parser.add_argument("--sends", type=int, default=30, help="sends timed for the first token")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case")
    parser.add_argument("--quick", action="store_true", help="200 words, 5 sends, 1 run")
    args = parser.parse_args()
    words, sends, repeat = (200, 5, 1) if args.quick else (args.words, args.sends, args.repeat)
    figures = Figures({})
    for number in range(1, repeat + 1):
        progress(f"repeat {number} of {repeat}")
        fan_out_case(figures, words, replay_runs=3 if args.quick else 20)
        first_token_case(figures, sends)
    render(figures)
    report_figures(figures)


if __name__ == "__main__":
    main()
