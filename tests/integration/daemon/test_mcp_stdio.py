"""`ledgerclaw mcp serve` as a real subprocess, driven by the official MCP client over stdio."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp import MCPError

from adapters.home import Home
from adapters.hosting.claims import SessionClaims
from domain.ids import SessionId
from tests.daemon_harness import (
    cli_json,
    host_status,
    http_client,
    result_meta,
    result_text,
    run_cli,
    start_daemon,
    stdio_client,
    stdio_hosts,
    wait_for,
    write_governed_config,
)
from tests.integration.daemon.journal_view import events, session_ids
from tests.integration.daemon.scenarios import exercise_every_tool, saw_list_changed

MODES = ["auto", "legacy"]


@pytest.fixture
def home(tmp_path: Path, work: Path) -> Path:
    """A home whose config trusts `work`, asks before writes and reviews `sleep`."""
    root = tmp_path / "home"
    write_governed_config(root, work)
    return root


def the_server_pid(home: Path) -> int:
    """The pid of the one `mcp serve` process registered in `home`."""
    [entry] = stdio_hosts(home)
    return entry.pid


def kill_leftover_shell(marker: Path) -> None:
    """Kill the process group of a shell whose command names `marker` (orphaned by a crash)."""
    for proc in Path("/proc").iterdir():
        try:
            command = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if proc.name.isdigit() and str(marker).encode() in command:
            try:
                os.killpg(int(proc.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_client_lists_and_calls_every_first_party_tool(
    home: Path, work: Path, mode: str
) -> None:
    """Every tool works over stdio, in both protocol eras, and each call is journaled."""
    changed: list[object] = []

    async def on_message(message: object) -> None:
        changed.append(message)

    options: dict[str, Any] = {"message_handler": on_message} if mode == "legacy" else {}
    async with stdio_client(home, mode=mode, **options) as client:
        read = await exercise_every_tool(client, work)
    if mode == "legacy":
        assert saw_list_changed(changed)
    [session_id] = session_ids(home)
    assert result_meta(read)["ledgerclaw/session_id"] == session_id
    receipts = events(home, session_id, "session.receipt_recorded")
    assert len(receipts) >= 9


@pytest.mark.anyio
async def test_a_denial_and_a_correction_carry_the_instruction(home: Path, tmp_path: Path) -> None:
    """A denied call is a tool error saying why; a correction says what to do instead.

    An unknown tool is a protocol error instead (`-32602`), as MCP specifies.
    """
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    async with stdio_client(home) as client:
        denied = await client.call_tool("read_file", {"path": str(outside)})
        corrected = await client.call_tool("find_files", {"pattern": "*"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
    assert denied.is_error
    assert "outside every trusted root" in result_text(denied)
    assert result_meta(denied)["ledgerclaw/denial"] == "outside_roots"
    assert corrected.is_error
    assert "load_tool" in result_text(corrected)
    assert result_meta(corrected)["ledgerclaw/end"] == "corrected"
    assert types.INVALID_PARAMS == unknown.value.code


@pytest.mark.anyio
async def test_the_cli_approves_a_call_while_the_client_waits(home: Path, work: Path) -> None:
    """A write waits for approval; `approvals approve` reaches the stdio server and it runs."""
    target = work / "approved.txt"
    listed: list[Any] = []

    def operator() -> None:
        wait_for(lambda: bool(cli_json(home, "approvals", "list")), what="a pending approval")
        listed.extend(cli_json(home, "approvals", "list"))
        done = run_cli(home, "approvals", "approve", listed[0]["id"][:12])
        assert done.returncode == 0, done.stderr

    thread = threading.Thread(target=operator)
    async with stdio_client(home) as client:
        thread.start()
        result = await client.call_tool("write_file", {"path": str(target), "content": "ok\n"})
        pid = the_server_pid(home)
    thread.join()
    assert not result.is_error, result_text(result)
    assert "ok\n" == target.read_text()
    assert "write_file" == listed[0]["tool"]
    assert f"stdio pid {pid}" == listed[0]["host"]
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(home, session_id, "session.approval_decided")
    assert ("approved", "cli (local control)") == (decided["verdict"], decided["decided_by"])


@pytest.mark.anyio
async def test_the_cli_denies_a_pending_call(home: Path, work: Path) -> None:
    """A denied approval never runs the call; the client hears it was rejected."""
    target = work / "denied.txt"

    def operator() -> None:
        wait_for(lambda: bool(cli_json(home, "approvals", "list")), what="a pending approval")
        pending = cli_json(home, "approvals", "list")
        assert run_cli(home, "approvals", "deny", pending[0]["id"]).returncode == 0

    thread = threading.Thread(target=operator)
    async with stdio_client(home) as client:
        thread.start()
        result = await client.call_tool("write_file", {"path": str(target), "content": "x"})
    thread.join()
    assert result.is_error
    assert "approval_rejected" == result_meta(result)["ledgerclaw/denial"]
    assert not target.exists()


@pytest.mark.anyio
async def test_an_unanswered_approval_times_out_and_is_journaled(
    tmp_path: Path, work: Path
) -> None:
    """No answer within the timeout: the call is denied as expired, and nothing ran."""
    home = tmp_path / "home"
    write_governed_config(home, work, approval_timeout=1)
    target = work / "late.txt"
    async with stdio_client(home) as client:
        result = await client.call_tool("write_file", {"path": str(target), "content": "x"})
    assert result.is_error
    assert "approval_expired" == result_meta(result)["ledgerclaw/denial"]
    assert not target.exists()
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(home, session_id, "session.approval_decided")
    assert ("expired", "timeout") == (decided["verdict"], decided["decided_by"])
    assert events(home, session_id, "session.approval_requested")


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_sigterm_during_a_long_call_records_the_reason_and_exits_0(
    home: Path, work: Path, tmp_path: Path, mode: str
) -> None:
    """SIGTERM: the long call is cancelled after the grace period, the process exits 0."""
    status_file = tmp_path / "serve.status"
    outcome: dict[str, Any] = {}

    async def long_call(client: Any) -> None:
        try:
            outcome["result"] = await client.call_tool(
                "shell_execute", {"command": "sleep 30", "cwd": str(work)}
            )
        except Exception as error:  # noqa: BLE001 - the server may go before answering
            outcome["error"] = error

    def in_flight() -> bool:
        entries = stdio_hosts(home)
        return bool(entries) and host_status(home, entries[0])["calls_in_flight"] == 1

    async with (
        stdio_client(home, mode=mode, exit_status=status_file) as client,
        anyio.create_task_group() as tasks,
    ):
        tasks.start_soon(long_call, client)
        await anyio.to_thread.run_sync(lambda: wait_for(in_flight, what="the call"))
        started = time.monotonic()
        os.kill(the_server_pid(home), signal.SIGTERM)
        await anyio.to_thread.run_sync(lambda: wait_for(status_file.exists, what="the exit"))
        elapsed = time.monotonic() - started
    assert "0" == status_file.read_text()
    assert elapsed < 10
    assert [] == stdio_hosts(home)
    [session_id] = session_ids(home)
    [receipt] = events(home, session_id, "session.receipt_recorded")
    assert ("cancelled", "shutdown") == (receipt["outcome"], receipt["cancel_reason"])
    [ended] = events(home, session_id, "session.run_ended")
    assert "shutdown" == ended["reason"]
    [closed] = events(home, session_id, "session.closed")
    assert "daemon_stopped" == closed["reason"]
    assert "reason=shutdown" in run_cli(home, "session", "replay", session_id).stdout


@pytest.mark.anyio
async def test_kill_9_during_a_call_then_restart_marks_it_unknown_and_never_reruns(
    home: Path, work: Path
) -> None:
    """A crash mid-call: the next server's recovery marks it `unknown` and never re-runs it."""
    marker = work / "ran.marker"
    command = f"touch {marker} && sleep 30"

    async def doomed_call(client: Any) -> None:
        with contextlib.suppress(Exception):  # the server is killed under it
            await client.call_tool("shell_execute", {"command": command, "cwd": str(work)})

    try:
        async with stdio_client(home) as client, anyio.create_task_group() as tasks:
            tasks.start_soon(doomed_call, client)
            await anyio.to_thread.run_sync(lambda: wait_for(marker.exists, what="the call"))
            os.kill(the_server_pid(home), signal.SIGKILL)
        touched = marker.stat().st_mtime_ns
        assert [] == stdio_hosts(home)  # the dead server's registration is recognised
        [session_id] = session_ids(home)
        assert [] == events(home, session_id, "session.closed")
        async with stdio_client(home) as client:
            after = await client.call_tool("list_directory", {"path": str(work)})
        assert not after.is_error, result_text(after)
        assert session_id != result_meta(after)["ledgerclaw/session_id"]
    finally:
        kill_leftover_shell(marker)
    [unknown] = events(home, session_id, "session.attempt_outcome_unknown")
    assert "crashed" in unknown["reason"]
    [ended] = events(home, session_id, "session.run_ended")
    assert "crashed" == ended["reason"]
    [closed] = events(home, session_id, "session.closed")
    assert "crashed" == closed["reason"]
    assert 1 == len(events(home, session_id, "session.attempt_started"))
    assert [] == events(home, session_id, "session.receipt_recorded")
    assert touched == marker.stat().st_mtime_ns
    replay = run_cli(home, "session", "replay", session_id)
    assert "attempt_outcome_unknown" in replay.stdout
    assert "reason=crashed" in replay.stdout


@pytest.mark.anyio
async def test_stdio_servers_beside_a_daemon_each_host_their_own_session(
    home: Path, work: Path
) -> None:
    """A daemon and two stdio servers share a home; each session has one writer, its own."""
    daemon = start_daemon(home)
    claims = SessionClaims(Home(home))
    try:
        daemon.pair()
        async with stdio_client(home, mode="legacy") as first:
            one = await first.call_tool("list_directory", {"path": str(work)})
            first_id = result_meta(one)["ledgerclaw/session_id"]
            # The second server's start-up recovery finds the first's open session
            # and must leave it to its live host.
            async with (
                stdio_client(home, mode="legacy") as second,
                http_client(daemon, mode="legacy") as third,
            ):
                two = await second.call_tool("list_directory", {"path": str(work)})
                three = await third.call_tool("list_directory", {"path": str(work)})
                again = await first.call_tool("read_file", {"path": str(work / "notes.txt")})
                assert 2 == len(stdio_hosts(home))
                assert 1 == daemon.health()["sessions"]
                assert [] == cli_json(home, "approvals", "list")
                ids = [result_meta(r)["ledgerclaw/session_id"] for r in (two, three, again)]
                for session_id in (first_id, *ids):
                    assert claims.try_claim(SessionId(session_id)) is None
    finally:
        assert 0 == daemon.stop()
    second_id, third_id, again_id = ids
    assert first_id == again_id
    assert 3 == len({first_id, second_id, third_id})
    for session_id in (first_id, second_id):
        assert 1 == len(events(home, session_id, "session.opened"))
        [closed] = events(home, session_id, "session.closed")
        assert "client_closed" == closed["reason"]
        assert [] == events(home, session_id, "session.attempt_outcome_unknown")
    assert 2 == len(events(home, first_id, "session.receipt_recorded"))
    assert 1 == len(events(home, second_id, "session.receipt_recorded"))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", MODES)
async def test_a_client_disconnect_closes_its_one_session_as_client_closed(
    home: Path, work: Path, mode: str
) -> None:
    """All of one process's calls share a session; closing the client closes it, named."""
    me = types.Implementation(name="stdio-tester", version="9.8.7")
    async with stdio_client(home, mode=mode, client_info=me) as client:
        first = await client.call_tool("list_directory", {"path": str(work)})
        second = await client.call_tool("read_file", {"path": str(work / "notes.txt")})
    session_id = result_meta(first)["ledgerclaw/session_id"]
    assert session_id == result_meta(second)["ledgerclaw/session_id"]
    assert [session_id] == session_ids(home)
    [opened] = events(home, session_id, "session.opened")
    assert ("stdio-tester", "9.8.7") == (opened["client_name"], opened["client_version"])
    [closed] = events(home, session_id, "session.closed")
    assert "client_closed" == closed["reason"]
    [ended] = events(home, session_id, "session.run_ended")
    assert "natural" == ended["reason"]
