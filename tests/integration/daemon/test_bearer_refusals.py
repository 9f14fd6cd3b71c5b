"""Refused device tokens over `/mcp`: RFC 6750 challenges, and a reason the client can show."""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    http_client,
    run_cli,
    start_daemon,
    write_governed_config,
)

UNKNOWN = "dev_00000000000000000000000000000000." + "x" * 40
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """A running daemon with one paired device, shared by this module's tests."""
    base = tmp_path_factory.mktemp("bearer")
    work = (base / "work").resolve()
    work.mkdir()
    home = base / "home"
    write_governed_config(home, work)
    running = start_daemon(home)
    running.pair()
    yield running
    running.stop(signal.SIGKILL if running.process.poll() is None else signal.SIGTERM)


def refused(daemon: RunningDaemon, authorization: str | None) -> tuple[int, str, dict[str, Any]]:
    """POST an initialize to /mcp; the status, `WWW-Authenticate` and JSON body."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if authorization is not None:
        headers["authorization"] = authorization
    request = urllib.request.Request(  # noqa: S310 - loopback
        daemon.url, data=json.dumps(INITIALIZE).encode(), headers=headers, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)  # noqa: S310 - loopback
    answer = caught.value
    try:
        return answer.code, answer.headers.get("www-authenticate", ""), json.loads(answer.read())
    finally:
        answer.close()


def mcp_errors(error: BaseException) -> list[MCPError]:
    """Every MCPError in an exception or the groups that wrap it."""
    if isinstance(error, MCPError):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        return [found for inner in error.exceptions for found in mcp_errors(inner)]
    return []


@pytest.mark.parametrize(
    ("authorization", "description"),
    [
        (f"Bearer {UNKNOWN}", "device token is not recognised"),
        ("Bearer not-a-token", "the device token is malformed"),
    ],
    ids=["unknown", "malformed"],
)
def test_a_bad_token_gets_an_invalid_token_challenge_and_a_json_reason(
    daemon: RunningDaemon, authorization: str, description: str
) -> None:
    """An unknown or malformed token: 401, `error="invalid_token"` with a description, JSON."""
    status, challenge, body = refused(daemon, authorization)

    assert 401 == status
    assert challenge.startswith('Bearer realm="ledgerclaw", error="invalid_token", ')
    assert f'error_description="{description}' in challenge
    assert "invalid_token" == body["error"]["data"]["error"]
    assert description in body["error"]["data"]["error_description"]
    assert description in body["error"]["message"]


@pytest.mark.parametrize("authorization", [None, "Basic dXNlcjpwYXNz"], ids=["none", "basic"])
def test_a_request_without_a_token_gets_a_bare_challenge_and_a_json_reason(
    daemon: RunningDaemon, authorization: str | None
) -> None:
    """No bearer token: a challenge without an error code (RFC 6750 3.1), and a JSON reason."""
    status, challenge, body = refused(daemon, authorization)

    assert (401, 'Bearer realm="ledgerclaw"') == (status, challenge)
    assert "error" not in body["error"]["data"]
    assert "Authorization: Bearer TOKEN" in body["error"]["message"]


@pytest.mark.anyio
async def test_the_official_client_hears_why_an_unknown_token_was_refused(
    daemon: RunningDaemon,
) -> None:
    """Connecting with an unknown token fails with the daemon's reason, not a bare error."""
    with pytest.raises(BaseException) as caught:  # noqa: PT011 - the SDK groups its errors
        async with http_client(daemon, token=UNKNOWN, mode="legacy") as client:
            await client.list_tools()
    messages = [error.error.message for error in mcp_errors(caught.value)]

    assert messages
    assert all("device token is not recognised" in message for message in messages), messages


@pytest.mark.anyio
async def test_the_official_client_hears_that_its_device_was_revoked(
    tmp_path: Path, work: Path
) -> None:
    """A call after `devices revoke` raises an MCPError that says the device was revoked."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    daemon = start_daemon(home)
    try:
        daemon.pair()
        async with http_client(daemon, mode="legacy") as client:
            await client.list_tools()
            device = cli_json(home, "devices", "list")[0]["device_id"]
            assert 0 == run_cli(home, "devices", "revoke", device).returncode
            with pytest.raises(MCPError) as caught:
                await client.list_tools()
        error = caught.value.error
        assert f"device {device} was revoked" in error.message
        assert "ledgerclaw daemon pair" in error.message
        assert "invalid_token" == error.data["error"]
    finally:
        assert 0 == daemon.stop()
