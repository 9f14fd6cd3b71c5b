"""`ledgerclaw mcp auth` against a real OAuth-protected server, with a daemon waiting on it."""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    environment,
    free_port,
    start_daemon,
    wait_for,
    write_config,
)

SERVER_SCRIPT = Path(__file__).parents[2] / "upstream_servers" / "oauth_server.py"
BROWSE = """import sys, httpx2
httpx2.get(sys.argv[1], follow_redirects=True, timeout=20)
"""
"""A browser for the test: it opens the address and follows it back to the loopback listener."""


@pytest.fixture
def protected(tmp_path: Path) -> Iterator[str]:
    """An OAuth-protected MCP server with its authorization server; its MCP URL."""
    port = free_port()
    log = tmp_path / "oauth-server.err"
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, str(SERVER_SCRIPT), "--port", str(port)], stderr=stderr
        )
    deadline = time.monotonic() + 20
    while "READY" not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the OAuth test server did not start: {log.read_text()}")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture
def waiting_daemon(tmp_path: Path, protected: str) -> Iterator[RunningDaemon]:
    """A daemon whose one upstream server needs OAuth, and says so."""
    home = tmp_path / "home"
    write_config(home, f'[mcp.servers.demo]\ntransport = "http"\nurl = "{protected}"\n')
    running = start_daemon(home)
    wait_for(
        lambda: cli_json(home, "mcp", "list")[0]["state"] == "needs_auth",
        timeout=30,
        what="needs_auth",
    )
    yield running
    running.stop(signal.SIGKILL if running.process.poll() is None else signal.SIGTERM)


def test_mcp_auth_stores_tokens_and_the_daemon_connects_with_them(
    tmp_path: Path, waiting_daemon: RunningDaemon
) -> None:
    """The flow runs on a loopback redirect; the tokens are owner-only; the server connects."""
    home = waiting_daemon.home
    before = cli_json(home, "mcp", "status", "demo")
    browse = tmp_path / "browse.py"
    browse.write_text(BROWSE)
    env = {**environment(home), "BROWSER": f"{sys.executable} {browse} %s"}
    done = subprocess.run(
        [sys.executable, "-m", "cli", "mcp", "auth", "demo", "--timeout", "60"],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    wait_for(
        lambda: cli_json(home, "mcp", "list")[0]["state"] == "connected",
        timeout=30,
        what="the server to connect with its tokens",
    )
    tokens = home / "credentials" / "mcp" / "demo.json"
    tools = [row["name"] for row in cli_json(home, "mcp", "tools", "demo")]

    assert "Run: ledgerclaw mcp auth demo" in before["reason"]
    assert 0 == done.returncode, done.stderr
    assert "Open this address to authorize demo" in done.stderr
    assert "authorized demo: its tokens are stored; the daemon reconnects it now" in done.stdout
    assert 0o600 == stat.S_IMODE(tokens.stat().st_mode)
    assert 0o700 == stat.S_IMODE(tokens.parent.stat().st_mode)
    assert ["demo/whoami"] == tools
