"""A real daemon as a subprocess on a free loopback port, and real MCP clients for it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

CLI = [sys.executable, "-m", "cli"]
START_TIMEOUT = 30.0


def free_port() -> int:
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def environment(home: Path) -> dict[str, str]:
    """The environment a command for `home` runs in."""
    return {**os.environ, "LEDGERCLAW_HOME": str(home), "NO_COLOR": "1", "COLUMNS": "200"}


def run_cli(home: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run `ledgerclaw ARGS` for `home` in a subprocess."""
    return subprocess.run(
        [*CLI, *args],
        env=environment(home),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def cli_json(home: Path, *args: str) -> Any:
    """Run a `--json` command that must succeed and return its parsed output."""
    done = run_cli(home, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@dataclass
class RunningDaemon:
    """One daemon process and its home."""

    home: Path
    port: int
    process: subprocess.Popen[str]
    log: Path
    token: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        """The `/mcp` endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def health(self) -> dict[str, Any]:
        """The daemon's `/healthz` answer."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as r:
            return dict(json.loads(r.read()))

    def stop(self, how: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send `how` and wait for the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(how)
        return self.process.wait(timeout=timeout)

    def output(self) -> str:
        """Everything the daemon wrote to its stderr so far."""
        return self.log.read_text(errors="replace")

    def pair(self, name: str = "tester") -> str:
        """Pair a device through the CLI and return its token."""
        code = cli_json(self.home, "daemon", "pair", "--name", name)["code"]
        self.token = cli_json(self.home, "devices", "pair", code)["token"]
        return self.token


def write_config(home: Path, text: str) -> None:
    """Write the home's config.toml."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    (home / "config.toml").write_text(text)


def start_daemon(home: Path, port: int | None = None) -> RunningDaemon:
    """Start `ledgerclaw daemon run` for `home` and wait until `/healthz` answers."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    port = port or free_port()
    log = home.parent / f"daemon-{port}.err"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [*CLI, "daemon", "run", "--port", str(port)],
            env=environment(home),
            stdout=subprocess.DEVNULL,
            stderr=sink,
            text=True,
        )
    daemon = RunningDaemon(home, port, process, log)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"daemon exited with {process.returncode}: {daemon.output()}"
            raise AssertionError(msg)
        try:
            daemon.health()
        except OSError:
            time.sleep(0.05)
            continue
        return daemon
    process.kill()
    msg = f"daemon did not answer within {START_TIMEOUT} s: {daemon.output()}"
    raise AssertionError(msg)


def wait_for(check: Callable[[], bool], timeout: float = 15, what: str = "condition") -> None:
    """Poll `check` until it holds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    msg = f"timed out waiting for {what}"
    raise AssertionError(msg)


@asynccontextmanager
async def http_client(
    daemon: RunningDaemon, token: str | None = None, mode: str = "auto", **options: Any
) -> AsyncIterator[Client]:
    """An official MCP client on the daemon's `/mcp`, authenticated with a device token."""
    headers = {"authorization": f"Bearer {token or daemon.token}"}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))
    async with (
        http,
        Client(
            streamable_http_client(daemon.url, http_client=http), mode=mode, **options
        ) as client,
    ):
        yield client


@asynccontextmanager
async def stdio_client(home: Path, mode: str = "auto", **options: Any) -> AsyncIterator[Client]:
    """An official MCP client that spawns `ledgerclaw mcp serve` for `home`."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli", "mcp", "serve"],
        env={
            "LEDGERCLAW_HOME": str(home),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        cwd=str(Path.cwd()),
    )
    async with Client(params, mode=mode, **options) as client:
        yield client
