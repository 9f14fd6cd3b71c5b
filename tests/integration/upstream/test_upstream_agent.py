"""The daemon's agent loads and calls an upstream tool, governed like its own tools."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.daemon_harness import cli_json, start_daemon, wait_for
from tests.gateway_rig import agent_home, ended, gateway
from tests.integration.daemon.journal_view import events

UPSTREAM = f"""
[mcp.servers.time]
transport = "stdio"
command = "{sys.executable}"
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]
trust_read_only = true
"""


def call(call_id: str, tool: str, **arguments: object) -> dict[str, Any]:
    """One scripted reply that calls `tool`."""
    request = {"id": call_id, "name": tool, "arguments": arguments}
    return {"reply": {"text": "", "tool_calls": [request]}}


def test_the_agent_loads_an_upstream_tool_and_its_answer_is_journaled(tmp_path: Path) -> None:
    """load_tool, then time/get_current_time: the receipt names the server; the run ends."""
    work = tmp_path / "work"
    work.mkdir()
    steps = [
        call("c1", "load_tool", name="time/get_current_time"),
        call("c2", "time/get_current_time", timezone="UTC"),
        {"reply": {"text": "It is now."}},
    ]
    home = agent_home(tmp_path, work, steps)
    config = home / "config.toml"
    config.write_text(config.read_text() + UPSTREAM)
    daemon = start_daemon(home)
    try:
        wait_for(
            lambda: cli_json(home, "mcp", "list")[0]["state"] == "connected",
            timeout=30,
            what="the time server",
        )
        with gateway(daemon) as client:
            session = client.call("sessions.create")["session_id"]
            client.call("chat.send", {"session": session, "text": "what time is it?"})
            history = ended(client, session)
        receipts = events(home, session, "session.receipt_recorded")
        answered = [e for e in history if e["event"] == "session.call_answered"]
    finally:
        assert 0 == daemon.stop()

    assert ["success", "success"] == [r["outcome"] for r in receipts]
    assert "time" == receipts[1]["upstream"]["server"]
    assert 2 == len(answered)
    assert {"reason": "natural"}.items() <= history[-1]["fields"].items()
    transcript = json.dumps(history)
    assert "get_current_time" in transcript
