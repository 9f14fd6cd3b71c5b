"""Contract of the Journal port, run on the in-memory fake and on real SQLite; contract tests.

Every test takes the parametrized `journal` fixture, so the fake and the SQLite journal are held
to the same behaviour.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.errors import SessionExistsError, UnknownSessionError
from domain.devices.aggregate import REGISTRY_ID, DeviceRegistry
from domain.devices.errors import DeviceRevokedError, WeakSecretError
from domain.ids import AttemptId, CallId, DeviceId, RunId, SessionId
from domain.ports import Journal
from domain.session.aggregate import Session
from domain.session.errors import StaleWriterError, UnknownRunError
from domain.session.opening import SessionOpening
from domain.values.attempts import AttemptEnd
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.receipts import FileActivity, OutcomeCategory, ToolReceipt
from domain.values.runs import RunEndReason
from tests.builders import open_main, open_with_writer, start_and_claim, user_message

PAIRED_AT = datetime(2026, 1, 1, tzinfo=UTC)
SALT = bytes(range(16))
SECRET = "s" * 32


def run_lifecycle(session: Session) -> Session:
    """Drive one session through storage, a run, three tool attempts and the run's end."""
    run_id = RunId.new()
    read, denied, rejected = AttemptId.new(), AttemptId.new(), AttemptId.new()
    session.bind_storage(1, "/var/ledgerclaw/sessions/one")
    session.start_run(run_id, client_run_id="client-1")
    session.claim_writer(run_id)
    session.append_message(run_id, user_message("read notes.md, then tidy up ✓"))
    call = ToolCallRequest(
        call_id=CallId("call_1"), name="fs.read", arguments={"path": "/work/notes.md", "n": [1]}
    )
    session.append_message(
        run_id, ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=(call,))
    )
    session.start_attempt(run_id, read, CallId("call_1"), "fs.read")
    session.evaluate_policy(run_id, read, PolicyDecision.ALLOW, rule="read-in-roots")
    receipt = ToolReceipt(
        outcome=OutcomeCategory.SUCCESS,
        file_activity=(FileActivity(path="/work/notes.md", operation=FileOperation.READ),),
        project_declaration="/work",
    )
    session.record_receipt(run_id, read, receipt)
    session.append_message(
        run_id, ChatMessage(role=MessageRole.TOOL, content="# notes", call_id=CallId("call_1"))
    )
    session.start_attempt(run_id, denied, CallId("call_2"), "shell.run")
    session.evaluate_policy(
        run_id,
        denied,
        PolicyDecision.DENY,
        rule="no-shell",
        denial=DenialCategory.SHELL_POLICY,
    )
    session.start_attempt(run_id, rejected, CallId("call_3"), "fs.write")
    session.evaluate_policy(
        run_id,
        rejected,
        PolicyDecision.APPROVAL_REQUIRED,
        rule="write-asks",
        approval_mode=ApprovalMode.REQUEST,
    )
    session.request_approval(run_id, rejected, "write /work/notes.md", ApprovalMode.REQUEST)
    session.decide_approval(rejected, ApprovalVerdict.REJECTED, "operator")
    session.end_run(run_id, RunEndReason.NATURAL)
    return session


def pair_phone(journal: Journal, device_id: DeviceId) -> str:
    """Pair a phone under `device_id` and return its bearer token."""
    return journal.update_devices(
        lambda registry: registry.pair(device_id, "phone", SALT, SECRET, PAIRED_AT)
    )


def test_open_session_stores_a_session_that_session_returns(journal):
    """A session read back after opening has the key, kind and audience it was opened with."""
    session_id = open_main(journal)

    session = journal.session(session_id)

    assert session_id == session.session_id
    assert 1 == session.version
    assert ("main:test", SessionKind.MAIN, Audience.PERSONAL) == (
        session.session_key,
        session.kind,
        session.audience,
    )


def test_open_session_returns_the_live_session_it_stored(journal):
    """The session open_session returns equals the session replayed from the store."""
    session_id = SessionId.new()

    live = journal.open_session(SessionOpening(session_id, "k", SessionKind.MAIN, Audience.TEAM))

    assert live.state() == journal.session(session_id).state()


def test_a_subagent_session_keeps_the_link_to_its_parent(journal):
    """A subagent session stores the id of the session that started it."""
    parent = open_main(journal)
    child = SessionId.new()

    journal.open_session(
        SessionOpening(child, "sub:1", SessionKind.SUBAGENT, Audience.PERSONAL, parent)
    )

    assert parent == journal.session(child).parent_session_id


def test_update_session_returns_the_commands_result(journal):
    """update_session hands back whatever the command returned."""
    session_id = open_main(journal)
    run_id = RunId.new()
    journal.update_session(session_id, lambda s: s.start_run(run_id))

    ended = journal.update_session(session_id, lambda s: s.recover())

    assert [run_id] == ended


def test_update_session_stores_every_event_of_a_superseding_claim(journal):
    """A claim that supersedes a writer stores the claim and the old run's end together."""
    session_id, first = open_with_writer(journal)
    second = RunId.new()
    journal.update_session(session_id, lambda s: s.start_run(second))

    journal.update_session(session_id, lambda s: s.claim_writer(second))

    session = journal.session(session_id)
    assert 6 == session.version
    assert second == session.writer
    assert RunEndReason.SUPERSEDED == session.runs[first].ended
    assert session.runs[second].ended is None


def test_update_session_stores_all_events_a_denial_triggers(journal):
    """A deny decision stores the policy evaluation and the denial in one update."""
    session_id, run_id = open_with_writer(journal)
    attempt_id = AttemptId.new()
    journal.update_session(
        session_id, lambda s: s.start_attempt(run_id, attempt_id, CallId("c1"), "shell.run")
    )

    journal.update_session(
        session_id,
        lambda s: s.evaluate_policy(
            run_id, attempt_id, PolicyDecision.DENY, rule="r", denial=DenialCategory.POLICY
        ),
    )

    session = journal.session(session_id)
    assert 6 == session.version
    assert AttemptEnd.DENIED == session.attempts[attempt_id].end
    assert PolicyDecision.DENY == session.attempts[attempt_id].decision


def test_a_domain_error_in_a_command_stores_nothing(journal):
    """A command that raises a typed error stores nothing, not even events it triggered first."""
    session_id, _ = open_with_writer(journal)
    before = journal.session(session_id).state()
    started = RunId.new()

    def start_then_claim_unknown_run(session: Session) -> None:
        session.start_run(started)
        session.claim_writer(RunId.new())

    with pytest.raises(UnknownRunError):
        journal.update_session(session_id, start_then_claim_unknown_run)

    after = journal.session(session_id)
    assert 3 == after.version
    assert before == after.state()
    assert started not in after.runs


def test_a_stale_writer_cannot_append_and_nothing_is_stored(journal):
    """A run that lost the writer role gets StaleWriterError and its message is not stored."""
    session_id, first = open_with_writer(journal)
    second = RunId.new()
    journal.update_session(session_id, lambda s: start_and_claim(s, second))

    with pytest.raises(StaleWriterError):
        journal.update_session(session_id, lambda s: s.append_message(first, user_message("x")))

    session = journal.session(session_id)
    assert 6 == session.version
    assert [] == journal.transcript(session_id)
    assert 0 == session.message_count


@pytest.mark.parametrize(
    ("version", "messages", "writer_set"),
    [(1, 0, False), (2, 0, False), (3, 0, True), (5, 2, True), (7, 4, True)],
)
def test_session_at_a_version_returns_the_state_at_that_version(
    journal, version, messages, writer_set
):
    """session(id, version=N) rebuilds the state as it was after the N-th event."""
    session_id, run_id = open_with_writer(journal)
    for number in range(4):
        journal.update_session(
            session_id, lambda s, n=number: s.append_message(run_id, user_message(f"m{n}"))
        )

    session = journal.session(session_id, version=version)

    assert version == session.version
    assert messages == session.message_count
    contents = [m.content for m in journal.transcript(session_id, upto=version)]
    assert [f"m{n}" for n in range(messages)] == contents
    assert writer_set == (session.writer == run_id)


def test_session_at_a_version_does_not_change_the_latest_state(journal):
    """Reading an old version leaves the latest session as it was."""
    session_id, run_id = open_with_writer(journal)
    journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("hi")))

    journal.session(session_id, version=1)

    assert 4 == journal.session(session_id).version


def test_an_unknown_session_raises_unknown_session_error(journal):
    """Reading a session that was never opened raises UnknownSessionError."""
    with pytest.raises(UnknownSessionError):
        journal.session(SessionId.new())


def test_an_unknown_session_at_a_version_raises_unknown_session_error(journal):
    """Reading an old version of a session that was never opened raises UnknownSessionError."""
    with pytest.raises(UnknownSessionError):
        journal.session(SessionId.new(), version=1)


def test_updating_an_unknown_session_raises_unknown_session_error(journal):
    """A command on a session that was never opened raises UnknownSessionError."""
    with pytest.raises(UnknownSessionError):
        journal.update_session(SessionId.new(), lambda s: s.recover())


def test_the_device_registry_stream_is_not_a_session(journal):
    """A session id that names the device registry's stream is an unknown session."""
    pair_phone(journal, DeviceId.new())

    with pytest.raises(UnknownSessionError):
        journal.session(SessionId.from_uuid(REGISTRY_ID))


def test_reusing_a_session_id_is_refused_and_changes_nothing(journal):
    """Opening a second session under a used id fails in the store and keeps the first one."""
    session_id, _ = open_with_writer(journal)
    before = journal.session(session_id).state()

    with pytest.raises(SessionExistsError):
        journal.open_session(SessionOpening(session_id, "other", SessionKind.MAIN, Audience.PUBLIC))

    after = journal.session(session_id)
    assert 3 == after.version
    assert before == after.state()


def test_devices_is_an_empty_registry_when_none_was_paired(journal):
    """Before any pairing, devices() is a registry without devices."""
    registry = journal.devices()

    assert isinstance(registry, DeviceRegistry)
    assert {} == registry.devices


def test_reading_devices_stores_no_registry(journal):
    """devices() does not write the empty registry it returns."""
    journal.devices()

    assert 0 == journal.stream_version(REGISTRY_ID)


def test_a_paired_device_persists_and_authenticates_after_reload(journal):
    """A device paired through update_devices authenticates on a freshly rebuilt registry."""
    device_id = DeviceId.new()

    token = pair_phone(journal, device_id)

    registry = journal.devices()
    assert device_id == registry.authenticate(token)
    assert "phone" == registry.devices[device_id].display_name
    assert 2 == journal.stream_version(REGISTRY_ID)


def test_a_second_pairing_extends_the_stored_registry(journal):
    """Pairing a second device keeps the first one and appends to the same stream."""
    first, second = DeviceId.new(), DeviceId.new()
    first_token = pair_phone(journal, first)

    second_token = pair_phone(journal, second)

    registry = journal.devices()
    assert (first, second) == (
        registry.authenticate(first_token),
        registry.authenticate(second_token),
    )
    assert 3 == journal.stream_version(REGISTRY_ID)


def test_a_revoked_device_does_not_authenticate_after_reload(journal):
    """A revocation is stored, so the rebuilt registry refuses the device's token."""
    device_id = DeviceId.new()
    token = pair_phone(journal, device_id)

    journal.update_devices(lambda registry: registry.revoke(device_id, PAIRED_AT))

    with pytest.raises(DeviceRevokedError):
        journal.devices().authenticate(token)


def test_a_refused_pairing_stores_no_registry(journal):
    """A pairing refused by the registry leaves the journal without a registry stream."""
    with pytest.raises(WeakSecretError):
        journal.update_devices(
            lambda registry: registry.pair(DeviceId.new(), "phone", SALT, "short", PAIRED_AT)
        )

    assert 0 == journal.stream_version(REGISTRY_ID)


def test_replay_equals_the_live_session_after_a_full_lifecycle(journal):
    """The session a command ran on and the session replayed from the store are equal."""
    session_id = open_main(journal)

    live = journal.update_session(session_id, run_lifecycle)

    replayed = journal.session(session_id)
    assert live.version == replayed.version
    assert live.state() == replayed.state()


def test_replay_equals_the_live_session_across_many_updates(journal):
    """Live state after the last of many updates equals the replayed state."""
    session_id, run_id = open_with_writer(journal)

    def append_and_keep(session: Session) -> Session:
        session.append_message(run_id, user_message(f"m{session.version}"))
        return session

    live = journal.session(session_id)
    for _ in range(12):
        live = journal.update_session(session_id, append_and_keep)

    assert live.state() == journal.session(session_id).state()


def test_update_sessions_commits_each_command_and_returns_their_values_in_order(journal):
    """A batch runs one command per session and hands back each value in request order."""
    first, first_run = open_with_writer(journal)
    second, second_run = open_with_writer(journal)

    outcomes = journal.update_sessions(
        [
            (first, lambda s: s.append_message(first_run, user_message("one")) or "first"),
            (second, lambda s: s.append_message(second_run, user_message("two")) or "second"),
        ]
    )

    assert ["first", "second"] == [outcome.value for outcome in outcomes]
    assert [None, None] == [outcome.error for outcome in outcomes]
    assert ["one"] == [m.content for m in journal.transcript(first)]
    assert ["two"] == [m.content for m in journal.transcript(second)]


def test_a_failing_command_of_a_batch_gets_its_error_and_the_others_still_commit(journal):
    """A command that raises stores nothing and gets its exception; its neighbours commit."""
    good, run_id = open_with_writer(journal)
    bad, _ = open_with_writer(journal)

    outcomes = journal.update_sessions(
        [
            (good, lambda s: s.append_message(run_id, user_message("kept"))),
            (bad, lambda s: s.claim_writer(RunId.new())),
        ]
    )

    assert outcomes[0].error is None
    assert isinstance(outcomes[1].error, UnknownRunError)
    assert 4 == journal.session(good).version
    assert 3 == journal.session(bad).version


def test_a_batch_names_each_session_at_most_once(journal):
    """Two commands for one session in one batch are refused before anything runs."""
    session_id, _ = open_with_writer(journal)

    twice = [(session_id, lambda s: s.recover()), (session_id, lambda s: s.recover())]

    with pytest.raises(ValueError, match="at most one command per session"):
        journal.update_sessions(twice)

    assert 3 == journal.session(session_id).version


def test_a_batch_on_an_unknown_session_gets_unknown_session_error(journal):
    """A batch command on a session never opened comes back with UnknownSessionError."""
    [outcome] = journal.update_sessions([(SessionId.new(), lambda s: s.recover())])

    assert isinstance(outcome.error, UnknownSessionError)


def test_read_session_shows_the_latest_state_and_stores_nothing(journal):
    """read_session hands the view of the session as last saved, without a new event."""
    session_id, run_id = open_with_writer(journal)
    journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("hi")))

    seen = journal.read_session(session_id, lambda s: (s.version, s.writer, s.message_count))

    assert (4, run_id, 1) == seen
    assert 4 == journal.stream_version(session_id.as_uuid())


def test_read_session_of_an_unknown_session_raises_unknown_session_error(journal):
    """Viewing a session that was never opened raises UnknownSessionError."""
    with pytest.raises(UnknownSessionError):
        journal.read_session(SessionId.new(), lambda s: s.version)


def test_a_stream_saved_by_this_journal_is_kept_and_an_unknown_one_is_not(journal):
    """After an update the stream's copy is kept in memory; a stream never seen is not."""
    session_id, _ = open_with_writer(journal)

    assert journal.is_kept(session_id.as_uuid())
    assert not journal.is_kept(SessionId.new().as_uuid())


def test_stream_version_counts_a_sessions_events(journal):
    """stream_version is the number of events a session's stream holds, 0 for none."""
    session_id, _ = open_with_writer(journal)

    assert 3 == journal.stream_version(session_id.as_uuid())
    assert 0 == journal.stream_version(SessionId.new().as_uuid())
