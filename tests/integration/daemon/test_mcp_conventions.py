"""MCP conventions over stdio and HTTP with the official client.

Tool annotations, unknown tools as protocol errors, progress while an approval waits, and a
client's cancellation recorded as its own reason.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest
from mcp import Client, MCPError

from adapters.settings.config_file import Config
from adapters.wiring.tools import first_party_tools
from tests.daemon_harness import (
    cli_json,
    http_client,
    result_meta,
    result_text,
    run_cli,
    start_daemon,
    stdio_client,
    wait_for,
    write_governed_config,
)
from tests.integration.daemon.journal_view import events, session_ids

Connect = Callable[..., AbstractAsyncContextManager[Client]]


@dataclass(frozen=True)
class Served:
    """A home served over one transport, and how to connect an official client to it."""

    home: Path
    connect: Connect


@pytest.fixture(params=["stdio", "http"])
def served(request: pytest.FixtureRequest, tmp_path: Path, work: Path) -> Iterator[Served]:
    """A governed home behind `mcp serve` (stdio) or a running daemon with a paired device."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    if request.param == "stdio":
        yield Served(home, lambda **options: stdio_client(home, **options))
        return
    daemon = start_daemon(home)
    daemon.pair()
    yield Served(home, lambda **options: http_client(daemon, **options))
    daemon.stop(signal.SIGKILL if daemon.process.poll() is None else signal.SIGTERM)


def first_party() -> dict[str, Any]:
    """Every first-party tool's definition, by name, as the default configuration builds it."""
    return {d.name: d for d in first_party_tools(Config()).registry}


def test_every_first_party_tool_declares_a_title_and_its_effects() -> None:
    """No first-party tool falls back to the cautious defaults by omission."""
    definitions = first_party().values()
    assert [] == [d.name for d in definitions if not d.title]
    assert [] == [d.name for d in definitions if "effects" not in d.model_fields_set]


@pytest.mark.anyio
async def test_every_listed_tool_carries_its_title_and_four_hints(served: Served) -> None:
    """tools/list shows each definition's title and hints; reads are read-only, the shell open."""
    async with served.connect() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    definitions = first_party()
    assert {"read_file", "write_file", "shell_execute"} <= set(tools)
    for name, tool in tools.items():
        effects = definitions[name].effects
        hints = tool.annotations
        assert hints is not None, name
        assert (definitions[name].title, definitions[name].title) == (tool.title, hints.title)
        assert (
            effects.read_only,
            effects.destructive,
            effects.idempotent,
            effects.open_world,
        ) == (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        ), name
    read, write, shell = tools["read_file"], tools["write_file"], tools["shell_execute"]
    assert read.annotations is not None
    assert write.annotations is not None
    assert shell.annotations is not None
    assert (True, False, False) == (
        read.annotations.read_only_hint,
        read.annotations.destructive_hint,
        read.annotations.open_world_hint,
    )
    assert (False, True) == (write.annotations.read_only_hint, write.annotations.destructive_hint)
    assert (False, True, True, False) == (
        shell.annotations.read_only_hint,
        shell.annotations.destructive_hint,
        shell.annotations.open_world_hint,
        shell.annotations.idempotent_hint,
    )
    assert "Run shell command" == shell.title


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_made_up_tool_is_a_protocol_error_and_its_attempt_is_journaled(
    served: Served, mode: str
) -> None:
    """An unknown name raises MCPError -32602 in the client; the journal keeps its attempt."""
    async with served.connect(mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("shel_execute", {"command": "ls"})
        # The session goes on: the next call of a real tool works.
        listed = await client.call_tool("list_directory", {"path": str(served.home.parent)})
    assert types.INVALID_PARAMS == raised.value.code
    assert "Unknown tool: shel_execute" == raised.value.message
    session_id = raised.value.data["ledgerclaw/session_id"]
    assert session_id == result_meta(listed)["ledgerclaw/session_id"]
    [started] = [
        e
        for e in events(served.home, session_id, "session.attempt_started")
        if e["tool_name"] == "shel_execute"
    ]
    assert raised.value.data["ledgerclaw/attempt_id"] == started["attempt_id"]
    [denied] = [
        e
        for e in events(served.home, session_id, "session.attempt_denied")
        if e["attempt_id"] == started["attempt_id"]
    ]
    assert ("not_exposed", "no such tool") == (denied["category"], denied["detail"])


@pytest.mark.anyio
async def test_a_name_the_journal_cannot_hold_is_a_protocol_error_too(served: Served) -> None:
    """A name with spaces is refused as unknown: -32602, and the client can go on."""
    async with served.connect() as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("no such tool!", {})
        assert (await client.list_tools()).tools
    assert types.INVALID_PARAMS == raised.value.code
    assert "Unknown tool: no such tool!" == raised.value.message


@pytest.mark.anyio
async def test_invalid_arguments_to_a_real_tool_stay_a_tool_error(served: Served) -> None:
    """A wrong argument is a result with isError that says which field, so a model can fix it."""
    async with served.connect() as client:
        result = await client.call_tool("read_file", {"path": 5, "surplus": True})
    assert result.is_error
    assert "Invalid arguments for read_file" in result_text(result)
    assert "surplus" in result_text(result)
    assert "invalid_input" == result_meta(result)["ledgerclaw/outcome"]


@pytest.mark.anyio
async def test_an_approval_wait_reports_progress_until_the_operator_approves(
    served: Served, work: Path
) -> None:
    """With a progress token the client hears the wait, with the command that ends it."""
    target = work / "progress.txt"
    reports: list[tuple[float, float | None, str | None]] = []
    heard = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))
        heard.set()

    async def operator() -> None:
        await heard.wait()
        approval_id = (reports[0][2] or "").split()[-1]
        done = await anyio.to_thread.run_sync(
            run_cli, served.home, "approvals", "approve", approval_id
        )
        assert 0 == done.returncode, done.stderr

    async with served.connect() as client, anyio.create_task_group() as tasks:
        tasks.start_soon(operator)
        with anyio.fail_after(60):
            result = await client.call_tool(
                "write_file",
                {"path": str(target), "content": "ok\n"},
                progress_callback=on_progress,
            )
        tasks.cancel_scope.cancel()  # an operator still waiting heard nothing: the asserts say so
    assert not result.is_error, result_text(result)
    assert "ok\n" == target.read_text()
    progress, total, message = reports[0]
    assert (0.0, 20.0) == (progress, total)
    assert message is not None
    assert message.startswith("waiting for an operator to approve write_file")
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(served.home, session_id, "session.approval_decided")
    assert "approved" == decided["verdict"]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_gives_up_waiting_is_recorded_as_client_cancelled(
    served: Served, work: Path, mode: str
) -> None:
    """The client's timeout ends the call `cancelled` (client_cancelled); nothing is written."""
    target = work / "never.txt"
    async with served.connect(mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(
                "write_file", {"path": str(target), "content": "x"}, read_timeout_seconds=1.5
            )
        receipts = await anyio.to_thread.run_sync(cancelled_receipts, served.home)
        assert [] == cli_json(served.home, "approvals", "list")
    assert types.REQUEST_TIMEOUT == raised.value.code
    assert [("cancelled", "client_cancelled")] == [
        (r["outcome"], r["cancel_reason"]) for r in receipts
    ]
    assert not target.exists()


def cancelled_receipts(home: Path) -> list[dict[str, Any]]:
    """The cancelled receipts of every session of the home, once there is one."""
    found: list[dict[str, Any]] = []

    def check() -> bool:
        found[:] = [
            receipt
            for session_id in session_ids(home)
            for receipt in events(home, session_id, "session.receipt_recorded")
            if receipt["outcome"] == "cancelled"
        ]
        return bool(found)

    wait_for(check, what="a cancelled receipt")
    return found
