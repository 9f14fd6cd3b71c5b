"""Helpers for tests that drive a real daemon's hosted agents over the gateway."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from adapters.control.gateway_client import GatewayClient
from adapters.home import resolve_home
from adapters.security.host_key import load_host_key
from tests.daemon_harness import RunningDaemon, write_governed_config

WAIT = 20.0


def agent_home(
    tmp_path: Path, work: Path, steps: list[dict[str, Any]], *, approval_timeout: int = 20
) -> Path:
    """A governed home (writes need approval) whose agent plays `steps`."""
    home = tmp_path / "home"
    write_governed_config(home, work, approval_timeout=approval_timeout)
    (home / "script.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    config = home / "config.toml"
    config.write_text(
        config.read_text()
        + '\n[agent]\nmodel = "demo"\n\n[models.demo]\nprovider = "scripted"\nmodel = "demo"\n'
        'script = "script.jsonl"\n'
    )
    return home


def gateway(daemon: RunningDaemon) -> GatewayClient:
    """A gateway connection with the home's host key."""
    return GatewayClient.open(
        daemon.port, key=load_host_key(resolve_home({"LEDGERCLAW_HOME": str(daemon.home)}))
    )


def ended(client: GatewayClient, session: str, runs: int = 1) -> list[dict[str, Any]]:
    """The session's history once `runs` runs have ended."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        events: list[dict[str, Any]] = client.call(
            "chat.history", {"session": session, "limit": 500}
        )["events"]
        if sum(e["event"] == "session.run_ended" for e in events) >= runs:
            return events
        time.sleep(0.05)
    msg = f"no run of {session} ended within {WAIT} s"
    raise AssertionError(msg)


def next_event(client: GatewayClient, name: str, timeout: float = WAIT) -> dict[str, Any]:
    """The payload of the next event named `name` pushed to `client`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in client.events(timeout=0.2):
            if event["event"] == name:
                payload: dict[str, Any] = event["payload"]
                return payload
    msg = f"no {name} event was pushed within {timeout} s"
    raise AssertionError(msg)
