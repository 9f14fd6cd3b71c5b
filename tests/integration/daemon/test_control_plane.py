"""The control plane and pairing endpoint on a real uvicorn server, with the CLI's client."""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
import uvicorn
from starlette.applications import Starlette
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect
from websockets.sync.connection import Connection

from adapters.control.client import (
    ControlError,
    DaemonNotRespondingError,
    DaemonNotRunningError,
    call_daemon,
    exchange_pairing_code,
)
from adapters.control.frames import Scope
from adapters.control.gateway_client import GatewayClient, GatewayError
from adapters.control.pair_route import pair_route
from adapters.control.plane import (
    CONNECT_TIMEOUT,
    GATEWAY_OPERATION,
    IDLE_CLOSE,
    IDLE_TIMEOUT,
    TICK_INTERVAL,
    ControlPlane,
    error_code,
)
from adapters.errors import UnknownSessionError
from adapters.home import Home, ensure_home
from adapters.hosting.daemon_lock import DaemonLock
from adapters.hosting.daemon_state import DAEMON_STATE_NAME, read_daemon_state
from adapters.journal.journal import SqliteJournal
from adapters.security.host_key import ProofVerifier, load_or_create_host_key, sign_proof
from adapters.security.pairing import (
    PairingCodeExpiredError,
    PairingCodeInvalidError,
    PairingCodes,
    TokenAuthenticator,
)
from domain.ids import DeviceId

POLICY_VIOLATION = 1008


class Monotonic:
    """A settable monotonic clock for the pairing codes."""

    now = 0.0

    def __call__(self) -> float:
        """The current instant."""
        return self.now


@dataclass
class Daemon:
    """A control plane served by uvicorn on a free loopback port."""

    home: Home
    port: int
    plane: ControlPlane
    journal: SqliteJournal
    codes: PairingCodes
    clock: Monotonic
    key: bytes


def methods(plane: list[ControlPlane]) -> dict[str, Any]:
    """Control methods for the tests: plain, failing, slow and publishing ones."""

    async def status(_: dict[str, Any]) -> dict[str, Any]:
        return {"running": True}

    async def echo(params: dict[str, Any]) -> dict[str, Any]:
        return {"params": params}

    async def missing(_: dict[str, Any]) -> dict[str, Any]:
        raise UnknownSessionError("no session matches 'ses_x'")

    async def boom(_: dict[str, Any]) -> dict[str, Any]:
        msg = "secret internals"
        raise RuntimeError(msg)

    async def slow(_: dict[str, Any]) -> dict[str, Any]:
        await anyio.sleep(1.0)
        return {}

    async def notify(params: dict[str, Any]) -> dict[str, Any]:
        await plane[0].publish("ping", params)
        return {}

    return {
        "status": status,
        "echo": echo,
        "missing": missing,
        "boom": boom,
        "slow": slow,
        "notify": notify,
    }


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    """A running control plane with its state file written in the home."""
    with serving(tmp_path) as running:
        yield running


@pytest.fixture
def quick_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """As `daemon`, with a 0.5 s connect timeout, ticks every 0.2 s and a 1 s idle timeout."""
    with serving(tmp_path, connect_timeout=0.5, tick_interval=0.2, idle_timeout=1.0) as running:
        yield running


@contextmanager
def serving(
    tmp_path: Path,
    connect_timeout: float = CONNECT_TIMEOUT,
    tick_interval: float = TICK_INTERVAL,
    idle_timeout: float = IDLE_TIMEOUT,
) -> Iterator[Daemon]:
    """A control plane served on a free loopback port, with its state file in the home."""
    home = ensure_home(Home(tmp_path / "home"))
    key = load_or_create_host_key(home)
    journal = SqliteJournal(home.database)
    clock = Monotonic()
    codes = PairingCodes(clock=clock)
    holder: list[ControlPlane] = []
    plane = ControlPlane(
        methods(holder),
        ProofVerifier(key),
        TokenAuthenticator(journal).authenticate,
        method_scopes={"status": Scope.READ},
        connect_timeout=connect_timeout,
        tick_interval=tick_interval,
        idle_timeout=idle_timeout,
    )
    holder.append(plane)
    app = Starlette(routes=[plane.route(), pair_route(codes, journal)])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]})
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    lock = DaemonLock(home)
    lock.acquire(port)
    yield Daemon(home, port, plane, journal, codes, clock, key)
    lock.release()
    server.should_exit = True
    thread.join(timeout=10)
    listener.close()
    journal.close()


def open_socket(daemon: Daemon) -> tuple[Connection, str]:
    """A raw connection to the control socket and the nonce of its challenge."""
    websocket = connect(f"ws://127.0.0.1:{daemon.port}/control", proxy=None, open_timeout=5)
    challenge = receive(websocket)
    return websocket, challenge["payload"]["nonce"]


def receive(websocket: Connection) -> dict[str, Any]:
    """The next frame."""
    frame: dict[str, Any] = orjson.loads(websocket.recv(timeout=5))
    return frame


def ask(websocket: Connection, method: str, params: object = None, rid: str = "1") -> Any:
    """Send a request and return its answer, skipping pushed events."""
    frame = {"type": "req", "id": rid, "method": method, "params": params or {}}
    websocket.send(orjson.dumps(frame).decode())
    while (answer := receive(websocket))["type"] != "res":
        pass
    return answer


def assert_closed(websocket: Connection) -> None:
    """The server closed the connection as a policy violation."""
    with pytest.raises(ConnectionClosed) as closed:
        websocket.recv(timeout=5)
    assert closed.value.rcvd is not None
    assert POLICY_VIOLATION == closed.value.rcvd.code


def paired_token(daemon: Daemon, name: str = "Pixel") -> tuple[str, str]:
    """A device paired over HTTP with a fresh code."""
    return exchange_pairing_code(daemon.port, daemon.codes.issue(None).code, name)


def test_the_first_frame_is_a_challenge(daemon: Daemon) -> None:
    """A new connection receives `connect.challenge` with a random hex nonce and the time."""
    websocket = connect(f"ws://127.0.0.1:{daemon.port}/control", proxy=None)
    frame = receive(websocket)
    websocket.close()

    assert {"type": "event", "event": "connect.challenge", "seq": 0, "stateVersion": 0} == {
        k: v for k, v in frame.items() if k != "payload"
    }
    assert 64 == len(frame["payload"]["nonce"])
    int(frame["payload"]["nonce"], 16)
    assert abs(time.time() * 1000 - frame["payload"]["ts"]) < 60_000


def test_the_client_runs_an_operation_with_a_proof(daemon: Daemon) -> None:
    """call_daemon signs a proof with the host key and returns the operation's payload."""
    assert {"running": True} == call_daemon(daemon.home, "status")
    assert {"params": {"x": [1]}} == call_daemon(daemon.home, "echo", {"x": [1]})
    assert 0 == daemon.plane.refused


def test_the_client_reaches_a_daemon_on_a_given_port(daemon: Daemon) -> None:
    """With an explicit port the state file is not needed."""
    (daemon.home.root / DAEMON_STATE_NAME).unlink()

    assert {"running": True} == call_daemon(daemon.home, "status", port=daemon.port)


def test_a_proof_connection_may_call_only_its_operation(daemon: Daemon) -> None:
    """After a proof for `status`, status answers again and again and echo is forbidden."""
    websocket, nonce = open_socket(daemon)
    proof = sign_proof(daemon.key, nonce, "status").model_dump()

    hello = ask(websocket, "connect", {"proof": proof})["payload"]
    assert ("local", ["status"], 1) == (hello["role"], hello["methods"], hello["protocol"])
    assert ["operator.read", "operator.write", "operator.approvals"] == hello["scopes"]
    assert "forbidden" == ask(websocket, "echo", rid="2")["error"]["code"]
    assert ask(websocket, "status", rid="3")["ok"]
    assert ask(websocket, "status", rid="4")["ok"]
    assert "already_connected" == ask(websocket, "connect", {"proof": proof})["error"]["code"]
    websocket.close()


@pytest.mark.parametrize(
    ("key", "age", "reason"),
    [
        (bytes(32), None, "host key"),
        (None, 100.0, "expired"),
    ],
    ids=["other-key", "expired"],
)
def test_a_bad_proof_is_refused_and_the_connection_closed(
    daemon: Daemon, key: bytes | None, age: float | None, reason: str
) -> None:
    """A proof signed with another key, or expired, is refused, counted and disconnected."""
    websocket, nonce = open_socket(daemon)
    signed_at = None if age is None else time.time() - age
    proof = sign_proof(key or daemon.key, nonce, "status", now=signed_at)

    answer = ask(websocket, "connect", {"proof": proof.model_dump()})

    assert "invalid_proof" == answer["error"]["code"]
    assert reason in answer["error"]["message"]
    assert_closed(websocket)
    assert 1 == daemon.plane.refused


def test_a_proof_replayed_on_another_connection_is_refused(daemon: Daemon) -> None:
    """A proof answers one connection's challenge; another connection refuses it."""
    first, nonce = open_socket(daemon)
    proof = {"proof": sign_proof(daemon.key, nonce, "status").model_dump()}
    assert ask(first, "connect", proof)["ok"]
    second, _ = open_socket(daemon)

    answer = ask(second, "connect", proof)

    assert "invalid_proof" == answer["error"]["code"]
    assert "another challenge" in answer["error"]["message"]
    assert_closed(second)
    first.close()


def test_a_malformed_proof_is_refused(daemon: Daemon) -> None:
    """A proof object of the wrong shape is an invalid proof, not a crash."""
    websocket, nonce = open_socket(daemon)

    answer = ask(websocket, "connect", {"proof": {"nonce": nonce, "operation": "status"}})

    assert "invalid_proof" == answer["error"]["code"]
    assert_closed(websocket)


def test_a_request_before_connect_is_refused_and_closed(daemon: Daemon) -> None:
    """Anything but connect before connect is `unauthenticated`, and the socket closes."""
    websocket, _ = open_socket(daemon)

    assert "unauthenticated" == ask(websocket, "status")["error"]["code"]
    assert_closed(websocket)
    assert 1 == daemon.plane.refused


def test_a_paired_device_may_call_only_the_device_methods(daemon: Daemon) -> None:
    """A device token connects as that device; status answers, other methods are forbidden."""
    device_id, token = paired_token(daemon)
    websocket, _ = open_socket(daemon)

    connected = ask(websocket, "connect", {"token": token})

    hello = connected["payload"]
    assert ("device", device_id, ["status"]) == (
        hello["role"],
        hello["device"],
        hello["methods"],
    )
    assert ["operator.read"] == hello["scopes"]
    assert {"running": True} == ask(websocket, "status", rid="2")["payload"]
    assert "forbidden" == ask(websocket, "echo", rid="3")["error"]["code"]
    websocket.close()


def test_a_token_revoked_by_another_process_is_refused_on_the_next_connect(
    daemon: Daemon,
) -> None:
    """A revocation written by a second journal on the same file refuses the next connect."""
    device_id, token = paired_token(daemon)
    first, _ = open_socket(daemon)
    assert ask(first, "connect", {"token": token})["ok"]
    first.close()
    cli = SqliteJournal(daemon.home.database)
    cli.update_devices(lambda registry: registry.revoke(DeviceId(device_id), datetime.now(UTC)))
    cli.close()
    second, _ = open_socket(daemon)

    answer = ask(second, "connect", {"token": token})

    assert "device_revoked" == answer["error"]["code"]
    assert_closed(second)
    assert 1 == daemon.plane.refused


def test_an_unknown_token_is_refused(daemon: Daemon) -> None:
    """A token that names no paired device is refused with invalid_device_token."""
    websocket, _ = open_socket(daemon)

    answer = ask(websocket, "connect", {"token": "dev_" + "0" * 32 + "." + "s" * 43})

    assert "invalid_device_token" == answer["error"]["code"]
    assert_closed(websocket)


def test_malformed_frames_are_answered_until_the_third(daemon: Daemon) -> None:
    """Bad frames get `bad_frame` and the socket stays usable; the third bad frame closes it."""
    websocket, nonce = open_socket(daemon)
    ask(websocket, "connect", {"proof": sign_proof(daemon.key, nonce, "status").model_dump()})

    websocket.send("not json")
    not_json = {"code": "bad_frame", "message": "frame is not JSON", "retryable": False}
    assert not_json == receive(websocket)["error"]
    websocket.send(orjson.dumps({"type": "req", "id": "7", "params": {}}).decode())
    missing_method = receive(websocket)
    assert ("7", "bad_frame") == (missing_method["id"], missing_method["error"]["code"])
    assert ask(websocket, "status", rid="8")["ok"]
    websocket.send(b"[" + b" " * (12 << 20) + b"]")
    assert "larger than" in receive(websocket)["error"]["message"]
    assert_closed(websocket)


def test_an_unknown_method_is_answered_and_the_socket_stays_open(daemon: Daemon) -> None:
    """A method the daemon does not have gets unknown_method; later requests still work."""
    websocket, nonce = open_socket(daemon)
    ask(websocket, "connect", {"proof": sign_proof(daemon.key, nonce, "status").model_dump()})

    assert "unknown_method" == ask(websocket, "nope", rid="2")["error"]["code"]
    assert ask(websocket, "status", rid="3")["ok"]
    websocket.close()


def test_handler_errors_become_codes_without_internals(
    daemon: Daemon, caplog: pytest.LogCaptureFixture
) -> None:
    """A typed error keeps its message under a snake_case code; any other is `internal`."""
    with pytest.raises(ControlError) as typed:
        call_daemon(daemon.home, "missing")
    with caplog.at_level(logging.ERROR), pytest.raises(ControlError) as untyped:
        call_daemon(daemon.home, "boom")

    assert ("unknown_session", 6) == (typed.value.code, typed.value.exit_code)
    assert "ses_x" in str(typed.value)
    assert "internal" == untyped.value.code
    assert "secret internals" not in str(untyped.value)
    assert any(record.exc_info for record in caplog.records)


def test_published_events_reach_connected_clients_in_order(daemon: Daemon) -> None:
    """Every authenticated connection gets published events with a rising sequence."""
    _, token = paired_token(daemon)
    websocket, _ = open_socket(daemon)
    ask(websocket, "connect", {"token": token})
    waiting, _ = open_socket(daemon)

    call_daemon(daemon.home, "notify", {"n": 1})
    call_daemon(daemon.home, "notify", {"n": 2})

    frames = [receive(websocket), receive(websocket)]
    assert [(1, {"n": 1}), (2, {"n": 2})] == [(f["seq"], f["payload"]) for f in frames]
    assert {"ping"} == {f["event"] for f in frames}
    assert [1, 2] == [f["stateVersion"] for f in frames]
    with pytest.raises(TimeoutError):
        waiting.recv(timeout=0.2)
    websocket.close()
    waiting.close()


def test_the_client_reports_a_missing_daemon(daemon: Daemon, tmp_path: Path) -> None:
    """No state file, or a port where nothing listens, means no daemon is running."""
    empty = ensure_home(Home(tmp_path / "other"))
    with pytest.raises(DaemonNotRunningError, match="ledgerclaw daemon run") as caught:
        call_daemon(empty, "status")
    assert 3 == caught.value.exit_code

    spare = socket.socket()
    spare.bind(("127.0.0.1", 0))
    port = spare.getsockname()[1]
    spare.close()
    state = {"pid": 1, "port": port, "started_at": "now"}
    (daemon.home.root / DAEMON_STATE_NAME).write_bytes(orjson.dumps(state))
    with pytest.raises(DaemonNotRunningError):
        call_daemon(daemon.home, "status")


def test_the_client_gives_up_on_a_slow_daemon(daemon: Daemon) -> None:
    """An answer later than the timeout is DaemonNotRespondingError."""
    with pytest.raises(DaemonNotRespondingError, match="did not answer"):
        call_daemon(daemon.home, "slow", timeout=0.3)


@pytest.mark.parametrize("content", [b"", b"\n", b"{not json", b'{"pid": 1}', b"[]"])
def test_an_unreadable_state_file_means_no_daemon(tmp_path: Path, content: bytes) -> None:
    """An empty, unparsable or incomplete state file reads as no daemon."""
    home = ensure_home(Home(tmp_path / "home"))
    (home.root / DAEMON_STATE_NAME).write_bytes(content)

    assert read_daemon_state(home) is None


def test_pairing_over_http_returns_a_token_once(daemon: Daemon) -> None:
    """POST /pair with the current code returns 200, a device id and its token; reuse is 400."""
    code = daemon.codes.issue(None).code

    device_id, token = exchange_pairing_code(daemon.home, code.lower(), "Pixel")

    assert token.startswith(f"{device_id}.")
    assert "Pixel" == daemon.journal.devices().devices[DeviceId(device_id)].display_name
    with pytest.raises(PairingCodeInvalidError):
        exchange_pairing_code(daemon.home, code, "Pixel")


def test_the_operators_name_wins_and_the_default_is_device(daemon: Daemon) -> None:
    """A name given with `daemon pair` beats the request's; with neither, the name is "device"."""
    named, _ = exchange_pairing_code(daemon.port, daemon.codes.issue("Work laptop").code, "X")
    unnamed, _ = exchange_pairing_code(daemon.port, daemon.codes.issue(None).code)

    devices = daemon.journal.devices().devices
    assert "Work laptop" == devices[DeviceId(named)].display_name
    assert "device" == devices[DeviceId(unnamed)].display_name


def test_an_expired_code_is_gone_with_410(daemon: Daemon) -> None:
    """After five minutes the code is refused with 410, re-raised as PairingCodeExpiredError."""
    code = daemon.codes.issue(None).code
    daemon.clock.now += 300

    with pytest.raises(PairingCodeExpiredError, match="ledgerclaw daemon pair"):
        exchange_pairing_code(daemon.port, code, "Pixel")


def post(daemon: Daemon, body: bytes, content_type: str = "application/json") -> tuple[int, Any]:
    """POST raw bytes to /pair and return the status and the JSON body."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{daemon.port}/pair",
        data=body,
        headers={"Content-Type": content_type},
        method="POST",
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=5) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as error:
        with error:
            return error.code, orjson.loads(error.read())


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"{not json", "application/json"),
        (b'{"code": 5}', "application/json"),
        (b'{"code": "' + b"A" * 65 + b'"}', "application/json"),
        (b'{"code": "AAAA-AAAA", "name": ""}', "application/json"),
        (b'{"code": "AAAA-AAAA", "name": "' + b"n" * 101 + b'"}', "application/json"),
        (b'{"code": "AAAA-AAAA", "extra": 1}', "application/json"),
        (b'{"code": "AAAA-AAAA"}', "text/plain"),
        (b'{"code": "' + b" " * 5000 + b'"}', "application/json"),
    ],
)
def test_a_malformed_pairing_request_is_400_without_internals(
    daemon: Daemon, body: bytes, content_type: str
) -> None:
    """Bad JSON, wrong types, bad lengths, extra fields and non-JSON bodies get a plain 400."""
    code = daemon.codes.issue(None)

    status, answer = post(daemon, body, content_type)

    assert 400 == status
    assert "bad_request" == answer["error"]["code"]
    assert "Traceback" not in answer["error"]["message"]
    assert code == daemon.codes.consume(code.code)


def test_the_clients_error_codes_match_the_servers() -> None:
    """The codes the client maps back to pairing errors are those the server derives."""
    assert "pairing_code_expired" == error_code(PairingCodeExpiredError)
    assert "pairing_code_invalid" == error_code(PairingCodeInvalidError)
    assert "unknown_session" == error_code(UnknownSessionError)


# -- the gateway handshake ------------------------------------------------------------------


def drain(websocket: Connection) -> None:
    """Read frames until the server closes the connection."""
    while True:
        websocket.recv(timeout=5)


def gateway_proof(daemon: Daemon, nonce: str) -> dict[str, Any]:
    """A local-control proof for the `gateway` operation, which opens every method."""
    return sign_proof(daemon.key, nonce, GATEWAY_OPERATION).model_dump()


def test_connect_answers_the_version_methods_events_limits_and_position(daemon: Daemon) -> None:
    """The hello names protocol 1, what is offered, the limits and the journal position."""
    websocket, nonce = open_socket(daemon)

    hello = ask(websocket, "connect", {"proof": gateway_proof(daemon, nonce)})["payload"]
    websocket.close()

    assert 1 == hello["protocol"]
    assert sorted(methods([])) == hello["methods"]
    assert ["connect.challenge", "tick"] == hello["events"]
    assert {
        "max_frame_bytes": 12 << 20,
        "pre_connect_max_bytes": 64 * 1024,
        "max_buffered_bytes": 4 << 20,
        "tick_interval_ms": 15_000,
        "idle_timeout_ms": 60_000,
        "connect_timeout_ms": 10_000,
    } == hello["limits"]
    assert 0 == hello["journal_position"]


def test_a_client_whose_versions_exclude_the_daemons_is_refused_and_closed(
    daemon: Daemon,
) -> None:
    """Protocol 2 to 3 against a daemon of protocol 1: `unsupported_protocol`, then 1008."""
    websocket, nonce = open_socket(daemon)
    params = {"proof": gateway_proof(daemon, nonce), "min_protocol": 2, "max_protocol": 3}

    answer = ask(websocket, "connect", params)

    assert "unsupported_protocol" == answer["error"]["code"]
    assert "speaks protocol 1" in answer["error"]["message"]
    assert_closed(websocket)


def test_scopes_asked_for_narrow_the_connection(daemon: Daemon) -> None:
    """Asking for `operator.read` only: status answers, a write method is `missing_scope`."""
    websocket, nonce = open_socket(daemon)
    params = {"proof": gateway_proof(daemon, nonce), "scopes": ["operator.read"]}

    hello = ask(websocket, "connect", params)["payload"]
    refused = ask(websocket, "echo", rid="2")["error"]
    websocket.close()

    assert ["operator.read"] == hello["scopes"]
    assert "missing_scope" == refused["code"]
    assert "needs the scope operator.write" in refused["message"]


def test_a_malformed_connect_is_refused_and_closed(daemon: Daemon) -> None:
    """Unknown fields and bad values in `connect` are `bad_connect`, naming the field."""
    websocket, nonce = open_socket(daemon)
    params = {"proof": gateway_proof(daemon, nonce), "scopes": ["operator.everything"]}

    answer = ask(websocket, "connect", params)

    assert "bad_connect" == answer["error"]["code"]
    assert "connect: scopes.0:" in answer["error"]["message"]
    assert_closed(websocket)


def test_a_frame_over_64_kib_before_connect_closes_the_socket(daemon: Daemon) -> None:
    """Before connect a stranger may not send large frames: one is answered, then 1008."""
    websocket, _ = open_socket(daemon)

    websocket.send(b"[" + b" " * (64 * 1024) + b"]")

    assert "larger than 65536 bytes" in receive(websocket)["error"]["message"]
    assert_closed(websocket)


def test_no_connect_within_the_timeout_closes_the_socket(quick_daemon: Daemon) -> None:
    """A connection that never sends `connect` is closed with 1008 after the timeout."""
    websocket, _ = open_socket(quick_daemon)

    assert_closed(websocket)


def test_a_connected_peer_gets_ticks_and_a_silent_one_is_dropped(quick_daemon: Daemon) -> None:
    """Ticks come numbered in order; after the idle timeout without a frame, close 4408."""
    websocket, nonce = open_socket(quick_daemon)
    ask(websocket, "connect", {"proof": gateway_proof(quick_daemon, nonce)})

    ticks = [receive(websocket) for _ in range(2)]
    with pytest.raises(ConnectionClosed) as closed:
        drain(websocket)

    assert ["tick", "tick"] == [t["event"] for t in ticks]
    assert ticks[0]["seq"] + 1 == ticks[1]["seq"]
    assert closed.value.rcvd is not None
    assert (IDLE_CLOSE, "idle_timeout") == (closed.value.rcvd.code, closed.value.rcvd.reason)


# -- the gateway client ---------------------------------------------------------------------


def test_the_gateway_client_connects_calls_and_keeps_the_events(daemon: Daemon) -> None:
    """With the host key it connects as `gateway`; events pushed meanwhile are kept in order."""
    with GatewayClient.open(daemon.port, key=daemon.key) as client:
        client.call("notify", {"n": 1})
        client.call("notify", {"n": 2})
        pushed = [e for e in client.events(timeout=0.5) if e["event"] == "ping"]

        assert ("local", 1) == (client.hello["role"], client.hello["protocol"])
    assert [{"n": 1}, {"n": 2}] == [e["payload"] for e in pushed]
    assert pushed[0]["seq"] + 1 == pushed[1]["seq"]


def test_the_gateway_client_raises_the_daemons_refusals_with_their_hints(daemon: Daemon) -> None:
    """A failing method is `internal` and retryable; a missing one is not retryable."""
    with GatewayClient.open(daemon.port, key=daemon.key) as client:
        with pytest.raises(GatewayError) as failed:
            client.call("boom")
        with pytest.raises(GatewayError) as unknown:
            client.call("nope")

    assert ("internal", True) == (failed.value.code, failed.value.retryable)
    assert "secret internals" not in str(failed.value)
    assert ("unknown_method", False) == (unknown.value.code, unknown.value.retryable)


def test_the_gateway_client_connects_a_device_by_token(daemon: Daemon) -> None:
    """A paired device's token connects it; what it may not call is refused `forbidden`."""
    device_id, token = paired_token(daemon)

    with GatewayClient.open(daemon.port, token=token) as client:
        assert {"running": True} == client.call("status")
        with pytest.raises(GatewayError, match="may not call") as refused:
            client.call("echo")

        assert device_id == client.hello["device"]
    assert "forbidden" == refused.value.code


def test_a_cancel_ends_a_request_in_flight_while_others_are_answered(daemon: Daemon) -> None:
    """A slow request is cancelled by its id; a status sent after it is answered first."""
    websocket, nonce = open_socket(daemon)
    ask(websocket, "connect", {"proof": gateway_proof(daemon, nonce)})

    websocket.send(orjson.dumps({"type": "req", "id": "s", "method": "slow"}).decode())
    websocket.send(orjson.dumps({"type": "req", "id": "q", "method": "status"}).decode())
    first = receive(websocket)
    websocket.send(orjson.dumps({"type": "cancel", "id": "s"}).decode())
    second = receive(websocket)
    websocket.close()

    assert ("q", True) == (first["id"], first["ok"])
    assert ("s", "cancelled") == (second["id"], second["error"]["code"])


def test_a_request_id_still_in_flight_cannot_be_reused(daemon: Daemon) -> None:
    """Two requests with one id at once: the second is refused `duplicate_id`."""
    websocket, nonce = open_socket(daemon)
    ask(websocket, "connect", {"proof": gateway_proof(daemon, nonce)})

    for _ in range(2):
        websocket.send(orjson.dumps({"type": "req", "id": "x", "method": "slow"}).decode())
    answers = [receive(websocket), receive(websocket)]
    websocket.close()

    assert ["duplicate_id", None] == [a.get("error", {}).get("code") for a in answers]
