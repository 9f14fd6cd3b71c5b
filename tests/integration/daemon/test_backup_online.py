"""Backups beside a real daemon and a real `mcp serve`: online copies, refused restores."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    http_client,
    run_cli,
    start_daemon,
    stdio_client,
    write_governed_config,
)
from tests.integration.sqlite_helpers import query

EVENTS = "SELECT originator_id, originator_version FROM stored_events"


def refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The one `error: …` line of a refused command, which must exit with code 3."""
    assert 3 == done.returncode, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert 1 == len(lines), done.stderr
    assert lines[0].startswith("error: ")
    return lines[0]


def keys(home: Path) -> list[str]:
    """The session keys `session list` shows for `home`."""
    return sorted(row["session_key"] for row in cli_json(home, "session", "list"))


def native_call(home: Path, work: Path) -> None:
    """One `tool call` in a session of its own."""
    args = json.dumps({"path": str(work)})
    done = run_cli(home, "tool", "call", "list_directory", "--args", args)
    assert 0 == done.returncode, done.stderr


def replaced_files(home: Path) -> list[str]:
    """The journals a restore kept aside in the home."""
    found = (home / "backups").glob("ledgerclaw.db.replaced-*")
    return sorted(p.name for p in found if not p.name.endswith(("-wal", "-journal")))


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_copy_taken_while_the_daemon_writes_holds_every_committed_event(
    daemon: RunningDaemon, work: Path
) -> None:
    """Calls keep landing while `backup create` runs; the copy has all events from before it."""
    database = daemon.home / "ledgerclaw.db"
    writing = anyio.Event()
    stop = anyio.Event()
    async with http_client(daemon) as client:
        for _ in range(5):
            assert not (
                await client.call_tool("read_file", {"path": str(work / "notes.txt")})
            ).is_error

        async def keep_writing() -> None:
            while not stop.is_set():
                await client.call_tool("list_directory", {"path": str(work)})
                writing.set()

        async with anyio.create_task_group() as group:
            group.start_soon(keep_writing)
            await writing.wait()
            before = set(query(database, EVENTS))
            done = await anyio.to_thread.run_sync(
                lambda: run_cli(daemon.home, "backup", "create", "--json")
            )
            stop.set()
    assert 0 == done.returncode, done.stderr
    created = json.loads(done.stdout)
    copy = Path(created["path"])
    copied = set(query(copy, EVENTS))
    assert set() == before - copied
    assert len(copied) == created["events"]
    assert (
        max(row[0] for row in query(copy, "SELECT rowid FROM stored_events"))
        == created["journal_position"]
    )
    assert 0 == run_cli(daemon.home, "backup", "verify", str(copy)).returncode
    assert set() == copied - set(query(database, EVENTS))


@pytest.mark.slow
def test_restore_is_refused_while_the_daemon_runs_and_works_once_it_stopped(
    tmp_path: Path, work: Path
) -> None:
    """With a daemon up, restore exits 3 and changes nothing; after it stops, restore works."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    native_call(home, work)
    copy = cli_json(home, "backup", "create")["path"]
    native_call(home, work)
    both = keys(home)
    assert 2 == len(both)
    daemon = start_daemon(home)
    try:
        line = refusal(run_cli(home, "backup", "restore", copy))
        assert f"a daemon (pid {daemon.process.pid}, port {daemon.port}) is running" in line
        assert "nothing was changed" in line
        assert [] == replaced_files(home)
    finally:
        assert 0 == daemon.stop()
    assert both == keys(home)
    done = run_cli(home, "backup", "restore", copy)
    assert 0 == done.returncode, done.stderr
    assert 1 == len(keys(home))
    assert 1 == len(replaced_files(home))


@pytest.mark.slow
@pytest.mark.anyio
async def test_restore_is_refused_while_mcp_serve_holds_the_home(
    tmp_path: Path, work: Path
) -> None:
    """A live stdio server holds the home: restore exits 3, naming it, and changes nothing."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    native_call(home, work)
    copy = cli_json(home, "backup", "create")["path"]
    async with stdio_client(home) as client:
        assert not (await client.call_tool("list_directory", {"path": str(work)})).is_error
        done = await anyio.to_thread.run_sync(lambda: run_cli(home, "backup", "restore", copy))
    assert "`ledgerclaw mcp serve` (pid" in refusal(done)
    assert [] == replaced_files(home)
    assert 2 == len(keys(home))
