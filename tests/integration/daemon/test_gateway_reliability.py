"""Sixteen chat clients, twenty-five runs each, against one daemon: nothing lost or doubled."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from adapters.control.gateway_client import GatewayClient
from adapters.control.plane import MAX_FRAME_BYTES
from adapters.home import resolve_home
from adapters.security.host_key import load_host_key, sign_proof
from adapters.wiring.home import open_event_log
from domain.ids import SessionId
from tests.daemon_harness import RunningDaemon, cli_json, start_daemon
from tests.gateway_rig import agent_home, ended, gateway

CLIENTS = 16
RUNS = 25
RUN_WAIT = 60.0
POLICY_VIOLATION = 1008


@dataclass
class Client:
    """What one chat client did and saw."""

    session: str = ""
    sent: list[dict[str, Any]] = field(default_factory=list)
    streamed: list[dict[str, Any]] = field(default_factory=list)
    """The `session.event` payloads its subscription pushed, in arrival order."""
    seqs: list[int] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)


def script(work: Path) -> list[dict[str, Any]]:
    """One read and one answer per run, and a few answers to spare."""
    read = {"id": "c1", "name": "read_file", "arguments": {"path": str(work / "notes.md")}}
    steps: list[dict[str, Any]] = []
    for n in range(CLIENTS * RUNS):
        steps += [{"reply": {"text": "", "tool_calls": [read]}}, {"reply": {"text": f"a{n}"}}]
    return steps + [{"reply": {"text": "spare"}}] * CLIENTS


def runs_ended(client: GatewayClient, seen: Client, runs: int) -> None:
    """Collect pushed events until the subscription has shown `runs` run ends."""
    deadline = time.monotonic() + RUN_WAIT
    while time.monotonic() < deadline:
        for event in client.events(timeout=0.2):
            seen.seqs.append(event["seq"])
            if event["event"] == "session.event" and event["payload"]["session"] == seen.session:
                seen.streamed.append(event["payload"])
        if sum(e["event"] == "session.run_ended" for e in seen.streamed) >= runs:
            return
    msg = f"{seen.session} saw {runs} run ends within {RUN_WAIT} s: no"
    raise AssertionError(msg)


def chat(daemon: RunningDaemon, index: int, start: threading.Barrier) -> Client:
    """One client: a session, a subscription from the start, then its runs one by one."""
    seen = Client()
    with gateway(daemon) as client:
        seen.session = client.call("sessions.create")["session_id"]
        client.call("subscribe", {"session": seen.session, "after": 0})
        start.wait(timeout=RUN_WAIT)
        for run in range(1, RUNS + 1):
            params = {"session": seen.session, "text": f"q{run}", "client_run_id": f"{index}-{run}"}
            seen.sent.append(client.call("chat.send", params))
            runs_ended(client, seen, run)
        after, more = 0, True
        while more:
            page = client.call(
                "chat.history", {"session": seen.session, "after": after, "limit": 500}
            )
            seen.history += page["events"]
            after, more = page["next"], page["more"]
    return seen


def test_sixteen_clients_lose_nothing_and_see_nothing_twice(tmp_path: Path, work: Path) -> None:
    """Every send starts a run that ends natural; each stream equals its journal; views agree."""
    (work / "notes.md").write_text("notes")
    home = agent_home(tmp_path, work, script(work))
    # `normal` durability: what is tested is that nothing is lost or doubled between the
    # journal and the streams, not the disk; it halves the fsyncs of four hundred runs.
    config = home / "config.toml"
    config.write_text(config.read_text() + '\n[journal]\ndurability = "normal"\n')
    daemon = start_daemon(home)
    start = threading.Barrier(CLIENTS)
    try:
        with ThreadPoolExecutor(CLIENTS) as pool:
            clients = list(pool.map(lambda i: chat(daemon, i, start), range(CLIENTS)))
        errors = daemon.health()
    finally:
        assert 0 == daemon.stop()
    verified = cli_json(daemon.home, "projections", "verify", "--json")

    for seen in clients:
        assert [("started", True)] * RUNS == [(s["status"], "run_id" in s) for s in seen.sent]
        assert seen.history == [
            {k: v for k, v in e.items() if k != "session"} for e in seen.streamed
        ]
        assert list(range(1, len(seen.history) + 1)) == [e["position"] for e in seen.history]
        ends = [e["fields"]["reason"] for e in seen.history if e["event"] == "session.run_ended"]
        assert ["natural"] * RUNS == ends
        assert list(range(1, len(seen.seqs) + 1)) == seen.seqs
    assert "ok" == errors["status"]
    assert {"clean": True, "differences": []} == verified


def raw_socket(daemon: RunningDaemon) -> tuple[Connection, str]:
    """A bare WebSocket to the gateway, and the nonce of its challenge."""
    websocket = connect(f"ws://127.0.0.1:{daemon.port}/control", proxy=None, max_size=None)
    return websocket, orjson.loads(websocket.recv(timeout=10))["payload"]["nonce"]


def answer(websocket: Connection, frame: bytes | str) -> dict[str, Any]:
    """Send one raw frame and return the daemon's answer to it."""
    websocket.send(frame)
    while True:
        reply: dict[str, Any] = orjson.loads(websocket.recv(timeout=10))
        if reply["type"] == "res":  # events of the run in progress pass by
            return reply


def request(method: str, params: dict[str, Any], rid: str = "1") -> str:
    """A request frame as text."""
    return orjson.dumps({"type": "req", "id": rid, "method": method, "params": params}).decode()


def closed_with(websocket: Connection) -> int | None:
    """The close code the daemon sent, once it closed the socket."""
    try:
        while True:  # events of the run in progress may come before the close
            websocket.recv(timeout=10)
    except ConnectionClosed as closed:
        received = closed.rcvd
        return None if received is None else received.code


def barrage(daemon: RunningDaemon, key: bytes) -> list[str]:
    """Every kind of bad frame, each on the socket the protocol allows; the codes answered."""
    websocket, nonce = raw_socket(daemon)
    proof = {"proof": sign_proof(key, nonce, "gateway").model_dump()}
    assert answer(websocket, request("connect", proof))["ok"]
    frames: tuple[str | bytes, ...] = (
        "not json",
        request("no.such.method", {}, "2"),
        request("chat.send", {"session": "ses_" + "0" * 32}, "3"),
        orjson.dumps({"type": "req", "id": "4", "params": {}}).decode(),
        request("status", {}, "5"),
        b"[" + b" " * MAX_FRAME_BYTES + b"]",
    )
    codes = [answer(websocket, f).get("error", {}).get("code", "ok") for f in frames]
    assert POLICY_VIOLATION == closed_with(websocket)
    early, _ = raw_socket(daemon)
    codes.append(answer(early, request("status", {}))["error"]["code"])
    assert POLICY_VIOLATION == closed_with(early)
    replayed, _ = raw_socket(daemon)
    codes.append(answer(replayed, request("connect", proof))["error"]["code"])
    assert POLICY_VIOLATION == closed_with(replayed)
    huge, _ = raw_socket(daemon)
    codes.append(answer(huge, b"x" * (65 * 1024))["error"]["code"])
    assert POLICY_VIOLATION == closed_with(huge)
    return codes


def test_bad_frames_journal_nothing_while_the_daemon_serves_a_run(
    tmp_path: Path, work: Path
) -> None:
    """Junk on other sockets mid-run: each is refused by its code; only the run's events land."""
    home = agent_home(tmp_path, work, [{"delay": 1.5}, {"reply": {"text": "fine"}}])
    daemon = start_daemon(home)
    log = open_event_log(resolve_home({"LEDGERCLAW_HOME": str(home)}))
    try:
        with gateway(daemon) as client:
            session = client.call("sessions.create")["session_id"]
            before = log.head()
            client.call("chat.send", {"session": session, "text": "slow one"})
            codes = barrage(daemon, load_host_key(resolve_home({"LEDGERCLAW_HOME": str(home)})))
            events = ended(client, session)
            status = client.call("status")
    finally:
        assert 0 == daemon.stop()

    assert [
        "bad_frame",
        "unknown_method",
        "bad_control_request",
        "bad_frame",
        "ok",
        "bad_frame",
        "unauthenticated",
        "invalid_proof",
        "bad_frame",
    ] == codes
    written = log.batch(before, 10_000)
    assert {SessionId(session).hex} == {e.stream_id for e in written}
    assert {"reason": "natural"}.items() <= events[-1]["fields"].items()
    assert "ok" == status["status"]
