"""Round trips of events and snapshots through the catalog mapper and orjson; properties."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from uuid import UUID

import orjson
import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic
from hypothesis import given
from hypothesis import strategies as st
from pydantic import JsonValue, ValidationError

from adapters.errors import UndecodableEventError
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder, upcast
from domain.base import Aggregate, DomainEvent
from domain.devices.aggregate import DeviceRegistry
from domain.devices.events import DeviceRegistryCreated
from domain.ids import CallId, RunId
from domain.session.aggregate import Session
from domain.session.events import (
    AuthorizationAttemptStarted,
    MessageAppended,
    SessionOpened,
    ToolReceiptRecorded,
)
from domain.topics import EVENT_TYPES
from domain.upstream.aggregate import UpstreamServer
from domain.upstream.events import UpstreamServerCreated
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from tests import strategies

MAPPER = CatalogMapper(transcoder=OrjsonTranscoder())
CREATED_EVENTS: dict[type[DomainEvent], type[Aggregate]] = {
    SessionOpened: Session,
    DeviceRegistryCreated: DeviceRegistry,
    UpstreamServerCreated: UpstreamServer,
}
MODULE_PREFIXES = ("domain.", "adapters.", "projections.", "cli.", "tests.")


def _round_trip(event: DomainEvent) -> DomainEvent:
    return MAPPER.to_domain_event(MAPPER.to_stored_event(event))


def _stored_with(event: DomainEvent, *, topic: str | None = None, state: bytes) -> StoredEvent:
    stored = MAPPER.to_stored_event(event)
    return StoredEvent(
        originator_id=stored.originator_id,
        originator_version=stored.originator_version,
        topic=stored.topic if topic is None else topic,
        state=state,
    )


# -- the strategies themselves ------------------------------------------------------------


def test_every_catalog_event_type_has_a_strategy() -> None:
    """Every event type in the catalog has exactly one strategy, and nothing else has one."""
    assert set(EVENT_TYPES) == set(strategies.EVENT_STRATEGIES)


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda t: t.__name__)
@given(data=st.data())
def test_each_event_strategy_builds_valid_events_of_its_type(
    event_type: type[DomainEvent], data: st.DataObject
) -> None:
    """An event strategy builds its own type, on a UUID stream, at a UTC time."""
    event = data.draw(strategies.events_of(event_type))
    offset = event.timestamp.utcoffset()

    assert event_type is type(event)
    assert isinstance(event.originator_id, UUID)
    assert event.originator_version >= 1
    assert timedelta(0) == offset
    if isinstance(event, Aggregate.Created):
        assert get_topic(CREATED_EVENTS[event_type]) == event.originator_topic


# -- events -------------------------------------------------------------------------------


@given(event=strategies.any_event())
def test_every_event_survives_the_mapper_unchanged(event: DomainEvent) -> None:
    """An event read back from its stored form equals the event that was stored."""
    assert event == _round_trip(event)


@given(event=strategies.any_event())
def test_stored_topic_is_the_stable_topic_and_never_a_module_path(event: DomainEvent) -> None:
    """The stored topic is the class's TOPIC, never a `module:Class` path."""
    stored = MAPPER.to_stored_event(event)

    assert type(event).TOPIC == stored.topic
    assert stored.topic.startswith("ledgerclaw.")
    assert ":" not in stored.topic
    assert not stored.topic.startswith(MODULE_PREFIXES)


@given(event=strategies.any_event())
def test_stored_state_is_a_json_object_without_the_stream_position(event: DomainEvent) -> None:
    """The stored state is plain JSON and leaves the stream id and version to their columns."""
    stored = MAPPER.to_stored_event(event)
    state = json.loads(stored.state)

    assert isinstance(state, dict)
    assert "originator_id" not in state
    assert "originator_version" not in state
    assert event.originator_id == stored.originator_id
    assert event.originator_version == stored.originator_version


@given(event=st.one_of(*(strategies.events_of(t) for t in CREATED_EVENTS)))
def test_created_events_store_the_aggregate_journal_name(event: DomainEvent) -> None:
    """A first event stores its aggregate's journal name, not the aggregate's module path."""
    state = json.loads(MAPPER.to_stored_event(event).state)

    assert CREATED_EVENTS[type(event)].JOURNAL_NAME == state["originator_topic"]


# -- fields added later ---------------------------------------------------------------------

ADDED_FIELDS: dict[type[DomainEvent], tuple[str, ...]] = {
    AuthorizationAttemptStarted: ("arguments", "bounded_arguments", "arguments_spill_id"),
    ToolReceiptRecorded: ("problems", "shell"),
}
"""Fields added with a default after journals were written; old rows lack them."""


@pytest.mark.parametrize("event_type", list(ADDED_FIELDS), ids=lambda t: t.__name__)
@given(data=st.data())
def test_a_row_written_before_a_field_was_added_decodes_with_its_default(
    event_type: type[DomainEvent], data: st.DataObject
) -> None:
    """A stored state without the added fields reads back as the event with their defaults."""
    event = data.draw(strategies.events_of(event_type))
    added = ADDED_FIELDS[event_type]
    state = orjson.loads(MAPPER.to_stored_event(event).state)
    old = {key: value for key, value in state.items() if key not in added}

    decoded = MAPPER.to_domain_event(_stored_with(event, state=orjson.dumps(old)))

    defaults = {name: event_type.model_fields[name].get_default() for name in added}
    assert event.model_copy(update=defaults) == decoded


@given(event=strategies.events_of(AuthorizationAttemptStarted))
def test_recorded_arguments_survive_the_mapper_exactly(event: AuthorizationAttemptStarted) -> None:
    """The arguments an attempt recorded read back equal, key order and all."""
    decoded = _round_trip(event)

    assert isinstance(decoded, AuthorizationAttemptStarted)
    assert orjson.dumps(event.arguments) == orjson.dumps(decoded.arguments)


# -- snapshots ----------------------------------------------------------------------------


@given(session=strategies.built_sessions())
def test_snapshot_restores_the_session_state(session: Session) -> None:
    """A Session rebuilt from its stored snapshot has the state, version and times it had."""
    snapshot = Session.Snapshot.take(session)
    stored = MAPPER.to_stored_event(snapshot)
    decoded = MAPPER.to_domain_event(stored)
    assert isinstance(decoded, Session.Snapshot)
    restored = decoded.mutate(None)
    assert isinstance(restored, Session)

    assert Session.Snapshot.TOPIC == stored.topic
    assert Session.JOURNAL_NAME == json.loads(stored.state)["topic"]
    assert session.state() == restored.state()
    assert session.version == restored.version
    assert session.created_on == restored.created_on
    assert session.modified_on == restored.modified_on


# -- refusals -----------------------------------------------------------------------------

_LIBRARY_TOPICS = [get_topic(t) for t in EVENT_TYPES]


@given(
    event=strategies.any_event(),
    topic=(st.text() | st.sampled_from(_LIBRARY_TOPICS)).filter(
        lambda t: t not in CatalogMapper.types_by_topic
    ),
)
def test_unknown_topic_raises_undecodable_event_error(event: DomainEvent, topic: str) -> None:
    """A row whose topic is not in the catalog, module paths included, is refused by type."""
    stored = _stored_with(event, topic=topic, state=MAPPER.to_stored_event(event).state)

    with pytest.raises(UndecodableEventError):
        MAPPER.to_domain_event(stored)


def _is_json(data: bytes) -> bool:
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


@given(event=strategies.any_event(), state=st.binary().filter(lambda b: not _is_json(b)))
def test_state_that_is_not_json_raises_undecodable_event_error(
    event: DomainEvent, state: bytes
) -> None:
    """A row whose state is not JSON is refused by type."""
    with pytest.raises(UndecodableEventError):
        MAPPER.to_domain_event(_stored_with(event, state=state))


@given(
    event=strategies.any_event(),
    value=strategies.lossless_json().filter(lambda v: not isinstance(v, dict)),
)
def test_state_that_is_not_a_json_object_raises_undecodable_event_error(
    event: DomainEvent, value: JsonValue
) -> None:
    """A row whose state is JSON but not an object (a string, a number, null) is refused by type."""
    with pytest.raises(UndecodableEventError):
        MAPPER.to_domain_event(_stored_with(event, state=orjson.dumps(value)))


@given(event=strategies.any_event())
def test_state_missing_its_timestamp_raises_undecodable_event_error(event: DomainEvent) -> None:
    """A row whose state lacks a required field is refused by type."""
    state = json.loads(MAPPER.to_stored_event(event).state)
    del state["timestamp"]

    with pytest.raises(UndecodableEventError):
        MAPPER.to_domain_event(_stored_with(event, state=orjson.dumps(state)))


@given(
    event=strategies.any_event(),
    class_version=st.integers(strategies.INT64_MIN, 0)
    | st.text()
    | st.lists(st.integers(strategies.INT64_MIN, strategies.UINT64_MAX), max_size=2),
)
def test_state_with_an_impossible_class_version_raises_undecodable_event_error(
    event: DomainEvent, class_version: int | str | list[int]
) -> None:
    """A row whose class version was never written (zero, negative, not a number) is refused."""
    state = json.loads(MAPPER.to_stored_event(event).state)
    state["class_version"] = class_version

    with pytest.raises(UndecodableEventError):
        MAPPER.to_domain_event(_stored_with(event, state=orjson.dumps(state)))


# -- values the domain accepts but JSON cannot carry ----------------------------------------

_UNSTORABLE_ARGUMENTS: dict[str, Any] = {
    "nan": math.nan,
    "infinity": math.inf,
    "beyond-64-bit": 2**64,
    "lone-surrogate": "\ud800",
}


@pytest.mark.parametrize("value", _UNSTORABLE_ARGUMENTS.values(), ids=list(_UNSTORABLE_ARGUMENTS))
def test_a_tool_call_argument_is_refused_when_built_or_survives_the_journal(
    value: JsonValue,
) -> None:
    """A tool-call argument is either refused by the domain or read back exactly as stored."""
    try:
        message = ChatMessage(
            role=MessageRole.ASSISTANT,
            tool_calls=(ToolCallRequest(call_id=CallId("c1"), name="t", arguments={"x": value}),),
        )
    except ValidationError:
        return
    event = MessageAppended(
        originator_id=UUID(int=1),
        originator_version=2,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC),
        run_id=RunId.from_uuid(UUID(int=2)),
        message=message,
    )

    assert event == _round_trip(event)


# -- upcasting ----------------------------------------------------------------------------


class NoteRetitled(DomainEvent):
    """A test-only event at class version 2; version 1 had no `language`."""

    TOPIC: ClassVar[str] = "ledgerclaw.test.note_retitled"
    class_version: ClassVar[int] = 2

    title: str
    language: str

    @staticmethod
    def upcast_v1_v2(state: dict[str, Any]) -> None:
        """Version 1 notes were all written before languages were recorded."""
        state["language"] = "und"


_STREAM = {"originator_id": UUID(int=7), "originator_version": 3}


@given(title=st.text(), timestamp=strategies.utc_datetimes())
def test_upcast_adds_the_missing_field_to_a_version_one_state(
    title: str, timestamp: datetime
) -> None:
    """A state written at version 1 (no class_version key) gains the field version 2 added."""
    state = {"timestamp": timestamp.isoformat(), "title": title}

    upcast(NoteRetitled, state)

    assert {"timestamp": timestamp.isoformat(), "title": title, "language": "und"} == state
    assert "und" == NoteRetitled.model_validate({**state, **_STREAM}).language


@given(title=st.text(), language=st.text(), timestamp=strategies.utc_datetimes())
def test_upcast_leaves_a_version_two_state_unchanged(
    title: str, language: str, timestamp: datetime
) -> None:
    """A state written at version 2 keeps its fields; only the version marker is taken off."""
    fields = {"timestamp": timestamp.isoformat(), "title": title, "language": language}
    state = {**fields, "class_version": 2}

    upcast(NoteRetitled, state)

    assert fields == state
