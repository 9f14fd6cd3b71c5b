"""Device tokens checked from the daemon's kept registry over `/mcp`; end-to-end tests.

The daemon answers most token checks from memory; these tests change the registry from
another process (the CLI, a real subprocess) while the kept copy is in use, and check that
the very next request sees the change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import MCPError

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    http_client,
    result_meta,
    run_cli,
    wait_for,
)
from tests.integration.daemon.journal_view import events

WARM_CALLS = 3
"""Calls before the change: the first reads the registry, the later ones use the kept copy."""


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_revocation_by_the_cli_refuses_the_very_next_request(
    daemon: RunningDaemon, work: Path, mode: str
) -> None:
    """After `devices revoke` in another process, the next call gets 401 and the session closes."""
    arguments = {"path": str(work / "notes.txt")}
    async with http_client(daemon, mode=mode) as client:
        for _ in range(WARM_CALLS):
            result = await client.call_tool("read_file", arguments)
            assert not result.is_error
        session_id = result_meta(result)["ledgerclaw/session_id"]
        device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
        assert 0 == run_cli(daemon.home, "devices", "revoke", device).returncode

        with pytest.raises(MCPError) as caught:
            await client.call_tool("read_file", arguments)

    assert f"device {device} was revoked" in caught.value.error.message
    wait_for(lambda: bool(events(daemon.home, session_id, "session.closed")), what="the close")
    assert "revoked" == events(daemon.home, session_id, "session.closed")[0]["reason"]


@pytest.mark.anyio
async def test_a_device_paired_while_another_is_served_is_accepted_on_its_first_request(
    daemon: RunningDaemon, work: Path
) -> None:
    """A device paired through the CLI mid-traffic is admitted at once; the first one still is."""
    arguments = {"path": str(work / "notes.txt")}
    first_token = daemon.token
    async with http_client(daemon) as first:
        for _ in range(WARM_CALLS):
            assert not (await first.call_tool("read_file", arguments)).is_error
        second_token = daemon.pair("second")

        async with http_client(daemon, token=second_token) as second:
            answer = await second.call_tool("read_file", arguments)
        again = await first.call_tool("read_file", arguments)

    assert first_token != second_token
    assert not answer.is_error
    assert not again.is_error
    devices = {row["name"]: row["status"] for row in cli_json(daemon.home, "devices", "list")}
    assert {"tester": "active", "second": "active"} == devices


@pytest.mark.anyio
async def test_a_revoked_token_stays_refused_while_the_registry_is_unchanged(
    daemon: RunningDaemon, work: Path
) -> None:
    """Once refused, a revoked device is refused from the kept copy too, request after request."""
    arguments = {"path": str(work / "notes.txt")}
    async with http_client(daemon) as client:
        assert not (await client.call_tool("read_file", arguments)).is_error
    device = cli_json(daemon.home, "devices", "list")[0]["device_id"]
    assert 0 == run_cli(daemon.home, "devices", "revoke", device).returncode
    before = daemon.health()["unauthorized"]

    for _ in range(WARM_CALLS):
        with pytest.raises(Exception):  # noqa: B017, PT011 - the SDK may wrap the 401 in a group
            async with http_client(daemon) as client:
                await client.call_tool("read_file", arguments)

    assert before + WARM_CALLS <= daemon.health()["unauthorized"]
