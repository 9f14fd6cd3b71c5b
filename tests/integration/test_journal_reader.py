"""The read-only journal reader: session lists, id prefixes, timelines; integration tests."""

from __future__ import annotations

import pytest

from adapters.errors import (
    AmbiguousSessionError,
    NotAJournalError,
    UnknownSessionError,
)
from adapters.journal.reader import JournalReader
from domain.ids import DeviceId, SessionId
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from tests.builders import open_with_writer, user_message
from tests.integration.sqlite_helpers import PAIRED_AT, make_foreign_database

# -- the reader --------------------------------------------------------------------------------


def test_the_reader_lists_sessions_with_their_key_kind_and_event_count(sqlite_journal):
    """sessions() lists each session oldest first with key, kind, audience and events."""
    first, run_id = open_with_writer(sqlite_journal, key="main:first")
    sqlite_journal.update_session(first, lambda s: s.append_message(run_id, user_message("hi")))
    child = SessionId.new()
    sqlite_journal.open_session(
        SessionOpening(child, "sub:1", SessionKind.SUBAGENT, Audience.TEAM, first)
    )

    sessions = JournalReader(sqlite_journal.path).sessions()

    assert [
        (first, "main:first", "main", "personal", None, 4),
        (child, "sub:1", "subagent", "team", first, 1),
    ] == [
        (s.session_id, s.session_key, s.kind, s.audience, s.parent_session_id, s.events)
        for s in sessions
    ]
    assert all(s.opened_at <= s.last_event_at for s in sessions)


def test_the_reader_lists_no_device_registry_as_a_session(sqlite_journal):
    """A paired device does not show up in the session list."""
    sqlite_journal.update_devices(
        lambda registry: registry.pair(DeviceId.new(), "phone", bytes(16), "t" * 40, PAIRED_AT)
    )

    assert [] == JournalReader(sqlite_journal.path).sessions()


SHARED_A = SessionId("ses_abcd" + "0" * 28)
SHARED_B = SessionId("ses_abcd" + "1" * 28)
LONE = SessionId("ses_ef01" + "2" * 28)


@pytest.fixture
def reader(sqlite_journal) -> JournalReader:
    """A reader on a journal with two sessions sharing the prefix `abcd` and one other."""
    for session_id in (SHARED_A, SHARED_B, LONE):
        sqlite_journal.open_session(
            SessionOpening(session_id, "k", SessionKind.MAIN, Audience.PERSONAL)
        )
    return JournalReader(sqlite_journal.path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (str(SHARED_A), SHARED_A),
        (SHARED_B.hex, SHARED_B),
        ("ses_abcd0", SHARED_A),
        ("abcd1", SHARED_B),
        ("ef01", LONE),
        ("  SES_EF01  ", LONE),
    ],
    ids=["full-id", "hex-without-prefix", "unique-prefix", "bare-prefix", "short", "upper-case"],
)
def test_resolve_session_finds_the_one_matching_session(reader, text, expected):
    """A full id, its hex digits or a unique prefix of them resolve to that session."""
    assert expected == reader.resolve_session(text)


def test_an_ambiguous_prefix_raises_ambiguous_session_error(reader):
    """A prefix shared by two sessions raises AmbiguousSessionError."""
    with pytest.raises(AmbiguousSessionError, match="ambiguous"):
        reader.resolve_session("ses_abcd")


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        "ses_ab",
        "",
        "ses_",
        "abcz",
        "ses_" + "g" * 32,
        "abcd" * 8 + "0",
        "0000",
        SessionId.new(),
    ],
    ids=[
        "too-short",
        "too-short-with-prefix",
        "empty",
        "prefix-only",
        "non-hex",
        "non-hex-full",
        "longer-than-an-id",
        "unknown-prefix",
        "unknown-id",
    ],
)
def test_an_unusable_or_unknown_id_raises_unknown_session_error(reader, text):
    """Too short, non-hex and unmatched ids raise UnknownSessionError but not the ambiguous one."""
    with pytest.raises(UnknownSessionError) as caught:
        reader.resolve_session(text)

    assert not isinstance(caught.value, AmbiguousSessionError)


def test_the_timeline_lists_a_streams_events_in_order_with_key_fields(sqlite_journal):
    """timeline() gives positions 1..N, short event names and the key fields of each event."""
    session_id, run_id = open_with_writer(sqlite_journal, key="main:tl")
    sqlite_journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("x")))

    timeline = JournalReader(sqlite_journal.path).timeline(session_id)

    assert [
        (1, "session.opened", {"session_key": "main:tl", "kind": "main", "audience": "personal"}),
        (2, "session.run_started", {"run_id": run_id}),
        (3, "session.writer_claimed", {"run_id": run_id}),
        (4, "session.message_appended", {"run_id": run_id, "role": "user"}),
    ] == [(e.position, e.event, e.fields) for e in timeline]
    log_positions = [e.log_position for e in timeline]
    assert sorted(log_positions) == log_positions
    assert len(set(log_positions)) == len(log_positions)
    assert all(e.recorded_at for e in timeline)


def test_the_timeline_stops_at_the_limit(sqlite_journal):
    """timeline(limit=N) gives the first N events only."""
    session_id, _ = open_with_writer(sqlite_journal)

    timeline = JournalReader(sqlite_journal.path).timeline(session_id, limit=2)

    assert [1, 2] == [e.position for e in timeline]


def test_the_timeline_of_an_unknown_session_raises_unknown_session_error(sqlite_journal):
    """timeline() of a session that is not in the journal raises UnknownSessionError."""
    open_with_writer(sqlite_journal)

    with pytest.raises(UnknownSessionError):
        JournalReader(sqlite_journal.path).timeline(SessionId.new())


def test_the_reader_head_is_the_streams_last_version(sqlite_journal):
    """head() is the number of events in the session's stream."""
    session_id, run_id = open_with_writer(sqlite_journal)
    sqlite_journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("x")))

    assert 4 == JournalReader(sqlite_journal.path).head(session_id)


def test_the_reader_head_of_an_unknown_session_raises_unknown_session_error(sqlite_journal):
    """head() of a session that is not in the journal raises UnknownSessionError."""
    open_with_writer(sqlite_journal)

    with pytest.raises(UnknownSessionError):
        JournalReader(sqlite_journal.path).head(SessionId.new())


def test_the_reader_on_a_missing_journal_finds_nothing_and_creates_no_file(tmp_path):
    """Without a journal file, sessions() is empty, lookups fail and no file appears."""
    path = tmp_path / "ledgerclaw.db"

    reader = JournalReader(path)

    assert [] == reader.sessions()
    with pytest.raises(UnknownSessionError):
        reader.resolve_session("abcd")
    with pytest.raises(UnknownSessionError):
        reader.timeline(SessionId.new())
    assert [] == list(tmp_path.iterdir())


def test_the_reader_refuses_a_foreign_database(tmp_path):
    """A reader on another program's SQLite database raises NotAJournalError."""
    path = tmp_path / "ledgerclaw.db"
    make_foreign_database(path, 0)

    with pytest.raises(NotAJournalError):
        JournalReader(path)
