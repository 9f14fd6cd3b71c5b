"""Contract of the EventLog port, on the in-memory recorder and on a real SQLite file.

Every test takes the parametrized `logged` fixture: a journal writes, and the event log reads
what it stored, so the fake and the SQLite log are held to the same behaviour. Contract tests.
"""

from __future__ import annotations

from datetime import UTC, datetime

import orjson

from domain.devices.aggregate import REGISTRY_ID
from domain.ids import DeviceId, RunId, SessionId
from domain.session.events import MessageAppended, SessionOpened
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from tests.builders import appending, start_and_claim, user_message
from tests.contract.conftest import Logged

OPENED = SessionOpened.TOPIC


def open_and_talk(logged: Logged, messages: int, session_id: SessionId | None = None) -> SessionId:
    """Open a session, start and claim a run, and append `messages` user messages."""
    session_id = session_id or SessionId.new()
    journal = logged.journal
    journal.open_session(SessionOpening(session_id, "k", SessionKind.MAIN, Audience.PERSONAL))
    run_id = RunId.new()
    journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
    for number in range(messages):
        journal.update_session(session_id, appending(run_id, user_message(f"m{number}")))
    return session_id


def pair_a_device(logged: Logged) -> None:
    """Store the device registry's stream (two events: created, paired)."""
    logged.journal.update_devices(
        lambda registry: registry.pair(
            DeviceId.new(), "phone", bytes(16), "s" * 32, datetime(2026, 1, 1, tzinfo=UTC)
        )
    )


def test_an_empty_log_has_no_head_no_events_and_no_streams(logged):
    """Before anything is stored, every read is empty and the head is 0."""
    log = logged.log

    assert (0, 0) == (log.head(), log.count())
    assert [] == log.batch(0, 10)
    assert [] == log.stream(SessionId.new().hex)
    assert {} == log.stream_heads([SessionId.new().hex])
    assert [] == log.opened(OPENED)
    assert [] == log.opened_with_prefix(OPENED, "abcd", 2)


def test_the_head_and_count_follow_every_stored_event(logged):
    """Two sessions of 3 and 5 events: the head is at 8 and the log holds 8 events."""
    open_and_talk(logged, 0)
    open_and_talk(logged, 2)

    assert (8, 8) == (logged.log.head(), logged.log.count())


def test_a_batch_reads_events_after_a_position_in_log_order(logged):
    """Positions run from 1 in commit order; a batch starts after `after` and stops at `limit`."""
    first = open_and_talk(logged, 1)
    second = open_and_talk(logged, 0)

    everything = logged.log.batch(0, 100)
    middle = logged.log.batch(2, 3)

    assert list(range(1, 8)) == [event.position for event in everything]
    assert [first.hex] * 4 + [second.hex] * 3 == [event.stream_id for event in everything]
    assert [1, 2, 3, 4, 1, 2, 3] == [event.version for event in everything]
    assert [3, 4, 5] == [event.position for event in middle]


def test_a_batch_stops_at_upto(logged):
    """With `upto`, a batch holds nothing after that position, whatever the limit."""
    open_and_talk(logged, 3)

    assert [2, 3, 4] == [event.position for event in logged.log.batch(1, 100, upto=4)]
    assert [] == logged.log.batch(4, 100, upto=4)


def test_logged_events_carry_their_topic_and_stored_state(logged):
    """The first event is the opening, its state the stored JSON with the session's key."""
    session_id = open_and_talk(logged, 0)

    [opening] = logged.log.batch(0, 1)

    assert (session_id.hex, 1, OPENED) == (opening.stream_id, opening.version, opening.topic)
    assert "k" == orjson.loads(opening.state)["session_key"]


def test_a_stream_reads_one_streams_events_in_order_with_its_filters(logged):
    """A stream's events come by version; topic, after, upto and limit narrow them."""
    session_id = open_and_talk(logged, 3)
    open_and_talk(logged, 2)
    log = logged.log

    assert [1, 2, 3, 4, 5, 6] == [e.version for e in log.stream(session_id.hex)]
    assert [4, 5, 6] == [e.version for e in log.stream(session_id.hex, topic=MessageAppended.TOPIC)]
    assert [4, 5] == [
        e.version for e in log.stream(session_id.hex, topic=MessageAppended.TOPIC, upto=5)
    ]
    assert [1, 2] == [e.version for e in log.stream(session_id.hex, limit=2)]
    assert [5, 6] == [e.version for e in log.stream(session_id.hex, after=4)]
    assert [5] == [e.version for e in log.stream(session_id.hex, after=4, limit=1)]


def test_stream_heads_give_each_streams_length_and_leave_out_unknown_ones(logged):
    """One read gives the length of every stream asked for; a stream never stored is absent."""
    short, long = open_and_talk(logged, 0), open_and_talk(logged, 4)
    unknown = SessionId.new()

    heads = logged.log.stream_heads([short.hex, long.hex, unknown.hex])

    assert {short.hex: 3, long.hex: 7} == heads


def test_opened_lists_the_streams_a_topic_opened_with_their_last_event(logged):
    """Sessions come in log order, each with its last event; the device registry does not."""
    first = open_and_talk(logged, 2)
    pair_a_device(logged)
    second = open_and_talk(logged, 0)

    spans = logged.log.opened(OPENED)

    assert [first.hex, second.hex] == [span.first.stream_id for span in spans]
    assert [(1, 5), (1, 3)] == [(span.first.version, span.last.version) for span in spans]
    assert REGISTRY_ID.hex not in {span.first.stream_id for span in spans}


def test_opened_with_prefix_finds_streams_by_the_start_of_their_id(logged):
    """Streams whose id starts with the prefix are found, at most `limit` of them."""
    a = open_and_talk(logged, 0, SessionId(f"ses_abcd{'1' * 28}"))
    b = open_and_talk(logged, 0, SessionId(f"ses_abcd{'2' * 28}"))
    open_and_talk(logged, 0, SessionId(f"ses_ef01{'3' * 28}"))
    log = logged.log

    assert [a.hex, b.hex] == log.opened_with_prefix(OPENED, "abcd", 5)
    assert 1 == len(log.opened_with_prefix(OPENED, "abcd", 1))
    assert [b.hex] == log.opened_with_prefix(OPENED, "abcd2", 5)
    assert [] == log.opened_with_prefix(MessageAppended.TOPIC, "abcd", 5)
