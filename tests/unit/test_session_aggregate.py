"""Story tests for the Session lifecycle: opening, storage, runs, the writer and recovery."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from pydantic import ValidationError

from domain.ids import RunId, SessionId
from domain.session import errors
from domain.session.aggregate import Session
from domain.session.events import (
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    MessageAppended,
    RunEnded,
    RunStarted,
    SessionClosed,
    SessionEvent,
    SessionOpened,
    StorageBound,
    WriterClaimed,
)
from domain.session.opening import SessionOpening
from domain.values.attempts import AttemptEnd
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalVerdict, DenialCategory, PolicyDecision
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.runs import RunEndReason, SessionCloseReason
from domain.values.storage import StorageBinding
from tests.unit.session_story import (
    ATTEMPT,
    CALL,
    HELLO,
    OTHER_ATTEMPT,
    OTHER_RUN,
    PARENT,
    RUN,
    RUN_COMMANDS,
    SESSION,
    AttemptCommand,
    after,
    attempt_started,
    commands,
    drain,
    evaluated,
    history,
    kinds,
    pending,
    received,
    refused,
    replay,
    run_started,
    when,
    writer,
)

# -- open ---------------------------------------------------------------------------------


def test_open_records_a_main_session_without_parent() -> None:
    """Opening a main session records one SessionOpened with no parent."""
    [opened] = history()
    assert SessionOpened is type(opened)
    assert ("main", SessionKind.MAIN, None) == (
        opened.session_key,
        opened.kind,
        opened.parent_session_id,
    )
    assert SESSION == replay([opened]).session_id


def test_open_links_a_subagent_to_its_parent() -> None:
    """A subagent session records the parent it was delegated from."""
    session = Session.open(
        SessionOpening(SESSION, "child", SessionKind.SUBAGENT, Audience.TEAM, PARENT)
    )
    [opened] = drain(session)
    assert PARENT == opened.parent_session_id
    assert PARENT == replay([opened]).state().parent_session_id


@pytest.mark.parametrize(
    ("kind", "parent"),
    [(SessionKind.MAIN, PARENT), (SessionKind.SUBAGENT, None), (SessionKind.SUBAGENT, SESSION)],
    ids=["main-with-parent", "subagent-without-parent", "own-parent"],
)
def test_open_refuses_a_broken_parent_link(kind: SessionKind, parent: SessionId | None) -> None:
    """A main session with a parent, an orphan subagent, or a self-parent is refused."""
    with pytest.raises(errors.InvalidSessionLinkError):
        Session.open(SessionOpening(SESSION, "key", kind, Audience.PERSONAL, parent))


# -- storage and runs ---------------------------------------------------------------------


def test_bind_storage_records_the_envelope_once() -> None:
    """Binding storage records StorageBound and fixes the binding."""
    given = history()
    new = when(given, lambda s: s.bind_storage(1, "/home/sessions/a"))
    assert [StorageBound] == kinds(new)
    expected = StorageBinding(layout_version=1, envelope_root="/home/sessions/a")
    assert expected == after(given, new).storage


def test_bind_storage_refuses_a_second_binding_even_an_identical_one() -> None:
    """A second binding is refused, even with the same layout and root."""
    given = history(lambda s: s.bind_storage(1, "/home/sessions/a"))
    refused(given, lambda s: s.bind_storage(1, "/home/sessions/a"), errors.StorageAlreadyBoundError)


@pytest.mark.parametrize("root", ["home/a", "/home/../a", "/home/./a", "/home/a/", "/home//a"])
def test_bind_storage_rejects_a_root_that_is_not_canonical(root: str) -> None:
    """A relative or dotted envelope root fails validation and records nothing."""
    refused(history(), lambda s: s.bind_storage(1, root), ValidationError)


def test_start_run_records_the_run_and_its_client_run_id() -> None:
    """Starting a run records RunStarted and makes the run findable by client run id."""
    given = history()
    new = when(given, lambda s: s.start_run(RUN, "client-1"))
    assert [RunStarted] == kinds(new)
    session = after(given, new)
    assert RUN == session.run_for_client("client-1")
    assert session.run_for_client("client-2") is None


def test_start_run_refuses_a_duplicate_run_id() -> None:
    """A run id is started at most once."""
    refused(history(writer()), lambda s: s.start_run(RUN), errors.RunAlreadyStartedError)


def test_start_run_refuses_a_reused_client_run_id_naming_the_existing_run() -> None:
    """A retried client run id is refused with the run it already started."""
    given = history(writer(client_run_id="client-1"))
    error = refused(
        given, lambda s: s.start_run(OTHER_RUN, "client-1"), errors.ClientRunAlreadyStartedError
    )
    assert ("client-1", RUN) == (error.client_run_id, error.run_id)


# -- writer -------------------------------------------------------------------------------


def test_claim_writer_makes_the_first_run_the_writer() -> None:
    """The first claim records WriterClaimed with nothing superseded."""
    given = history(lambda s: s.start_run(RUN))
    [claimed] = when(given, lambda s: s.claim_writer(RUN))
    assert (WriterClaimed, RUN, None) == (type(claimed), claimed.run_id, claimed.superseded_run_id)
    assert RUN == after(given, [claimed]).writer


def test_claim_writer_refuses_an_unknown_run() -> None:
    """Only a started run can become the writer."""
    refused(history(), lambda s: s.claim_writer(RUN), errors.UnknownRunError)


def test_claim_writer_refuses_an_ended_run() -> None:
    """A run that has ended cannot become the writer again."""
    given = history(writer(), lambda s: s.end_run(RUN, RunEndReason.NATURAL))
    refused(given, lambda s: s.claim_writer(RUN), errors.RunEndedError)


def test_claim_writer_again_is_a_no_op() -> None:
    """The current writer claiming again records nothing."""
    assert [] == when(history(writer()), lambda s: s.claim_writer(RUN))


def test_claim_writer_supersedes_and_ends_the_previous_writer() -> None:
    """A second run's claim records the takeover and ends the old run as superseded."""
    given = history(writer(), run_started(OTHER_RUN))
    claimed, ended = when(given, lambda s: s.claim_writer(OTHER_RUN))
    assert (WriterClaimed, OTHER_RUN, RUN) == (
        type(claimed),
        claimed.run_id,
        claimed.superseded_run_id,
    )
    assert (RunEnded, RUN, RunEndReason.SUPERSEDED) == (type(ended), ended.run_id, ended.reason)
    session = after(given, [claimed, ended])
    assert OTHER_RUN == session.writer
    assert RunEndReason.SUPERSEDED == session.runs[RUN].ended


def test_claim_writer_ends_the_open_attempts_of_the_superseded_run() -> None:
    """An allowed attempt becomes unknown; one not yet allowed is denied as run ended."""
    given = history(
        writer(),
        evaluated(PolicyDecision.ALLOW, ATTEMPT),
        pending(OTHER_ATTEMPT),
        run_started(OTHER_RUN),
    )
    new = when(given, lambda s: s.claim_writer(OTHER_RUN))
    expected = [WriterClaimed, AttemptOutcomeMarkedUnknown, AttemptDenied, RunEnded]
    assert expected == kinds(new)
    assert (ATTEMPT, OTHER_ATTEMPT) == (new[1].attempt_id, new[2].attempt_id)
    assert DenialCategory.RUN_ENDED == new[2].category
    attempts = after(given, new).attempts
    assert AttemptEnd.UNKNOWN == attempts[ATTEMPT].end
    assert AttemptEnd.DENIED == attempts[OTHER_ATTEMPT].end


def test_append_message_records_the_writers_message() -> None:
    """The writer appends a message to the transcript."""
    given = history(writer())
    new = when(given, lambda s: s.append_message(RUN, HELLO))
    assert [MessageAppended] == kinds(new)
    assert HELLO == new[0].message
    assert 1 == after(given, new).message_count


@commands(RUN_COMMANDS)
def test_writer_commands_refuse_a_run_that_is_not_the_writer(command: AttemptCommand) -> None:
    """A started run that does not hold the writer is stale."""
    given = history(writer(), evaluated(PolicyDecision.ALLOW), run_started(OTHER_RUN))
    refused(given, lambda s: command(s, OTHER_RUN, ATTEMPT), errors.StaleWriterError)


@commands(RUN_COMMANDS)
def test_writer_commands_refuse_a_run_that_has_ended(command: AttemptCommand) -> None:
    """Nothing is appended on behalf of a run that has ended."""
    given = history(writer(), attempt_started(), lambda s: s.end_run(RUN, RunEndReason.ABORT))
    refused(given, lambda s: command(s, RUN, ATTEMPT), errors.RunEndedError)


@commands(RUN_COMMANDS)
def test_writer_commands_refuse_a_run_never_started(command: AttemptCommand) -> None:
    """A run id the session never saw is unknown."""
    refused(history(writer()), lambda s: command(s, OTHER_RUN, ATTEMPT), errors.UnknownRunError)


# -- run endings --------------------------------------------------------------------------


def test_end_run_ends_the_writer_and_its_open_attempts() -> None:
    """Ending the writer records RunEnded, clears the writer and closes its attempts."""
    given = history(writer(), evaluated(PolicyDecision.ALLOW))
    new = when(given, lambda s: s.end_run(RUN, RunEndReason.NATURAL))
    expected: list[type[SessionEvent]] = [AttemptOutcomeMarkedUnknown, RunEnded]
    assert expected == kinds(new)
    session = after(given, new)
    assert session.writer is None
    assert RunEndReason.NATURAL == session.runs[RUN].ended
    assert [] == session.open_attempts()


def test_end_run_refuses_a_run_that_already_ended() -> None:
    """A run ends once."""
    given = history(writer(), lambda s: s.end_run(RUN, RunEndReason.NATURAL))
    refused(given, lambda s: s.end_run(RUN, RunEndReason.ABORT), errors.RunEndedError)


def test_recover_ends_every_live_run_as_crashed() -> None:
    """Recovery crashes every live run, leaves allowed attempts unknown and clears the writer."""
    finished = RunId.from_uuid(UUID(int=12))
    given = history(
        run_started(finished),
        lambda s: s.end_run(finished, RunEndReason.NATURAL),
        writer(),
        evaluated(PolicyDecision.ALLOW, ATTEMPT),
        evaluated(PolicyDecision.APPROVAL_REQUIRED, OTHER_ATTEMPT),
        run_started(OTHER_RUN),
    )
    session = replay(given)
    assert [RUN, OTHER_RUN] == session.recover()
    new = drain(session)
    assert [AttemptOutcomeMarkedUnknown, AttemptDenied, RunEnded, RunEnded] == kinds(new)
    assert DenialCategory.RUN_ENDED == new[1].category
    state = after(given, new).state()
    assert state.writer is None
    ended = {run_id: run.ended for run_id, run in state.runs.items()}
    expected = {
        finished: RunEndReason.NATURAL,
        RUN: RunEndReason.CRASHED,
        OTHER_RUN: RunEndReason.CRASHED,
    }
    assert expected == ended
    assert (AttemptEnd.UNKNOWN, AttemptEnd.DENIED) == (
        state.attempts[ATTEMPT].end,
        state.attempts[OTHER_ATTEMPT].end,
    )


def test_recover_without_live_runs_records_nothing() -> None:
    """A session whose runs all ended has nothing to recover."""
    session = replay(history(writer(), lambda s: s.end_run(RUN, RunEndReason.NATURAL)))
    assert [] == session.recover()
    assert [] == drain(session)


@pytest.mark.parametrize(
    ("reason", "run_reason"),
    [
        (SessionCloseReason.CLIENT_CLOSED, RunEndReason.NATURAL),
        (SessionCloseReason.IDLE, RunEndReason.NATURAL),
        (SessionCloseReason.DAEMON_STOPPED, RunEndReason.SHUTDOWN),
        (SessionCloseReason.CRASHED, RunEndReason.CRASHED),
        (SessionCloseReason.REVOKED, RunEndReason.ABORT),
    ],
)
def test_closing_ends_live_runs_first_then_closes(
    reason: SessionCloseReason, run_reason: RunEndReason
) -> None:
    """A close ends the live run for the matching reason (its allowed attempt as unknown)."""
    given = history(writer(), evaluated(PolicyDecision.ALLOW, ATTEMPT))
    session = replay(given)
    session.close(reason)
    new = drain(session)
    assert [AttemptOutcomeMarkedUnknown, RunEnded, SessionClosed] == kinds(new)
    assert (run_reason, reason) == (new[1].reason, new[2].reason)
    state = after(given, new).state()
    assert (reason, None) == (state.closed, state.writer)


def test_a_closed_session_starts_no_run_and_closes_once() -> None:
    """After a close, a new run and a second close are both refused."""
    given = history(writer(), lambda s: s.close(SessionCloseReason.CLIENT_CLOSED))
    refused(given, run_started(OTHER_RUN), errors.SessionClosedError)
    refused(given, lambda s: s.close(SessionCloseReason.IDLE), errors.SessionClosedError)


def test_an_opened_session_keeps_the_clients_declared_name_and_version() -> None:
    """The client's name and version are facts of the opening event and the state."""
    session = Session.open(
        SessionOpening(
            SESSION,
            "mcp:x",
            SessionKind.MAIN,
            Audience.PERSONAL,
            client_name="ed",
            client_version="2",
        )
    )
    [opened] = drain(session)
    assert ("ed", "2") == (opened.client_name, opened.client_version)
    assert ("ed", "2") == (replay([opened]).state().client_name, session.state().client_version)


# -- transcript values --------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"role": MessageRole.TOOL, "content": "42"},
        {"role": MessageRole.USER, "call_id": "call_1"},
        {"role": MessageRole.USER, "tool_calls": [{"call_id": "call_1", "name": "fs.read"}]},
        {"role": MessageRole.TOOL, "call_id": "c", "tool_calls": [{"call_id": "c", "name": "x"}]},
    ],
    ids=["tool-without-call-id", "user-with-call-id", "user-with-tool-calls", "tool-with-calls"],
)
def test_chat_message_rejects_a_misshapen_message(fields: dict[str, Any]) -> None:
    """Only a tool message names a call, and only an assistant message carries tool calls."""
    with pytest.raises(ValidationError):
        ChatMessage(**fields)


def test_chat_message_accepts_assistant_calls_and_tool_answers() -> None:
    """An assistant may request calls and a tool message answers one by id."""
    request = ToolCallRequest(call_id=CALL, name="fs.read", arguments={"path": "/a"})
    asked = ChatMessage(role=MessageRole.ASSISTANT, tool_calls=(request,))
    answer = ChatMessage(role=MessageRole.TOOL, content="text", call_id=CALL)
    assert ((request,), CALL) == (asked.tool_calls, answer.call_id)


def test_state_after_replay_equals_the_live_state() -> None:
    """Replaying the recorded events rebuilds exactly the live state."""
    session = Session.open(SessionOpening(SESSION, "main", SessionKind.MAIN, Audience.PERSONAL))
    session.bind_storage(1, "/home/sessions/a")
    writer(client_run_id="client-1")(session)
    session.append_message(RUN, HELLO)
    received("/a", "/b")(session)
    pending(OTHER_ATTEMPT)(session)
    session.decide_approval(OTHER_ATTEMPT, ApprovalVerdict.APPROVED, "operator")
    session.start_run(OTHER_RUN)
    session.claim_writer(OTHER_RUN)
    session.recover()
    events = drain(session)
    assert session.state() == replay(events).state()
