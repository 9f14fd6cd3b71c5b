"""The real daemon as a subprocess, driven by the official MCP client over `/mcp`."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    http_client,
    result_meta,
    result_text,
    run_cli,
    start_daemon,
    wait_for,
    write_governed_config,
)
from tests.integration.daemon.journal_view import events, session_ids
from tests.integration.daemon.scenarios import exercise_every_tool, saw_list_changed


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_lists_and_calls_every_first_party_tool(
    daemon: RunningDaemon, work: Path, mode: str
) -> None:
    """Every tool works over /mcp, in both protocol eras, and each call is journaled."""
    changed: list[object] = []

    async def on_message(message: object) -> None:
        changed.append(message)

    options: dict[str, Any] = {"message_handler": on_message} if mode == "legacy" else {}
    async with http_client(daemon, mode=mode, **options) as client:
        read = await exercise_every_tool(client, work)
    if mode == "legacy":
        assert saw_list_changed(changed)
    session_id = result_meta(read)["ledgerclaw/session_id"]
    receipts = events(daemon.home, session_id, "session.receipt_recorded")
    assert len(receipts) >= 9
    opened = events(daemon.home, session_id, "session.opened")[0]
    assert opened["client_name"]


@pytest.mark.anyio
async def test_a_denial_and_a_correction_carry_the_instruction(
    daemon: RunningDaemon, tmp_path: Path
) -> None:
    """A denied call is a tool error saying why; a correction says what to do instead.

    An unknown tool is a protocol error instead (`-32602`), as MCP specifies.
    """
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    async with http_client(daemon) as client:
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
async def test_the_cli_approves_a_call_while_the_client_waits(
    daemon: RunningDaemon, work: Path
) -> None:
    """A write waits for approval; `approvals approve` from the CLI lets it run."""
    target = work / "approved.txt"
    listed: list[Any] = []

    def operator() -> None:
        wait_for(
            lambda: bool(cli_json(daemon.home, "approvals", "list")), what="a pending approval"
        )
        listed.extend(cli_json(daemon.home, "approvals", "list"))
        done = run_cli(daemon.home, "approvals", "approve", listed[0]["id"][:12])
        assert done.returncode == 0, done.stderr

    thread = threading.Thread(target=operator)
    thread.start()
    async with http_client(daemon) as client:
        result = await client.call_tool("write_file", {"path": str(target), "content": "ok\n"})
    thread.join()
    assert not result.is_error, result_text(result)
    assert target.read_text() == "ok\n"
    assert listed[0]["tool"] == "write_file"
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(daemon.home, session_id, "session.approval_decided")
    assert (decided["verdict"], decided["decided_by"]) == ("approved", "cli (local control)")
    assert cli_json(daemon.home, "approvals", "list") == []


@pytest.mark.anyio
async def test_the_cli_denies_a_pending_call(daemon: RunningDaemon, work: Path) -> None:
    """A denied approval never runs the call; the client hears it was rejected."""
    target = work / "denied.txt"

    def operator() -> None:
        wait_for(
            lambda: bool(cli_json(daemon.home, "approvals", "list")), what="a pending approval"
        )
        pending = cli_json(daemon.home, "approvals", "list")
        assert run_cli(daemon.home, "approvals", "deny", pending[0]["id"]).returncode == 0

    thread = threading.Thread(target=operator)
    thread.start()
    async with http_client(daemon) as client:
        result = await client.call_tool("write_file", {"path": str(target), "content": "x"})
    thread.join()
    assert result.is_error
    assert result_meta(result)["ledgerclaw/denial"] == "approval_rejected"
    assert not target.exists()


def test_approving_an_unknown_id_is_a_clear_error(daemon: RunningDaemon) -> None:
    """No pending approval matches: exit 6 and one line, no trace."""
    done = run_cli(daemon.home, "approvals", "approve", "att_nothing")
    assert done.returncode == 6
    assert "matches no pending approval" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.anyio
async def test_an_unanswered_approval_times_out_and_is_journaled(
    tmp_path: Path, work: Path
) -> None:
    """No answer within the timeout: the call is denied as expired, and nothing ran."""
    home = tmp_path / "home"
    write_governed_config(home, work, approval_timeout=1)
    daemon = start_daemon(home)
    try:
        daemon.pair()
        target = work / "late.txt"
        async with http_client(daemon) as client:
            result = await client.call_tool("write_file", {"path": str(target), "content": "x"})
        assert result.is_error
        assert result_meta(result)["ledgerclaw/denial"] == "approval_expired"
        assert not target.exists()
        session_id = result_meta(result)["ledgerclaw/session_id"]
        [decided] = events(home, session_id, "session.approval_decided")
        assert (decided["verdict"], decided["decided_by"]) == ("expired", "timeout")
        assert events(home, session_id, "session.approval_requested")
    finally:
        assert daemon.stop() == 0


@pytest.mark.anyio
async def test_a_revoked_token_is_refused_mid_session(daemon: RunningDaemon) -> None:
    """After `devices revoke`, the device's next request gets 401 and its session closes."""
    async with http_client(daemon, mode="legacy") as client:
        first = await client.call_tool("list_directory", {"path": str(daemon.home.parent)})
        session_id = result_meta(first)["ledgerclaw/session_id"]
        device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
        assert run_cli(daemon.home, "devices", "revoke", device).returncode == 0
        with pytest.raises(MCPError):
            await client.list_tools()
    assert cli_json(daemon.home, "devices", "list")[0]["status"] == "revoked"
    assert daemon.health()["unauthorized"] >= 1
    wait_for(
        lambda: bool(events(daemon.home, session_id, "session.closed")), what="the session to close"
    )
    assert events(daemon.home, session_id, "session.closed")[0]["reason"] == "revoked"


@pytest.mark.anyio
async def test_requests_without_a_valid_token_get_401(daemon: RunningDaemon) -> None:
    """No token and a wrong token are both refused and counted."""
    before = daemon.health()["unauthorized"]
    for token in ("", "dev_00000000000000000000000000000000." + "x" * 40):
        with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK wraps the 401 in a group
            async with http_client(daemon, token=token or "none") as client:
                await client.list_tools()
    assert daemon.health()["unauthorized"] >= before + 2


def test_a_pairing_code_is_single_use(daemon: RunningDaemon) -> None:
    """A code works once; its reuse is refused with a clear message."""
    code = cli_json(daemon.home, "daemon", "pair")["code"]
    assert run_cli(daemon.home, "devices", "pair", code).returncode == 0
    again = run_cli(daemon.home, "devices", "pair", code)
    assert again.returncode != 0
    assert "not valid" in again.stderr
    assert "Traceback" not in again.stderr


def test_an_expired_pairing_code_is_refused(tmp_path: Path, work: Path) -> None:
    """A code past its lifetime is refused and names the command for a new one."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    (home / "config.toml").write_text(
        (home / "config.toml").read_text().replace("[tools]", "pairing_code_seconds = 1\n\n[tools]")
    )
    daemon = start_daemon(home)
    try:
        code = cli_json(home, "daemon", "pair")["code"]
        time.sleep(1.5)
        done = run_cli(home, "devices", "pair", code)
        assert done.returncode != 0
        assert "expired" in done.stderr
        assert "ledgerclaw daemon pair" in done.stderr
    finally:
        assert daemon.stop() == 0


def test_a_second_daemon_on_the_same_home_exits_naming_the_first(daemon: RunningDaemon) -> None:
    """The lock refuses a second start with the running pid; the first keeps serving."""
    done = run_cli(daemon.home, "daemon", "run", "--port", str(daemon.port + 1))
    assert done.returncode == 3
    assert f"pid {daemon.process.pid}" in done.stderr
    assert daemon.health()["status"] == "ok"


@pytest.mark.anyio
async def test_sigterm_during_a_long_call_records_the_reason_and_exits_0(
    daemon: RunningDaemon, work: Path
) -> None:
    """SIGTERM: the long call is cancelled after the grace period, the run ends `shutdown`."""
    outcome: dict[str, Any] = {}

    async def long_call() -> None:
        async with http_client(daemon) as client:
            try:
                result = await client.call_tool(
                    "shell_execute", {"command": "sleep 30", "cwd": str(work)}
                )
                outcome["result"] = result
            except Exception as error:  # noqa: BLE001 - the daemon may go before answering
                outcome["error"] = error

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(long_call)
        await anyio.to_thread.run_sync(
            lambda: wait_for(lambda: daemon.health()["calls_in_flight"] == 1, what="the call")
        )
        started = time.monotonic()
        status = await anyio.to_thread.run_sync(daemon.stop)
        elapsed = time.monotonic() - started
    assert status == 0
    cancelled = outcome["result"]
    assert cancelled.is_error
    assert "Cancelled: the daemon is stopping" in result_text(cancelled)
    assert result_meta(cancelled)["ledgerclaw/outcome"] == "cancelled"
    assert elapsed < 20
    [session_id] = session_ids(daemon.home)
    [receipt] = events(daemon.home, session_id, "session.receipt_recorded")
    assert ("cancelled", "shutdown") == (receipt["outcome"], receipt["cancel_reason"])
    [ended] = events(daemon.home, session_id, "session.run_ended")
    assert ended["reason"] == "shutdown"
    [closed] = events(daemon.home, session_id, "session.closed")
    assert closed["reason"] == "daemon_stopped"
    replay = run_cli(daemon.home, "session", "replay", session_id)
    assert "reason=shutdown" in replay.stdout


@pytest.mark.anyio
async def test_kill_9_during_a_call_then_restart_marks_it_unknown_and_never_reruns(
    daemon: RunningDaemon, work: Path
) -> None:
    """A crash mid-call: at restart the attempt is `unknown`, the run `crashed`, no re-run."""
    marker = work / "ran.marker"
    command = f"touch {marker} && sleep 30"

    async def doomed_call() -> None:
        try:
            async with http_client(daemon) as client:
                await client.call_tool("shell_execute", {"command": command, "cwd": str(work)})
        except Exception:  # noqa: BLE001, S110 - the daemon is killed under it
            pass

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(doomed_call)
        await anyio.to_thread.run_sync(lambda: wait_for(marker.exists, what="the call to start"))
        daemon.stop(signal.SIGKILL)
        tasks.cancel_scope.cancel()
    touched = marker.stat().st_mtime_ns
    restarted = start_daemon(daemon.home, daemon.port)
    try:
        assert restarted.health()["recovered_sessions"] == 1
        [session_id] = session_ids(daemon.home)
        [unknown] = events(daemon.home, session_id, "session.attempt_outcome_unknown")
        assert "crashed" in unknown["reason"]
        assert events(daemon.home, session_id, "session.run_ended")[0]["reason"] == "crashed"
        assert events(daemon.home, session_id, "session.closed")[0]["reason"] == "crashed"
        assert len(events(daemon.home, session_id, "session.attempt_started")) == 1
        assert events(daemon.home, session_id, "session.receipt_recorded") == []
        time.sleep(0.5)
        assert marker.stat().st_mtime_ns == touched
        replay = run_cli(daemon.home, "session", "replay", session_id)
        assert "attempt_outcome_unknown" in replay.stdout
        assert "reason=crashed" in replay.stdout
    finally:
        assert restarted.stop() == 0


def test_foreign_host_names_and_origins_are_refused(daemon: RunningDaemon) -> None:
    """DNS rebinding: a foreign Host gets 421; a cross-site WebSocket to /control is closed."""
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    from websockets.exceptions import InvalidStatus  # noqa: PLC0415
    from websockets.sync.client import connect  # noqa: PLC0415

    foreign = urllib.request.Request(
        f"http://127.0.0.1:{daemon.port}/healthz", headers={"Host": "evil.example"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(foreign, timeout=5)  # noqa: S310 - loopback
    assert refused.value.code == 421
    refused.value.close()
    url = f"ws://127.0.0.1:{daemon.port}/control"
    with pytest.raises(InvalidStatus) as closed:
        connect(url, origin="https://evil.example", proxy=None, open_timeout=5)  # type: ignore[arg-type]
    assert closed.value.response.status_code == 403


@pytest.mark.anyio
async def test_revoking_a_device_cancels_its_running_call_before_closing(
    daemon: RunningDaemon, work: Path
) -> None:
    """The revoked device's long call is cancelled and receipted; then the session closes."""
    outcome: dict[str, Any] = {}

    async def long_call() -> None:
        async with http_client(daemon, mode="legacy") as client:
            try:
                outcome["result"] = await client.call_tool(
                    "shell_execute", {"command": "sleep 30", "cwd": str(work)}
                )
            except Exception as error:  # noqa: BLE001 - the call is cut short by design
                outcome["error"] = error

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(long_call)
        await anyio.to_thread.run_sync(
            lambda: wait_for(lambda: daemon.health()["calls_in_flight"] == 1, what="the call")
        )
        device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
        assert run_cli(daemon.home, "devices", "revoke", device).returncode == 0
        started = time.monotonic()
        # The revocation is noticed on the device's next request.
        with anyio.fail_after(20), pytest.raises(Exception):  # noqa: B017, PT011 - a 401 group
            async with http_client(daemon, mode="legacy") as other:
                await other.list_tools()
    [session_id] = session_ids(daemon.home)
    wait_for(
        lambda: bool(events(daemon.home, session_id, "session.closed")), what="the session to close"
    )
    assert time.monotonic() - started < 15
    [receipt] = events(daemon.home, session_id, "session.receipt_recorded")
    assert ("cancelled", "session_closed") == (receipt["outcome"], receipt["cancel_reason"])
    assert events(daemon.home, session_id, "session.attempt_outcome_unknown") == []
    assert events(daemon.home, session_id, "session.closed")[0]["reason"] == "revoked"


@pytest.mark.anyio
async def test_sigterm_refuses_a_call_still_waiting_for_its_turn(
    daemon: RunningDaemon, work: Path
) -> None:
    """A call queued behind a long one never starts once the daemon stops."""
    marker = work / "queued.marker"

    async def call(client: Any, command: str) -> None:
        with contextlib.suppress(Exception):  # the daemon stops under both calls
            await client.call_tool("shell_execute", {"command": command, "cwd": str(work)})

    async with http_client(daemon, mode="legacy") as client, anyio.create_task_group() as tasks:
        tasks.start_soon(call, client, "sleep 30")
        await anyio.to_thread.run_sync(
            lambda: wait_for(lambda: daemon.health()["calls_in_flight"] == 1, what="the first")
        )
        tasks.start_soon(call, client, f"touch {marker}")
        await anyio.to_thread.run_sync(
            lambda: wait_for(lambda: daemon.health()["calls_in_flight"] == 2, what="the second")
        )
        status = await anyio.to_thread.run_sync(daemon.stop)
        tasks.cancel_scope.cancel()
    assert status == 0
    assert not marker.exists()
    [session_id] = session_ids(daemon.home)
    assert len(events(daemon.home, session_id, "session.attempt_started")) == 1
    assert events(daemon.home, session_id, "session.receipt_recorded")[0]["outcome"] == "cancelled"
    assert events(daemon.home, session_id, "session.closed")[0]["reason"] == "daemon_stopped"


def test_a_port_in_use_is_a_clear_error(tmp_path: Path, daemon: RunningDaemon) -> None:
    """Another home's daemon on a taken port exits 3 naming the port, without a trace."""
    done = run_cli(tmp_path / "other-home", "daemon", "run", "--port", str(daemon.port))
    assert done.returncode == 3
    assert f"cannot listen on 127.0.0.1:{daemon.port}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.anyio
async def test_the_read_models_follow_a_live_daemon_within_a_second(
    daemon: RunningDaemon, work: Path
) -> None:
    """Without any query catching up, the daemon itself brings the call into the audit table.

    It catches up every `projection_interval_seconds` (0.1 s here); the poll's limit only
    bounds a failing run, it is not a timing claim.
    """
    import sqlite3  # noqa: PLC0415

    async with http_client(daemon) as client:
        result = await client.call_tool("read_file", {"path": str(work / "notes.txt")})
    attempt = result_meta(result)["ledgerclaw/attempt_id"]

    def projected() -> bool:
        uri = f"{(daemon.home / 'ledgerclaw.db').as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
            try:
                row = db.execute(
                    "SELECT outcome FROM authorization_audit WHERE attempt_id = ?", (attempt,)
                ).fetchone()
            except sqlite3.OperationalError:
                return False
        return row is not None and row[0] == "success"

    wait_for(projected, timeout=10, what="the audit row")
    rows = cli_json(daemon.home, "audit", "attempts", "--tool", "read_file")
    assert attempt in {row["attempt_id"] for row in rows}


@pytest.mark.anyio
async def test_revocation_ends_a_call_waiting_for_approval_without_running_it(
    daemon: RunningDaemon, work: Path
) -> None:
    """A revoked device's pending write is cancelled, unlisted and never approved or run."""
    target = work / "after-revoke.txt"

    async def pending_write() -> None:
        with contextlib.suppress(Exception):  # the call is cut short by the revocation
            async with http_client(daemon, mode="legacy") as client:
                await client.call_tool("write_file", {"path": str(target), "content": "x"})

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(pending_write)
        await anyio.to_thread.run_sync(
            lambda: wait_for(lambda: bool(cli_json(daemon.home, "approvals", "list")), what="it")
        )
        device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
        assert run_cli(daemon.home, "devices", "revoke", device).returncode == 0
        [session_id] = session_ids(daemon.home)
        await anyio.to_thread.run_sync(
            lambda: wait_for(
                lambda: bool(events(daemon.home, session_id, "session.closed")), what="the close"
            )
        )
    assert cli_json(daemon.home, "approvals", "list") == []
    assert not target.exists()
    assert events(daemon.home, session_id, "session.approval_decided") == []
    [receipt] = events(daemon.home, session_id, "session.receipt_recorded")
    assert ("cancelled", "session_closed") == (receipt["outcome"], receipt["cancel_reason"])
    assert events(daemon.home, session_id, "session.closed")[0]["reason"] == "revoked"
