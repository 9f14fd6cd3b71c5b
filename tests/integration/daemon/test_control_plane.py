"""The control plane and pairing endpoint on a real uvicorn server, with the CLI's client."""

from __future__ import annotations

import logging
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
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
from adapters.control.pair_route import pair_route
from adapters.control.plane import ControlPlane, error_code
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
    home = ensure_home(Home(tmp_path / "home"))
    key = load_or_create_host_key(home)
    journal = SqliteJournal(home.database)
    clock = Monotonic()
    codes = PairingCodes(clock=clock)
    holder: list[ControlPlane] = []
    plane = ControlPlane(
        methods(holder), ProofVerifier(key), TokenAuthenticator(journal).authenticate
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
    """A new connection receives a challenge event with a random hex nonce at sequence 0."""
    websocket = connect(f"ws://127.0.0.1:{daemon.port}/control", proxy=None)
    frame = receive(websocket)
    websocket.close()

    assert {"type": "event", "event": "challenge", "seq": 0, "stateVersion": 0} == {
        k: v for k, v in frame.items() if k != "payload"
    }
    assert 64 == len(frame["payload"]["nonce"])
    int(frame["payload"]["nonce"], 16)


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

    assert {"role": "local", "methods": ["status"]} == ask(websocket, "connect", {"proof": proof})[
        "payload"
    ]
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

    assert {"role": "device", "device": device_id, "methods": ["status"]} == connected["payload"]
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
    assert {"code": "bad_frame", "message": "frame is not JSON"} == receive(websocket)["error"]
    websocket.send(orjson.dumps({"type": "req", "id": "7", "params": {}}).decode())
    missing_method = receive(websocket)
    assert ("7", "bad_frame") == (missing_method["id"], missing_method["error"]["code"])
    assert ask(websocket, "status", rid="8")["ok"]
    websocket.send(b"[" + b" " * (1 << 20) + b"]")
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
