"""Upstream servers nobody here wrote, behind a real daemon: states, the CLI, the proxy."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    http_client,
    result_text,
    run_cli,
    start_daemon,
    wait_for,
    write_config,
)
from tests.integration.daemon.journal_view import events
from tests.integration.daemon.scenarios import saw_list_changed

TIME = f'command = "{sys.executable}"\nargs = ["-m", "mcp_server_time", "--local-timezone", "UTC"]'


def _servers(home: Path) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in cli_json(home, "mcp", "list")}


def _start(tmp_path: Path) -> RunningDaemon:
    """A daemon with `time` (trusted read-only), `clock` (asks), a missing and an off server."""
    home = tmp_path / "home"
    write_config(
        home,
        f"""
[daemon]
projection_interval_seconds = 0.1

[tools]
approval_timeout_seconds = 20

[mcp]
proxy = true

[mcp.servers.time]
transport = "stdio"
{TIME}
trust_read_only = true

[mcp.servers.clock]
transport = "stdio"
{TIME}
deny = ["convert_time"]

[mcp.servers.missing]
transport = "stdio"
command = "{tmp_path}/no-such-server"

[mcp.servers.off]
transport = "stdio"
command = "true"
enabled = false
""",
    )
    running = start_daemon(home)
    running.pair()
    wait_for(
        lambda: (
            _servers(home)["time"]["state"] == "connected"
            and _servers(home)["clock"]["state"] == "connected"
            and _servers(home)["missing"]["state"] == "backoff"
        ),
        timeout=30,
        what="the upstream servers to settle",
    )
    return running


@pytest.fixture(scope="module")
def shared_daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """One such daemon for the tests that only read and call."""
    running = _start(tmp_path_factory.mktemp("upstream"))
    yield running
    running.stop(signal.SIGKILL if running.process.poll() is None else signal.SIGTERM)


@pytest.fixture
def upstream_daemon(tmp_path: Path) -> Iterator[RunningDaemon]:
    """Such a daemon of its own, for a test that reloads and stops it."""
    running = _start(tmp_path)
    yield running
    running.stop(signal.SIGKILL if running.process.poll() is None else signal.SIGTERM)


def test_mcp_list_shows_each_state_with_its_reason(shared_daemon: RunningDaemon) -> None:
    """Connected servers count their tools; a missing command backs off; off is disabled."""
    rows = _servers(shared_daemon.home)

    assert ("connected", 2) == (rows["time"]["state"], rows["time"]["tools"])
    assert ("connected", 1) == (rows["clock"]["state"], rows["clock"]["tools"])
    assert "disabled" == rows["off"]["state"]
    missing = rows["missing"]
    assert "no-such-server" in missing["last_error"]
    assert 0 < missing["next_retry_seconds"] <= 72
    listed = run_cli(shared_daemon.home, "mcp", "list")
    assert 0 == listed.returncode, listed.stderr
    assert "backoff" in listed.stdout
    assert "connected" in listed.stdout


def test_mcp_status_and_tools_read_the_journal(shared_daemon: RunningDaemon) -> None:
    """`mcp status` tells the state changes; `mcp tools` the catalog, named SERVER/TOOL."""
    home = shared_daemon.home
    status = cli_json(home, "mcp", "status", "missing")
    tools = {row["name"]: row for row in cli_json(home, "mcp", "tools", "time")}
    clock = [row["name"] for row in cli_json(home, "mcp", "tools", "clock")]

    assert ["connecting", "backoff"] == [change["state"] for change in status["history"][:2]]
    assert "transport_or_session" == status["history"][1]["failure"]
    assert {"time/get_current_time", "time/convert_time"} == set(tools)
    assert "none" == tools["time/get_current_time"]["approval"]
    assert ["clock/get_current_time"] == clock
    unknown = run_cli(home, "mcp", "status", "nope")
    assert 6 == unknown.returncode
    assert "no upstream server named nope" in unknown.stderr


@pytest.mark.anyio
async def test_a_proxied_upstream_tool_is_deferred_then_loaded_and_called(
    shared_daemon: RunningDaemon,
) -> None:
    """The proxy offers `time/...` after load_tool; the call is governed and journaled."""
    async with http_client(shared_daemon) as client:
        before = {tool.name for tool in (await client.list_tools()).tools}
        loaded = await client.call_tool("load_tool", {"name": "time/get_current_time"})
        after = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("time/get_current_time", {"timezone": "UTC"})
        invalid = await client.call_tool("time/get_current_time", {"zone": 3})
    session_id = (result.meta or {})["ledgerclaw/session_id"]
    [receipt, refused] = events(shared_daemon.home, session_id, "session.receipt_recorded")[-2:]

    assert "time/get_current_time" not in before
    assert not loaded.is_error, result_text(loaded)
    assert "time/get_current_time" in after
    assert not result.is_error, result_text(result)
    assert '"timezone": "UTC"' in result_text(result)
    assert {"server": "time", "tool": "get_current_time"} == {
        k: receipt["upstream"][k] for k in ("server", "tool")
    }
    assert "invalid_input" == refused["outcome"]
    assert invalid.is_error


@pytest.mark.anyio
async def test_an_untrusted_upstream_call_waits_for_approval(
    shared_daemon: RunningDaemon,
) -> None:
    """A tool of a server whose read-only marks are not trusted runs only once approved."""
    home = shared_daemon.home
    listed: list[dict[str, Any]] = []

    def operator() -> None:
        wait_for(lambda: bool(cli_json(home, "approvals", "list")), what="a pending approval")
        listed.extend(cli_json(home, "approvals", "list"))
        done = run_cli(home, "approvals", "approve", listed[0]["id"][:12])
        assert 0 == done.returncode, done.stderr

    thread = threading.Thread(target=operator)
    thread.start()
    async with http_client(shared_daemon) as client:
        await client.call_tool("load_tool", {"name": "clock/get_current_time"})
        result = await client.call_tool("clock/get_current_time", {"timezone": "UTC"})
    thread.join()

    assert "clock/get_current_time" == listed[0]["tool"]
    assert not result.is_error, result_text(result)


def test_reload_reconnects_a_server_and_a_stop_leaves_the_last_state(
    upstream_daemon: RunningDaemon,
) -> None:
    """`mcp reload` starts a new attempt at once; without a daemon the journal still answers."""
    home = upstream_daemon.home
    failures = len(cli_json(home, "mcp", "status", "missing")["history"])
    reloaded = cli_json(home, "mcp", "reload", "missing")
    wait_for(
        lambda: len(cli_json(home, "mcp", "status", "missing")["history"]) >= failures + 2,
        what="a new attempt after the reload",
    )
    unknown = run_cli(home, "mcp", "reload", "nope")
    assert 0 == upstream_daemon.stop()
    offline = _servers(home)
    refused = run_cli(home, "mcp", "reload")

    assert {"reloaded": ["missing"]} == reloaded
    assert 6 == unknown.returncode
    assert (False, "connected") == (offline["time"]["daemon"], offline["time"]["state"])
    assert 3 == refused.returncode
    assert "no daemon is running" in refused.stderr


@pytest.mark.anyio
async def test_proxy_clients_hear_when_an_upstream_catalog_changes(tmp_path: Path) -> None:
    """A tool grown upstream reaches the daemon's MCP clients as tools/list_changed."""
    faults = Path(__file__).parents[2] / "upstream_servers" / "fault_server.py"
    home = tmp_path / "home"
    write_config(
        home,
        f"""
[mcp]
proxy = true

[mcp.servers.faults]
transport = "stdio"
command = "{sys.executable}"
args = ["{faults}"]
approval = "report"
""",
    )
    daemon = start_daemon(home)
    daemon.pair()
    messages: list[object] = []

    async def on_message(message: object) -> None:
        messages.append(message)

    try:
        wait_for(lambda: _servers(home)["faults"]["state"] == "connected", what="faults")
        async with http_client(daemon, mode="legacy", message_handler=on_message) as client:
            await client.call_tool("load_tool", {"name": "faults/grow"})
            await client.list_tools()
            messages.clear()
            grown = await client.call_tool("faults/grow", {"name": "sprout"})
            for _ in range(200):
                if saw_list_changed(messages):
                    break
                await anyio.sleep(0.05)
            loaded = await client.call_tool("load_tool", {"name": "faults/sprout"})
    finally:
        daemon.stop()

    assert "grew sprout" in result_text(grown)
    assert saw_list_changed(messages)
    assert not loaded.is_error, result_text(loaded)
