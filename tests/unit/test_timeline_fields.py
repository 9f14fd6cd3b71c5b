"""The timeline's field readers show exactly each event type's key fields, in their order.

A reader is made per topic from the event's `KEY_FIELDS`; these tests hand it stored states
built by hand and check what a timeline line would show.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from adapters.journal.reader import JournalReader, _field_reader
from domain.ids import SessionId
from domain.logged import LoggedEvent
from domain.topics import events_by_topic


def nested(path: str, value: object) -> dict[str, Any]:
    """A state holding `value` at the dotted `path`."""
    *parents, last = path.split(".")
    state: dict[str, Any] = {last: value}
    for part in reversed(parents):
        state = {part: state}
    return state


def merged(*states: dict[str, Any]) -> dict[str, Any]:
    """The states merged, nested dicts included."""
    found: dict[str, Any] = {}
    for state in states:
        for key, value in state.items():
            if isinstance(value, dict) and isinstance(found.get(key), dict):
                found[key] = merged(found[key], value)
            else:
                found[key] = value
    return found


@pytest.mark.parametrize(
    "event_type", [events_by_topic()[topic] for topic in sorted(events_by_topic())], ids=str
)
def test_every_key_field_is_shown_in_its_order(event_type: type[Any]) -> None:
    """With a value at each key field, the reader shows them all, labelled by the last part."""
    paths = event_type.KEY_FIELDS
    state = merged(*(nested(path, f"v{index}") for index, path in enumerate(paths)))

    shown = _field_reader(paths)(state)

    assert [path.rsplit(".", 1)[-1] for path in paths] == list(shown)
    assert [f"v{index}" for index in range(len(paths))] == list(shown.values())


def test_empty_values_are_left_out_and_zero_and_false_kept() -> None:
    """None, "", [] and {} are not shown; 0, False and a missing parent are handled."""
    read = _field_reader(("a", "b", "c", "d", "e", "f", "g.h", "i.j"))
    state: dict[str, Any] = {
        "a": None,
        "b": "",
        "c": [],
        "d": {},
        "e": 0,
        "f": False,
        "g": "not a dict",
    }

    assert {"e": 0, "f": False} == read(state)


class StoredRows:
    """An event log that holds the given rows of one stream, in order."""

    def __init__(self, rows: list[LoggedEvent]) -> None:
        self.rows = rows

    def stream(self, stream_id: str, *, limit: int | None = None) -> list[LoggedEvent]:
        """The rows, whatever the stream asked for."""
        del stream_id
        return self.rows[:limit]


def test_an_entry_keeps_every_stored_field_but_the_envelope(tmp_path) -> None:
    """`data` is the stored state less its timestamp and topic; unknown topics keep all."""
    state = {"timestamp": "2026-12-01T10:00:00Z", "originator_topic": "x", "reason": "done"}
    topic = "ledgerclaw.session.closed"
    assert topic in events_by_topic()
    session_id = SessionId.new()
    rows = [
        LoggedEvent(9, session_id.hex, 3, topic, orjson.dumps(state)),
        LoggedEvent(10, session_id.hex, 4, "elsewhere.event", orjson.dumps(state)),
    ]
    reader = JournalReader(tmp_path / "missing.db", log=StoredRows(rows))  # type: ignore[arg-type]
    reader.exists = True  # the rows stand in for a journal file

    entry, unknown = reader.timeline(session_id)

    assert (3, 9, "2026-12-01T10:00:00Z", "session.closed") == entry[:4]
    assert {"reason": "done"} == entry.data
    assert {"reason": "done"} == entry.fields
    assert (4, 10, "elsewhere.event", {}) == (
        unknown.position,
        unknown.log_position,
        unknown.event,
        unknown.fields,
    )
    assert state == unknown.data


def test_fields_of_any_shape_keep_their_order() -> None:
    """A nested field before a top-level one, or two levels down, is read in the given order."""
    read = _field_reader(("a.b", "c", "d.e.f"))

    shown = read({"c": 1, "a": {"b": 2}, "d": {"e": {"f": 3}}})

    assert [("b", 2), ("c", 1), ("f", 3)] == list(shown.items())
