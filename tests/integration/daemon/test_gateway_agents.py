"""Agent sessions hosted by a real daemon, driven over the gateway with the scripted model."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.api.agent_verify import session_events
from adapters.control.gateway_client import GatewayClient, GatewayError
from adapters.home import resolve_home
from domain.ids import SessionId
from domain.session.events import RunEnded
from tests.agent_rig import AgentRig
from tests.daemon_harness import RunningDaemon, start_daemon
from tests.gateway_rig import WAIT, agent_home, ended, gateway


@pytest.fixture
def agent_daemon(tmp_path: Path, work: Path) -> Iterator[RunningDaemon]:
    """A daemon whose agent plays a script: a read of notes.md, then an answer, twice."""
    (work / "notes.md").write_text("the notes say hi")
    steps: list[dict[str, Any]] = []
    for answer in ("They say hi.", "Still hi."):
        call = {"id": "c1", "name": "read_file", "arguments": {"path": str(work / "notes.md")}}
        steps += [{"reply": {"text": "", "tool_calls": [call]}}, {"reply": {"text": answer}}]
    daemon = start_daemon(agent_home(tmp_path, work, steps))
    yield daemon
    assert 0 == daemon.stop()


def test_a_message_sent_over_the_gateway_runs_the_agent_in_the_daemon(
    agent_daemon: RunningDaemon,
) -> None:
    """sessions.create then chat.send: the run reads the file, answers, and ends natural."""
    with gateway(agent_daemon) as client:
        session = client.call("sessions.create")["session_id"]
        sent = client.call("chat.send", {"session": session, "text": "what do my notes say?"})
        events = ended(client, session)
        pushed = list(client.events(timeout=0.5))

    assert "started" == sent["status"]
    names = [e["event"] for e in events]
    assert "session.call_answered" in names
    assert {"reason": "natural"}.items() <= events[-1]["fields"].items()
    positions = [e["position"] for e in events]
    assert list(range(1, len(events) + 1)) == positions
    records = [e["payload"]["record"]["kind"] for e in pushed if e["event"] == "chat.record"]
    assert "ModelAnswered" in records
    told = [e["event"] for e in pushed if e["event"].startswith("chat.")]
    assert "chat.run_ended" == told[-1]
    assert ["RunClosed"] == records[-1:]
    seqs = [e["seq"] for e in pushed]
    assert seqs == sorted(seqs)
    home = resolve_home({"LEDGERCLAW_HOME": str(agent_daemon.home)})
    assert AgentRig(home).verified(session).identical


def test_a_retried_send_names_its_run_and_another_text_is_refused(
    agent_daemon: RunningDaemon,
) -> None:
    """The same client_run_id answers `done` with the same run; a new text is a conflict."""
    with gateway(agent_daemon) as client:
        session = client.call("sessions.create")["session_id"]
        params = {"session": session, "text": "hello", "client_run_id": "r-1"}
        first = client.call("chat.send", params)
        ended(client, session)
        again = client.call("chat.send", params)
        with pytest.raises(GatewayError) as conflict:
            client.call("chat.send", {**params, "text": "something else"})
        history = client.call("chat.history", {"session": session, "after": 0, "limit": 500})

    assert ("done", first["run_id"], "natural") == (
        again["status"],
        again["run_id"],
        again["reason"],
    )
    assert "client_run_conflict" == conflict.value.code
    assert 1 == sum(e["event"] == "session.run_started" for e in history["events"])


def test_history_resumes_after_a_position_and_bad_params_are_typed(
    agent_daemon: RunningDaemon,
) -> None:
    """`after` skips what a client already has; a malformed session id is a bad request."""
    with gateway(agent_daemon) as client:
        session = client.call("sessions.create")["session_id"]
        client.call("chat.send", {"session": session, "text": "hi"})
        whole = ended(client, session)
        tail = client.call("chat.history", {"session": session, "after": 5, "limit": 500})
        with pytest.raises(GatewayError) as bad:
            client.call("chat.send", {"session": "nope", "text": "hi"})

    assert whole[5:] == tail["events"]
    assert "bad_control_request" == bad.value.code


def test_a_graceful_stop_ends_a_working_run_shutdown(tmp_path: Path, work: Path) -> None:
    """SIGTERM while the model is asked: the run ends `shutdown`, and it replays identically."""
    daemon = start_daemon(agent_home(tmp_path, work, [{"delay": 30}, {"reply": {"text": "late"}}]))
    with gateway(daemon) as client:
        session = client.call("sessions.create")["session_id"]
        client.call("chat.send", {"session": session, "text": "slow"})
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            events = client.call("chat.history", {"session": session, "limit": 500})["events"]
            if any(e["event"] == "session.model_requested" for e in events):
                break
            time.sleep(0.05)

    assert 0 == daemon.stop()
    home = resolve_home({"LEDGERCLAW_HOME": str(daemon.home)})
    check = AgentRig(home).verified(session)
    [run] = check.runs
    assert check.identical
    assert "" == run.verdict.note
    ends = [e for e in session_events(home, SessionId(session)) if isinstance(e, RunEnded)]
    assert [("shutdown", "the daemon stopped")] == [(str(e.reason), e.detail) for e in ends]


def session_events_pushed(
    client: GatewayClient, until: str, timeout: float = WAIT
) -> list[dict[str, Any]]:
    """The `session.event` payloads pushed, until one named `until` arrives."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for event in client.events(timeout=0.2):
            if event["event"] == "session.event":
                found.append(event["payload"])
                if event["payload"]["event"] == until:
                    return found
    msg = f"no {until} was pushed within {timeout} s; got {[f['event'] for f in found]}"
    raise AssertionError(msg)


def test_a_subscription_replays_then_streams_and_resumes_without_gaps(
    agent_daemon: RunningDaemon,
) -> None:
    """Two runs seen through two connections: positions run 1, 2, 3, … with none twice."""
    with gateway(agent_daemon) as first:
        session = first.call("sessions.create")["session_id"]
        first.call("chat.send", {"session": session, "text": "one"})
        ended(first, session)
        first.call("subscribe", {"session": session, "after": 0})
        seen = session_events_pushed(first, "session.run_ended")
        resume_after = seen[-1]["position"]
    with gateway(agent_daemon) as second:
        second.call("subscribe", {"session": session, "after": resume_after})
        second.call("chat.send", {"session": session, "text": "two"})
        seen += session_events_pushed(second, "session.run_ended")
        with pytest.raises(GatewayError) as unknown:
            second.call("subscribe", {"session": f"ses_{'0' * 32}"})

    positions = [e["position"] for e in seen]
    assert list(range(1, len(seen) + 1)) == positions
    assert 2 == sum(e["event"] == "session.run_ended" for e in seen)
    assert "unknown_session" == unknown.value.code


def test_a_session_is_described_its_tools_listed_and_it_closes_for_good(
    agent_daemon: RunningDaemon,
) -> None:
    """sessions.get counts its runs; tools.list is what its model is offered; close is final."""
    with gateway(agent_daemon) as client:
        session = client.call("sessions.create")["session_id"]
        client.call("chat.send", {"session": session, "text": "hi"})
        ended(client, session)
        described = client.call("sessions.get", {"session": session})
        tools = {t["name"]: t for t in client.call("tools.list", {"session": session})["tools"]}
        closed = client.call("sessions.close", {"session": session})
        with pytest.raises(GatewayError) as refused:
            client.call("chat.send", {"session": session, "text": "again"})

    assert (1, "natural", False) == (
        described["runs"],
        described["last_run_end"],
        described["running"],
    )
    assert tools["read_file"]["parallel_safe"]
    assert not tools["write_file"]["parallel_safe"]
    assert "client_closed" == closed["closed"]
    assert "session_closed" == refused.value.code


def test_a_killed_daemon_ends_the_run_crashed_and_a_retried_send_starts_no_second_run(
    tmp_path: Path, work: Path
) -> None:
    """Kill -9 mid-run, restart: the run ended `crashed`; the same client_run_id names it."""
    home = agent_home(tmp_path, work, [{"delay": 30}, {"reply": {"text": "late"}}])
    daemon = start_daemon(home)
    params: dict[str, Any] = {"text": "slow", "client_run_id": "r-kill"}
    with gateway(daemon) as client:
        params["session"] = client.call("sessions.create")["session_id"]
        first = client.call("chat.send", params)
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            events = client.call("chat.history", {"session": params["session"]})["events"]
            if any(e["event"] == "session.model_requested" for e in events):
                break
            time.sleep(0.05)
    daemon.stop(signal.SIGKILL)

    again = start_daemon(home, port=daemon.port)
    try:
        with gateway(again) as client:
            retried = client.call("chat.send", params)
            history = client.call("chat.history", {"session": params["session"], "limit": 500})
    finally:
        assert 0 == again.stop()

    assert ("done", first["run_id"], "crashed") == (
        retried["status"],
        retried["run_id"],
        retried["reason"],
    )
    assert 1 == sum(e["event"] == "session.run_started" for e in history["events"])


def test_history_pages_back_from_the_end_and_before_and_after_do_not_mix(
    agent_daemon: RunningDaemon,
) -> None:
    """Pages asked with `before` walk back to position 1 and join to the whole history."""
    with gateway(agent_daemon) as client:
        session = client.call("sessions.create")["session_id"]
        client.call("chat.send", {"session": session, "text": "hi"})
        whole = ended(client, session)
        pages: list[list[dict[str, Any]]] = []
        before, more = 10**9, True
        while more:
            page = client.call("chat.history", {"session": session, "before": before, "limit": 4})
            pages.insert(0, page["events"])
            before, more = page["next"], page["more"]
        with pytest.raises(GatewayError) as both:
            client.call("chat.history", {"session": session, "before": 3, "after": 1})

    assert whole == [event for page in pages for event in page]
    assert all(len(page) == 4 for page in pages[1:])
    assert "bad_control_request" == both.value.code
    assert "after or before" in str(both.value)


def test_sessions_opened_before_a_restart_are_listed_and_closed_ones_are_not(
    tmp_path: Path, work: Path
) -> None:
    """sessions.list reads the journal: after a restart it still names the open session."""
    home = agent_home(tmp_path, work, [])
    daemon = start_daemon(home)
    with gateway(daemon) as client:
        kept = client.call("sessions.create")["session_id"]
        gone = client.call("sessions.create")["session_id"]
        client.call("sessions.close", {"session": gone})
        before = client.call("sessions.list")["sessions"]
    assert 0 == daemon.stop()
    again = start_daemon(home, port=daemon.port)
    try:
        with gateway(again) as client:
            after = client.call("sessions.list")["sessions"]
    finally:
        assert 0 == again.stop()

    expected = [{"session_id": kept, "running": False, "run_id": None}]
    assert expected == before
    assert expected == after
