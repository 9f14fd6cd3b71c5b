"""Stateless HTTP sessions: keyed by device, client name and `Ledgerclaw-Session-Key`."""

from __future__ import annotations

import signal
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from adapters.config.loading import load_config
from adapters.errors import ConfigError
from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    result_meta,
    result_text,
    run_cli,
    start_daemon,
    wait_for,
    write_governed_config,
)
from tests.integration.daemon.journal_view import events

CLIENT = types.Implementation(name="build-agent", version="1.0")
COLUMNS = {"device", "client", "session"}


@pytest.fixture(scope="module")
def quiet_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """A daemon with one paired device, shared by tests that open no session."""
    base = tmp_path_factory.mktemp("session-keys")
    work = (base / "work").resolve()
    work.mkdir()
    write_governed_config(base / "home", work)
    running = start_daemon(base / "home")
    running.pair()
    yield running
    running.stop(signal.SIGKILL if running.process.poll() is None else signal.SIGTERM)


@asynccontextmanager
async def stateless_client(daemon: RunningDaemon, session_key: str | None) -> AsyncIterator[Client]:
    """A modern-era official client as `build-agent`, naming its session when given a key."""
    headers = {"authorization": f"Bearer {daemon.token}"}
    if session_key is not None:
        headers["ledgerclaw-session-key"] = session_key
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))
    transport = streamable_http_client(daemon.url, http_client=http)
    async with http, Client(transport, mode="auto", client_info=CLIENT) as client:
        yield client


def operator(home: Path, session: str, *decision: str) -> tuple[threading.Thread, list[Any]]:
    """Wait for an approval of the session named `session`, list it, then decide it."""
    listed: list[Any] = []

    def decide() -> None:
        def pending() -> bool:
            rows = cli_json(home, "approvals", "list")
            return any(row["session"] == session for row in rows)

        wait_for(pending, what=f"an approval in {session}")
        listed.extend(cli_json(home, "approvals", "list"))
        done = run_cli(home, "approvals", *decision, listed[0]["id"])
        assert 0 == done.returncode, done.stderr
        listed[0]["decided"] = done.stdout

    thread = threading.Thread(target=decide)
    thread.start()
    return thread, listed


@pytest.mark.anyio
async def test_a_session_grant_under_one_session_key_does_not_cover_another(
    daemon: RunningDaemon, work: Path
) -> None:
    """Same device and client, two session keys: two sessions; a session grant stays in one."""
    write = {"path": str(work / "out.txt"), "content": "x\n"}
    thread, listed = operator(daemon.home, "session key ci-a", "approve", "--session-scope")
    async with stateless_client(daemon, "ci-a") as first:
        granted = await first.call_tool("write_file", write)
        again = await first.call_tool("write_file", write)
    thread.join()
    thread, asked = operator(daemon.home, "session key ci-b", "deny")
    async with stateless_client(daemon, "ci-b") as second:
        other = await second.call_tool("write_file", write)
    thread.join()

    assert (False, False) == (granted.is_error, again.is_error), result_text(granted)
    assert other.is_error
    assert "approval_rejected" == result_meta(other)["ledgerclaw/denial"]
    first_id = result_meta(granted)["ledgerclaw/session_id"]
    assert first_id == result_meta(again)["ledgerclaw/session_id"]
    assert first_id != result_meta(other)["ledgerclaw/session_id"]
    assert 1 == len(events(daemon.home, first_id, "session.approval_requested"))
    device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
    row = listed[0]
    assert (device, "build-agent", "session key ci-a") == (
        row["device"],
        row["client"],
        row["session"],
    )
    assert "Ledgerclaw-Session-Key: ci-a" in row["session_scope_covers"]
    decided = " ".join(row["decided"].split())
    assert f"for the rest of the session: {row['session_scope_covers']}" in decided
    assert device in row["session_scope_covers"]
    assert "session key ci-b" == asked[0]["session"]


@pytest.mark.anyio
async def test_clients_without_a_session_key_share_one_session_and_are_told_so(
    daemon: RunningDaemon, work: Path
) -> None:
    """No header: two processes of one device and client land in one session, as listed."""
    write = {"path": str(work / "shared.txt"), "content": "x\n"}
    thread, listed = operator(daemon.home, "shared: no session key", "approve")
    async with stateless_client(daemon, None) as first:
        written = await first.call_tool("write_file", write)
    thread.join()
    async with stateless_client(daemon, None) as second:
        listing = await second.call_tool("list_directory", {"path": str(work)})

    assert not written.is_error, result_text(written)
    assert (
        result_meta(written)["ledgerclaw/session_id"]
        == result_meta(listing)["ledgerclaw/session_id"]
    )
    assert "from any process" in listed[0]["session_scope_covers"]


def test_approvals_list_shows_device_client_and_session(daemon: RunningDaemon, work: Path) -> None:
    """The table names device, client and session, and says whom a session grant covers."""
    import anyio  # noqa: PLC0415

    shown: list[str] = []

    def look_then_deny() -> None:
        wait_for(lambda: bool(cli_json(daemon.home, "approvals", "list")), what="an approval")
        shown.append(run_cli(daemon.home, "approvals", "list").stdout)
        pending = cli_json(daemon.home, "approvals", "list")[0]["id"]
        assert 0 == run_cli(daemon.home, "approvals", "deny", pending).returncode

    async def call() -> None:
        async with stateless_client(daemon, "nightly") as client:
            await client.call_tool("write_file", {"path": str(work / "t.txt"), "content": "x"})

    thread = threading.Thread(target=look_then_deny)
    thread.start()
    anyio.run(call)
    thread.join()
    [table] = shown

    header = table.splitlines()[1].split()
    assert ["session", "device", "client"] == [w for w in header if w in COLUMNS]
    assert "build-agent" in table
    assert "nightly" in table
    device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
    [covers] = [line for line in table.splitlines() if line.startswith("--session-scope on")]
    assert covers.endswith(
        f"covers every stateless request of device {device} that declares client"
        " 'build-agent' and sends Ledgerclaw-Session-Key: nightly"
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("has space", "'has space' is not allowed"),
        ("k" * 65, "is 65 characters long"),
        ("-leading", "'-leading' is not allowed"),
    ],
    ids=["space", "too-long", "leading-dash"],
)
async def test_a_malformed_session_key_is_refused_with_the_rule(
    quiet_daemon: RunningDaemon, value: str, complaint: str
) -> None:
    """A bad header value gets 400, and the client's error says what is allowed; no session."""
    daemon = quiet_daemon
    with pytest.raises(BaseException) as caught:  # noqa: PT011 - the SDK groups its errors
        async with stateless_client(daemon, value) as client:
            await client.list_tools()
    messages = [str(e) for e in _leaves(caught.value) if isinstance(e, MCPError)]

    assert messages
    assert all(complaint in m and "letters, digits" in m for m in messages), messages
    assert [] == cli_json(daemon.home, "session", "list")


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


@pytest.mark.anyio
async def test_a_stateless_session_closes_as_idle_after_its_own_timeout(
    tmp_path: Path, work: Path
) -> None:
    """`stateless_idle_timeout_seconds = 1`: the left-behind session closes as `idle`."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    config = home / "config.toml"
    config.write_text(
        config.read_text().replace("[daemon]\n", "[daemon]\nstateless_idle_timeout_seconds = 1\n")
    )
    daemon = start_daemon(home)
    try:
        daemon.pair()
        async with stateless_client(daemon, None) as client:
            result = await client.call_tool("list_directory", {"path": str(work)})
        session_id = result_meta(result)["ledgerclaw/session_id"]
        wait_for(lambda: bool(events(home, session_id, "session.closed")), what="the idle close")

        assert "idle" == events(home, session_id, "session.closed")[0]["reason"]
        [row] = cli_json(home, "session", "list")
        assert (session_id, "closed") == (row["session_id"], row["status"])
        listing = run_cli(home, "session", "list").stdout
        assert "last activity" in listing
        assert row["last_activity_at"].replace("T", " ")[:16] in listing
    finally:
        assert 0 == daemon.stop()


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 300), ("[daemon]\nstateless_idle_timeout_seconds = 42\n", 42)],
    ids=["default", "set"],
)
def test_the_stateless_idle_timeout_defaults_to_five_minutes(
    tmp_path: Path, text: str, expected: int
) -> None:
    """`[daemon] stateless_idle_timeout_seconds` is 300 unless the config says otherwise."""
    (tmp_path / "config.toml").write_text(text)

    assert expected == load_config(tmp_path / "config.toml").daemon.stateless_idle_timeout_seconds


def test_a_stateless_idle_timeout_out_of_range_is_named(tmp_path: Path) -> None:
    """Zero seconds is refused with the key, the file and the allowed range (exit 4)."""
    path = tmp_path / "config.toml"
    path.write_text("[daemon]\nstateless_idle_timeout_seconds = 0\n")

    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert 4 == caught.value.exit_code
    assert (
        f"config {path} is invalid: daemon.stateless_idle_timeout_seconds: expected an integer"
        " from 1 to 86400, got 0"
    ) == str(caught.value)


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        (["ci-a", "ci-b"], "Ledgerclaw-Session-Key was sent 2 times; send it once"),
        ([""], "Ledgerclaw-Session-Key is empty; it must be 1 to 64 characters"),
    ],
    ids=["twice", "empty"],
)
def test_a_repeated_or_empty_session_key_gets_400_with_a_json_rpc_reason(
    quiet_daemon: RunningDaemon, values: list[str], complaint: str
) -> None:
    """The header sent twice, or empty, is a 400 whose JSON-RPC error names the problem."""
    headers = [
        ("authorization", f"Bearer {quiet_daemon.token}"),
        ("accept", "application/json, text/event-stream"),
        *(("ledgerclaw-session-key", value) for value in values),
    ]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with httpx2.Client(timeout=10) as http:
        answer = http.post(quiet_daemon.url, json=body, headers=headers)

    assert 400 == answer.status_code
    error = answer.json()["error"]
    assert -32600 == error["code"]
    assert error["message"].startswith(complaint)
