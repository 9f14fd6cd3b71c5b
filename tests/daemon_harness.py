"""Real ledgerclaw servers as subprocesses (the daemon, `mcp serve`) and real MCP clients."""

from __future__ import annotations

import itertools
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
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client as stdio_transport
from mcp.client.streamable_http import streamable_http_client

from adapters.control.client import call_daemon
from adapters.home import Home
from adapters.hosting.hosts import HostEntry, live_hosts

CLI = [sys.executable, "-m", "cli"]
_STDIO_LOGS = itertools.count()
START_TIMEOUT = 30.0
RECORD_EXIT = (
    "import pathlib, subprocess, sys\n"
    "code = subprocess.call(sys.argv[2:])\n"
    "pathlib.Path(sys.argv[1]).write_text(str(code))\n"
    "sys.exit(code if code >= 0 else 128 - code)\n"
)
"""Runs a command with the inherited stdio and writes its exit status to a file.

The SDK's stdio transport owns and reaps the process it spawns without exposing its exit
status; putting this between them keeps the status while the client talks to the real
server over the same pipes.
"""


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


def write_governed_config(
    home: Path, work: Path, *, approval_timeout: int = 20, grace: int = 1
) -> None:
    """Trusted work root, reviewed `ls sleep touch cat echo`, writes needing approval."""
    write_config(
        home,
        f"""
[daemon]
grace_seconds = {grace}
projection_interval_seconds = 0.1

[tools]
roots = [{{ path = "{work}", operations = ["read", "write", "declare_project_scope"] }}]
approval_timeout_seconds = {approval_timeout}

[tools.approval]
write_file = "request"

[tools.shell]
reviewed_safe = ["ls", "sleep", "touch", "cat", "echo"]
""",
    )


def result_text(result: types.CallToolResult) -> str:
    """The text of a tool result."""
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def result_meta(result: types.CallToolResult) -> dict[str, Any]:
    """The ledgerclaw facts of a tool result (`ledgerclaw/session_id`, `.../end`, ...)."""
    return dict(result.meta or {})


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
async def stdio_client(
    home: Path, mode: str = "auto", *, exit_status: Path | None = None, **options: Any
) -> AsyncIterator[Client]:
    """An official MCP client that spawns `ledgerclaw mcp serve` for `home`.

    The server's stderr goes to `stdio-<n>.err` beside the home. With `exit_status`, the
    server's exit status is written to that file once it exits (see RECORD_EXIT).
    """
    serve = [*CLI, "mcp", "serve"]
    argv = (
        serve
        if exit_status is None
        else [sys.executable, "-c", RECORD_EXIT, str(exit_status), *serve]
    )
    params = StdioServerParameters(
        command=argv[0],
        args=argv[1:],
        env={
            "LEDGERCLAW_HOME": str(home),
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        },
        cwd=str(Path.cwd()),
    )
    home.parent.mkdir(parents=True, exist_ok=True)
    with (home.parent / f"stdio-{next(_STDIO_LOGS)}.err").open("w") as errlog:
        async with Client(stdio_transport(params, errlog=errlog), mode=mode, **options) as client:
            yield client


def stdio_hosts(home: Path) -> list[HostEntry]:
    """Every live `mcp serve` process registered in `home`, with its control port."""
    return [entry for entry in live_hosts(Home(home)) if entry.kind == "stdio"]


def host_status(home: Path, entry: HostEntry) -> dict[str, Any]:
    """The `status` answer of one registered host's control plane."""
    return call_daemon(Home(home), "status", {}, port=entry.port)
