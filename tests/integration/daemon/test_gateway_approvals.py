"""Approvals raised by daemon-hosted runs reach gateway clients and the command line alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.control.frames import Scope
from adapters.control.gateway_client import GatewayClient, GatewayError
from adapters.home import resolve_home
from domain.ids import SessionId
from tests.agent_rig import AgentRig
from tests.daemon_harness import RunningDaemon, cli_json, start_daemon
from tests.gateway_rig import agent_home, ended, gateway, next_event


def writing_daemon(tmp_path: Path, work: Path, *, approval_timeout: int = 20) -> RunningDaemon:
    """A daemon whose agent writes out.txt (which needs approval), then says what happened."""
    call = {
        "id": "w1",
        "name": "write_file",
        "arguments": {"path": str(work / "out.txt"), "content": "written"},
    }
    steps: list[dict[str, Any]] = [
        {"reply": {"text": "", "tool_calls": [call]}},
        {"reply": {"text": "Done."}},
    ]
    return start_daemon(agent_home(tmp_path, work, steps, approval_timeout=approval_timeout))


def start_writing(client: GatewayClient) -> tuple[str, dict[str, Any]]:
    """A new session asked to write; the approval its run waits on."""
    session = client.call("sessions.create")["session_id"]
    client.call("chat.send", {"session": session, "text": "write it"})
    return session, next_event(client, "approval.requested")


def verified(daemon: RunningDaemon, session: str) -> bool:
    """Whether the session replays identically."""
    home = resolve_home({"LEDGERCLAW_HOME": str(daemon.home)})
    return AgentRig(home).verified(SessionId(session)).identical


def test_a_gateway_client_hears_an_approval_and_its_answer_lets_the_run_go_on(
    tmp_path: Path, work: Path
) -> None:
    """approval.requested names the call; approvals.resolve once writes the file; no second."""
    daemon = writing_daemon(tmp_path, work)
    try:
        with gateway(daemon) as client:
            session, asked = start_writing(client)
            answered = client.call("approvals.resolve", {"id": asked["id"], "decision": "once"})
            resolved = next_event(client, "approval.resolved")
            ended(client, session)
            with pytest.raises(GatewayError) as again:
                client.call("approvals.resolve", {"id": asked["id"], "decision": "deny"})
    finally:
        assert 0 == daemon.stop()

    assert (session, "write_file", True) == (asked["session_id"], asked["tool"], asked["can_widen"])
    assert [str(work / "out.txt")] == asked["targets"]
    assert ("approved", "once") == (answered["verdict"], answered["scope"])
    assert {"id": asked["id"], "verdict": "approved", "scope": "once"}.items() <= resolved.items()
    assert "gateway (local control, ledgerclaw)" == resolved["decided_by"]
    assert "written" == (work / "out.txt").read_text()
    assert "unknown_approval" == again.value.code
    assert verified(daemon, session)


def test_a_denial_over_the_gateway_writes_nothing_and_the_run_ends_natural(
    tmp_path: Path, work: Path
) -> None:
    """A `deny` decision: the call is refused, the model hears so, and the run finishes."""
    daemon = writing_daemon(tmp_path, work)
    try:
        with gateway(daemon) as client:
            session, asked = start_writing(client)
            client.call("approvals.resolve", {"id": asked["id"], "decision": "deny"})
            events = ended(client, session)
    finally:
        assert 0 == daemon.stop()

    assert not (work / "out.txt").exists()
    [answer] = [e["fields"] for e in events if e["event"] == "session.call_answered"]
    assert ("access_denied", True) == (answer["outcome"], answer["failed"])
    [decided] = [e["fields"] for e in events if e["event"] == "session.approval_decided"]
    assert ("rejected", "gateway (local control, ledgerclaw)") == (
        decided["verdict"],
        decided["decided_by"],
    )
    assert {"reason": "natural"}.items() <= events[-1]["fields"].items()
    assert verified(daemon, session)


def test_the_command_line_answers_a_hosted_run_first_and_the_gateway_is_told(
    tmp_path: Path, work: Path
) -> None:
    """`ledgerclaw approvals approve` decides; the gateway hears who; a later answer is refused."""
    daemon = writing_daemon(tmp_path, work)
    try:
        with gateway(daemon) as client:
            session, asked = start_writing(client)
            listed = cli_json(daemon.home, "approvals", "list", "--json")
            cli_json(daemon.home, "approvals", "approve", asked["id"], "--json")
            resolved = next_event(client, "approval.resolved")
            with pytest.raises(GatewayError) as late:
                client.call("approvals.resolve", {"id": asked["id"], "decision": "once"})
            ended(client, session)
    finally:
        assert 0 == daemon.stop()

    assert [asked["id"]] == [row["id"] for row in listed]
    assert ("approved", "cli (local control)") == (resolved["verdict"], resolved["decided_by"])
    assert "unknown_approval" == late.value.code
    assert "written" == (work / "out.txt").read_text()


def test_an_unanswered_approval_is_announced_expired(tmp_path: Path, work: Path) -> None:
    """The approval timeout passes: approval.resolved says expired, and nothing is written."""
    daemon = writing_daemon(tmp_path, work, approval_timeout=1)
    try:
        with gateway(daemon) as client:
            session, asked = start_writing(client)
            resolved = next_event(client, "approval.resolved")
            ended(client, session)
    finally:
        assert 0 == daemon.stop()

    assert {"id": asked["id"], "verdict": "expired", "decided_by": None}.items() <= resolved.items()
    assert not (work / "out.txt").exists()


def test_only_connections_that_may_answer_hear_approvals(tmp_path: Path, work: Path) -> None:
    """A read-only connection is offered no approval events and may not resolve."""
    daemon = writing_daemon(tmp_path, work)
    try:
        token = daemon.pair("reader")
        with (
            gateway(daemon) as operator,
            GatewayClient.open(daemon.port, token=token) as reader,
        ):
            session, asked = start_writing(operator)
            with pytest.raises(GatewayError) as refused:
                reader.call("approvals.resolve", {"id": asked["id"], "decision": "once"})
            operator.call("approvals.resolve", {"id": asked["id"], "decision": "once"})
            ended(operator, session)
            heard = [e["event"] for e in reader.events(timeout=0.5)]
    finally:
        assert 0 == daemon.stop()

    assert (Scope.READ,) == tuple(reader.hello["scopes"])
    assert "approval.requested" not in reader.hello["events"]
    assert "approval.requested" in operator.hello["events"]
    assert refused.value.code in {"forbidden", "missing_scope"}
    assert not any(name.startswith("approval.") for name in heard)
    assert any(name == "chat.run_ended" for name in heard)


def test_bad_resolve_params_are_typed(tmp_path: Path, work: Path) -> None:
    """An unknown decision, or a directory for a non-directory answer, is a bad request."""
    daemon = writing_daemon(tmp_path, work)
    try:
        with gateway(daemon) as client:
            session, asked = start_writing(client)
            codes = []
            for params in (
                {"id": asked["id"], "decision": "forever"},
                {"id": asked["id"], "decision": "once", "directory": str(work)},
                {"id": asked["id"]},
            ):
                with pytest.raises(GatewayError) as bad:
                    client.call("approvals.resolve", params)
                codes.append(bad.value.code)
            client.call(
                "approvals.resolve",
                {"id": asked["id"], "decision": "directory", "directory": str(work)},
            )
            ended(client, session)
    finally:
        assert 0 == daemon.stop()

    assert ["bad_control_request", "approval_scope", "bad_control_request"] == codes
    assert "written" == (work / "out.txt").read_text()
