"""The daemon's hosted sessions share a budget of model requests open at once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from adapters.control.gateway_client import GatewayClient
from tests.daemon_harness import start_daemon
from tests.gateway_rig import WAIT, agent_home, ended, gateway

SCRIPT: list[dict[str, Any]] = [
    {"delay": 1.0},
    {"reply": {"text": "first answer"}},
    {"reply": {"text": "second answer"}},
]
"""A slow first reply: a request asked meanwhile takes the next line unless it must wait."""


def answer(events: list[dict[str, Any]]) -> str:
    """The assistant's message in a session's history."""
    [text] = [
        e["fields"]["message"]["content"]
        for e in events
        if e["event"] == "session.message_appended"
        and e["fields"]["message"]["role"] == "assistant"
    ]
    return str(text)


def asked(client: GatewayClient, session: str) -> None:
    """Wait until the session's model request is journaled."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        events = client.call("chat.history", {"session": session, "limit": 500})["events"]
        if any(e["event"] == "session.model_requested" for e in events):
            return
        time.sleep(0.02)
    msg = f"{session} asked no model within {WAIT} s"
    raise AssertionError(msg)


@pytest.mark.parametrize(
    ("slots", "answers"),
    [
        (1, ("first answer", "second answer")),
        (8, ("second answer", "first answer")),
    ],
)
def test_a_second_session_waits_for_a_model_slot_only_when_none_is_free(
    tmp_path: Path, work: Path, slots: int, answers: tuple[str, str]
) -> None:
    """One slot: the second request waits for the slow first; eight: it is answered meanwhile."""
    home = agent_home(tmp_path, work, SCRIPT)
    config = home / "config.toml"
    text = config.read_text().replace(
        "[agent]\n", f"[agent]\nconcurrent_model_requests = {slots}\n"
    )
    config.write_text(text)
    daemon = start_daemon(home)
    try:
        with gateway(daemon) as client:
            slow = client.call("sessions.create")["session_id"]
            quick = client.call("sessions.create")["session_id"]
            client.call("chat.send", {"session": slow, "text": "one"})
            asked(client, slow)
            client.call("chat.send", {"session": quick, "text": "two"})
            got = (answer(ended(client, slow)), answer(ended(client, quick)))
    finally:
        assert 0 == daemon.stop()

    assert answers == got
