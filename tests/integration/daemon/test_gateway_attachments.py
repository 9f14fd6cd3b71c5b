"""Attachments over the gateway, on a real daemon whose agent plays a scripted model.

Inbound: files sent with `chat.send` are staged, checked, journaled with the run and, when
admitted, moved to the workspace inbox and announced in the user's message; a refused file
never reaches the workspace. Outbound: `attach_file` from the artifacts reaches clients as a
`session.attachment_sent` event, and `attachments.get` returns the very bytes.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.control.gateway_client import GatewayClient, GatewayError
from adapters.home import resolve_home
from domain.ids import SessionId
from tests.agent_rig import AgentRig
from tests.daemon_harness import RunningDaemon, start_daemon
from tests.gateway_rig import agent_home, ended, gateway, next_event

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 32
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56
SCRIPT = b"#!/bin/sh\necho hello\n"
REPLIES = [{"reply": {"text": "Noted."}}] * 40
"""Enough answers for every run of a module's daemon, in whatever order its tests run."""


def zipped() -> bytes:
    """A real zip archive holding one text file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("inner.txt", "hello")
    return buffer.getvalue()


def attachment(name: str, media_type: str, data: bytes) -> dict[str, str]:
    """One file as `chat.send` carries it."""
    return {"name": name, "media_type": media_type, "data": base64.b64encode(data).decode()}


def daemon_with(root: Path, steps: list[dict[str, Any]], attachments: str = "") -> RunningDaemon:
    """A daemon whose agent plays `steps`, with `attachments` as its `[attachments]` section."""
    work = root / "work"
    work.mkdir(parents=True, exist_ok=True)
    (work / "notes.txt").write_text("alpha\n")
    home = agent_home(root, work.resolve(), steps)
    if attachments:
        config = home / "config.toml"
        config.write_text(config.read_text() + f"\n[attachments]\n{attachments}\n")
    return start_daemon(home)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """A daemon with the default attachment rules."""
    daemon = daemon_with(tmp_path_factory.mktemp("plain"), REPLIES)
    yield daemon
    assert 0 == daemon.stop()


@pytest.fixture(scope="module")
def permissive(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningDaemon]:
    """A daemon with small caps that admits archives and executables."""
    rules = (
        "max_count = 3\nmax_file_bytes = 1024\nmax_total_bytes = 1536\n"
        "allow_archives = true\nallow_executables = true\n"
    )
    daemon = daemon_with(tmp_path_factory.mktemp("permissive"), REPLIES, rules)
    yield daemon
    assert 0 == daemon.stop()


def envelope(daemon: RunningDaemon, session: str) -> Path:
    """The session's storage envelope."""
    return daemon.home.resolve() / "sessions" / session


def files_under(directory: Path) -> list[str]:
    """Every file below `directory`, relative, sorted."""
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file())


def send(
    client: GatewayClient, files: list[dict[str, str]], text: str = "here you go"
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """A new session, one send with `files`, and its history once the run ended."""
    session = client.call("sessions.create")["session_id"]
    answer = client.call("chat.send", {"session": session, "text": text, "attachments": files})
    return session, answer, ended(client, session)


def named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The fields of every event called `name`."""
    return [e["fields"] for e in events if e["event"] == name]


def user_message(events: list[dict[str, Any]]) -> str:
    """The user's message of the session's run, as the model was asked with it."""
    [message] = [
        m["message"]["content"]
        for m in named(events, "session.message_appended")
        if m["message"]["role"] == "user"
    ]
    return str(message)


def replays(daemon: RunningDaemon, session: str) -> bool:
    """Whether `session replay --verify` of the session says identical."""
    home = resolve_home({"LEDGERCLAW_HOME": str(daemon.home)})
    return AgentRig(home).verified(SessionId(session)).identical


def test_an_admitted_file_lands_in_the_inbox_journaled_and_announced_to_the_model(
    plain: RunningDaemon,
) -> None:
    """The PNG is in workspace/inbox, its decision is journaled before the run's prompt."""
    with gateway(plain) as client:
        session, answer, events = send(client, [attachment("chart.png", "image/png", PNG)])

    inbox = envelope(plain, session) / "workspace" / "inbox"
    [decision] = answer["attachments"]
    [received] = named(events, "session.attachment_received")
    assert (True, "accepted", str(inbox / "chart.png")) == (
        decision["accepted"],
        decision["reason"],
        decision["path"],
    )
    assert {
        "name": "chart.png",
        "claimed_type": "image/png",
        "sniffed_type": "image/png",
        "size": len(PNG),
        "sha256": hashlib.sha256(PNG).hexdigest(),
        "accepted": True,
        "reason": "accepted",
        "path": str(inbox / "chart.png"),
    }.items() <= received.items()
    assert PNG == (inbox / "chart.png").read_bytes()
    names = [e["event"] for e in events]
    assert names.index("session.attachment_received") < names.index("session.agent_run_configured")
    assert names.index("session.run_started") + 2 == names.index("session.attachment_received")
    assert f"{inbox / 'chart.png'} (image/png, {len(PNG)} bytes)" in user_message(events)
    assert [] == files_under(envelope(plain, session) / "attachment-staging")
    assert replays(plain, session)


def test_refused_files_are_journaled_with_their_reason_and_never_reach_the_workspace(
    plain: RunningDaemon,
) -> None:
    """An ELF, a `#!` script, a zip and a PNG named .txt: each refused; the text still runs."""
    files = [
        attachment("tool", "application/octet-stream", ELF),
        attachment("run.sh", "text/x-shellscript", SCRIPT),
        attachment("bundle.zip", "application/zip", zipped()),
        attachment("shot.txt", "text/plain", PNG),
    ]
    with gateway(plain) as client:
        session, answer, events = send(client, files)

    expected = ["executable", "executable", "archive", "type_mismatch"]
    assert expected == [d["reason"] for d in answer["attachments"]]
    journaled = named(events, "session.attachment_received")
    assert expected == [r["reason"] for r in journaled]
    assert [False] * 4 == [r["accepted"] for r in journaled]
    assert [None] * 4 == [r["path"] for r in journaled]
    assert "but the content is image/png" in journaled[3]["detail"]
    assert [] == files_under(envelope(plain, session) / "workspace")
    assert [] == files_under(envelope(plain, session) / "attachment-staging")
    assert "here you go" == user_message(events)
    assert "natural" == named(events, "session.run_ended")[-1]["reason"]
    assert replays(plain, session)


def test_malformed_attachments_are_typed_errors_that_journal_nothing(
    plain: RunningDaemon,
) -> None:
    """Bad base64, a media type that is none, a missing field: bad_control_request, no run."""
    bad = [
        {"name": "a.txt", "media_type": "text/plain", "data": "not base64!"},
        {"name": "a.txt", "media_type": "plain", "data": ""},
        {"name": "a.txt", "data": ""},
        {"name": "", "media_type": "text/plain", "data": ""},
    ]
    with gateway(plain) as client:
        session = client.call("sessions.create")["session_id"]
        before = client.call("chat.history", {"session": session})["events"]
        codes, messages = [], []
        for item in bad:
            with pytest.raises(GatewayError) as refused:
                client.call("chat.send", {"session": session, "text": "hi", "attachments": [item]})
            codes.append(refused.value.code)
            messages.append(str(refused.value))
        after = client.call("chat.history", {"session": session})["events"]

    assert ["bad_control_request"] * 4 == codes
    assert "attachments.0.data: not valid base64" in messages[0]
    assert "attachments.0.media_type: not a media type" in messages[1]
    assert before == after
    assert [] == files_under(envelope(plain, session) / "workspace")
    assert [] == files_under(envelope(plain, session) / "attachment-staging")


def test_a_retried_send_with_the_same_files_names_its_run_and_other_files_conflict(
    plain: RunningDaemon,
) -> None:
    """Same client_run_id, text and bytes: `done`; the same text with other bytes: conflict."""
    params = {
        "text": "the report",
        "client_run_id": "with-files-1",
        "attachments": [attachment("r.md", "text/markdown", b"# R\n")],
    }
    with gateway(plain) as client:
        params["session"] = session = client.call("sessions.create")["session_id"]
        first = client.call("chat.send", params)
        ended(client, session)
        again = client.call("chat.send", params)
        other = {**params, "attachments": [attachment("r.md", "text/markdown", b"# S\n")]}
        with pytest.raises(GatewayError) as conflict:
            client.call("chat.send", other)

    assert ("done", first["run_id"]) == (again["status"], again["run_id"])
    assert "client_run_conflict" == conflict.value.code
    assert ["r.md"] == files_under(envelope(plain, session) / "workspace" / "inbox")


def test_caps_refuse_files_by_size_count_and_message_total(permissive: RunningDaemon) -> None:
    """Under 3 files, 1024 bytes each, 1536 a message: too_large, message_too_large, too_many."""
    files = [
        attachment("big.txt", "text/plain", b"x" * 1025),
        attachment("a.txt", "text/plain", b"a" * 1000),
        attachment("b.txt", "text/plain", b"b" * 1000),
        attachment("c.txt", "text/plain", b"c"),
    ]
    with gateway(permissive) as client:
        session, answer, events = send(client, files)

    expected = ["too_large", "accepted", "message_too_large", "too_many"]
    assert expected == [d["reason"] for d in answer["attachments"]]
    assert expected == [r["reason"] for r in named(events, "session.attachment_received")]
    assert ["a.txt"] == files_under(envelope(permissive, session) / "workspace" / "inbox")
    assert "b.txt" not in user_message(events)
    assert replays(permissive, session)


def test_archives_and_executables_are_admitted_when_configured(permissive: RunningDaemon) -> None:
    """With allow_archives and allow_executables, the zip and the script reach the inbox."""
    archive = zipped()
    files = [
        attachment("bundle.zip", "application/zip", archive),
        attachment("run.sh", "text/x-shellscript", SCRIPT),
    ]
    with gateway(permissive) as client:
        session, answer, events = send(client, files)

    assert [True, True] == [d["accepted"] for d in answer["attachments"]]
    assert ["application/zip", "text/x-shellscript"] == [
        d["media_type"] for d in answer["attachments"]
    ]
    inbox = envelope(permissive, session) / "workspace" / "inbox"
    assert ["bundle.zip", "run.sh"] == files_under(inbox)
    assert archive == (inbox / "bundle.zip").read_bytes()
    assert "bundle.zip (application/zip" in user_message(events)


# -- attach_file ---------------------------------------------------------------------------


def test_a_file_the_agent_attaches_reaches_clients_and_fetches_as_the_same_bytes(
    tmp_path: Path,
) -> None:
    """attach_file from the artifacts: pushed as session.attachment_sent, fetched identical."""
    steps: list[dict[str, Any]] = [
        {
            "reply": {
                "text": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "name": "attach_file",
                        "arguments": {"path": "../artifacts/report.md"},
                    }
                ],
            }
        },
        {"reply": {"text": "Attached."}},
    ]
    daemon = daemon_with(tmp_path, steps)
    report = b"# Report\n\nAll good.\n"
    try:
        with gateway(daemon) as client:
            session = client.call("sessions.create")["session_id"]
            (envelope(daemon, session) / "artifacts" / "report.md").write_bytes(report)
            client.call("subscribe", {"session": session})
            client.call("chat.send", {"session": session, "text": "send me the report"})
            pushed = next_event(client, "session.event")
            while pushed["event"] != "session.attachment_sent":
                pushed = next_event(client, "session.event")
            events = ended(client, session)
            fields = pushed["fields"]
            fetched = client.call(
                "attachments.get", {"session": session, "attachment": fields["attachment_id"]}
            )
            with pytest.raises(GatewayError) as unknown:
                client.call(
                    "attachments.get", {"session": session, "attachment": f"fil_{'0' * 32}"}
                )
    finally:
        assert 0 == daemon.stop()

    assert {
        "name": "report.md",
        "media_type": "text/plain",
        "size": len(report),
        "sha256": hashlib.sha256(report).hexdigest(),
    }.items() <= fields.items()
    assert [fields] == named(events, "session.attachment_sent")
    assert report == base64.b64decode(fetched["data"])
    assert (fields["sha256"], "report.md") == (fetched["sha256"], fetched["name"])
    assert "unknown_attachment" == unknown.value.code
    assert replays(daemon, session)


def test_attaching_a_file_outside_the_allowed_roots_is_denied_with_its_decision_journaled(
    tmp_path: Path,
) -> None:
    """The work root allows reading, not attaching: the pipeline denies it and says why."""
    notes = (tmp_path / "work" / "notes.txt").resolve()
    steps: list[dict[str, Any]] = [
        {
            "reply": {
                "text": "",
                "tool_calls": [
                    {"id": "c1", "name": "attach_file", "arguments": {"path": str(notes)}}
                ],
            }
        },
        {"reply": {"text": "Could not."}},
    ]
    daemon = daemon_with(tmp_path, steps)
    try:
        with gateway(daemon) as client:
            session = client.call("sessions.create")["session_id"]
            client.call("chat.send", {"session": session, "text": "attach my notes"})
            events = ended(client, session)
    finally:
        assert 0 == daemon.stop()

    [decision] = named(events, "session.policy_evaluated")
    [denied] = named(events, "session.attempt_denied")
    assert ("deny", "outside_roots") == (decision["decision"], denied["category"])
    assert "does not allow attach" in denied["detail"]
    assert [] == named(events, "session.attachment_sent")
    assert not (envelope(daemon, session) / "outbox").exists()
    assert replays(daemon, session)
