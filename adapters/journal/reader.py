"""A lean, read-only path over the stored events for timelines and listings; adapter layer.

Replaying a timeline does not rebuild aggregates or validate models: it reads rows with
sqlite3, parses them with orjson, upcasts old shapes and picks each event type's key fields
with a reader made for that type from its `KEY_FIELDS`; an entry's `data` is the parsed
state itself, so nothing is copied for a line that never shows it. That keeps `session
replay` fast on long sessions and lets it run beside a live daemon. The rows come from the
event log (adapters/journal/event_log.py), which holds the SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from adapters.errors import AmbiguousSessionError, UnknownSessionError
from adapters.journal.event_log import SqliteEventLog
from adapters.journal.identity import check_journal_file
from adapters.journal.mapper import upcast
from domain.id_prefixes import MIN_PREFIX, by_prefix
from domain.ids import SessionId
from domain.ports import EventLog
from domain.session.events import MessageAppended, SessionOpened
from domain.topics import events_by_topic

_HEX = frozenset("0123456789abcdef")
_ID_DIGITS = 32


class TimelineEntry(NamedTuple):
    """One event of a stream as a timeline shows it."""

    position: int
    """The event's place in its stream, from 1."""
    log_position: int
    """The event's place in the journal's notification log."""
    recorded_at: str
    event: str
    fields: dict[str, Any]
    """The event's key fields, as the timeline line shows them."""
    data: dict[str, Any] = {}  # noqa: RUF012 - a NamedTuple default, never mutated
    """Every stored field of the event (after upcasting), for --json and audits."""


_new_entry = tuple.__new__
"""Makes a TimelineEntry from its six values at once, without its keyword-taking `__new__`."""


class SessionSummary(NamedTuple):
    """One line of the session list."""

    session_id: str
    session_key: str
    kind: str
    audience: str
    parent_session_id: str | None
    events: int
    opened_at: str
    last_event_at: str


FieldReader = Callable[[dict[str, Any]], dict[str, Any]]
"""Reads, from one event's stored state, the fields its timeline line shows."""
_EMPTY_KINDS = (str, list, dict)
"""An empty value of these is not shown (nor None); a zero or False is."""


def _grouped(paths: Sequence[str]) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]]] | None:
    """`paths` as top-level keys, then children by parent; None if that would change the order.

    Every event's key fields have that shape (its own fields first, then those one level
    down, each parent's together), which the grouped reader reads with the fewest lookups.
    """
    flat = tuple(path for path in paths if "." not in path)
    groups: dict[str, tuple[str, ...]] = {}
    for path in paths:
        parent, _, child = path.partition(".")
        if child:
            groups[parent] = (*groups.get(parent, ()), child)
    labels = [*flat, *(child for children in groups.values() for child in children)]
    same_order = labels == [path.rsplit(".", 1)[-1] for path in paths]
    if not same_order or any(path.count(".") > 1 for path in paths):
        return None
    return flat, groups


def _grouped_reader(flat: tuple[str, ...], groups: dict[str, tuple[str, ...]]) -> FieldReader:
    """The reader of top-level keys `flat`, then of each parent's children in `groups`."""
    nested = tuple(groups.items())

    def read(state: dict[str, Any]) -> dict[str, Any]:
        found = {}
        for key in flat:
            value = state.get(key)
            if value or (value is not None and type(value) not in _EMPTY_KINDS):
                found[key] = value
        for parent, children in nested:
            inner = state.get(parent)
            if type(inner) is dict:
                for child in children:
                    value = inner.get(child)
                    if value or (value is not None and type(value) not in _EMPTY_KINDS):
                        found[child] = value
        return found

    return read


def _path_reader(paths: Sequence[str]) -> FieldReader:
    """The reader of dotted `paths` of any depth, in their order."""
    steps = tuple(
        (parts[-1], parts[0], tuple(parts[1:])) for parts in (path.split(".") for path in paths)
    )

    def read(state: dict[str, Any]) -> dict[str, Any]:
        found = {}
        for label, first, rest in steps:
            value = state.get(first)
            for part in rest:
                value = value.get(part) if type(value) is dict else None
            if value or (value is not None and type(value) not in _EMPTY_KINDS):
                found[label] = value
        return found

    return read


def _field_reader(paths: Sequence[str]) -> FieldReader:
    """The reader of `paths` (dotted for nested fields), each labelled by its last part.

    One is made per event type, from its `KEY_FIELDS`, when the reader starts.
    """
    grouped = _grouped(paths)
    return _path_reader(paths) if grouped is None else _grouped_reader(*grouped)


class _Shape(NamedTuple):
    """How the timeline reads one topic: its short name, its fields, its stored versions."""

    name: str
    read: FieldReader
    event_type: type[Any]
    upcast_always: bool
    """Whether every stored state needs upcasting (the class is past its first version)."""


def _shapes() -> dict[str, _Shape]:
    return {
        topic: _Shape(
            event_type.short_name(),
            _field_reader(event_type.KEY_FIELDS),
            event_type,
            event_type.class_version > 1,
        )
        for topic, event_type in events_by_topic().items()
    }


class JournalReader:
    """Read-only queries straight on the journal file; safe beside a running writer."""

    def __init__(self, path: Path, log: EventLog | None = None) -> None:
        self.path = path
        self.exists = check_journal_file(path)
        self.log: EventLog = log or SqliteEventLog(path)
        self._shapes = _shapes()

    def sessions(self) -> list[SessionSummary]:
        """Every session, oldest first."""
        if not self.exists:
            return []
        summaries = []
        for first, last in self.log.opened(SessionOpened.TOPIC):
            opened = orjson.loads(first.state)
            summaries.append(
                SessionSummary(
                    session_id=f"{SessionId.prefix}{first.stream_id}",
                    session_key=opened["session_key"],
                    kind=opened["kind"],
                    audience=opened["audience"],
                    parent_session_id=opened.get("parent_session_id"),
                    events=last.version,
                    opened_at=opened["timestamp"],
                    last_event_at=orjson.loads(last.state)["timestamp"],
                )
            )
        return summaries

    def resolve_session(self, text: str) -> SessionId:
        """The one session whose id is `text` or starts with it (with or without `ses_`)."""
        digits = text.strip().lower().removeprefix(SessionId.prefix)
        if not digits or not set(digits) <= _HEX or len(digits) > _ID_DIGITS:
            msg = f"{text!r} is not a session id or id prefix"
            raise UnknownSessionError(msg)
        if len(digits) < MIN_PREFIX:
            msg = f"session prefix {text!r} is too short; give at least {MIN_PREFIX} hex digits"
            raise UnknownSessionError(msg)
        found = self.log.opened_with_prefix(SessionOpened.TOPIC, digits, 2) if self.exists else []
        matches = by_prefix(digits, found)
        if not matches:
            msg = f"no session matches {text!r}"
            raise UnknownSessionError(msg)
        if len(matches) > 1:
            msg = f"session prefix {text!r} is ambiguous; give more digits"
            raise AmbiguousSessionError(msg)
        return SessionId(f"{SessionId.prefix}{matches[0]}")

    def timeline(self, session_id: SessionId, *, limit: int | None = None) -> list[TimelineEntry]:
        """The stream's events in order, each with its key fields."""
        if not self.exists:
            msg = f"no session {session_id} in the journal"
            raise UnknownSessionError(msg)
        events = self.log.stream(session_id.hex, limit=limit)
        if not events:
            msg = f"no session {session_id} in the journal"
            raise UnknownSessionError(msg)
        loads, shapes = orjson.loads, self._shapes
        entries: list[TimelineEntry] = []
        append = entries.append
        # One pass with every name local: this loop is the timeline's whole cost per event.
        for log_position, _stream, position, topic, raw in events:
            state = loads(raw)
            shape = shapes.get(topic)
            if shape is None:
                append(
                    TimelineEntry(
                        position, log_position, state.get("timestamp", ""), topic, {}, state
                    )
                )
                continue
            name, read, event_type, upcast_always = shape
            if upcast_always or "class_version" in state:
                upcast(event_type, state)
            # The state was parsed for this entry alone: it becomes the entry's data as it is,
            # less the envelope, so no copy of it is made for the lines that never show it.
            recorded_at = state.pop("timestamp")
            state.pop("originator_topic", None)
            append(
                _new_entry(
                    TimelineEntry, (position, log_position, recorded_at, name, read(state), state)
                )
            )
        return entries

    def transcript(self, session_id: SessionId, *, upto: int | None = None) -> list[dict[str, Any]]:
        """The session's messages as stored (JSON objects), from its first `upto` events."""
        if not self.exists:
            return []
        messages = []
        for event in self.log.stream(session_id.hex, topic=MessageAppended.TOPIC, upto=upto):
            state = orjson.loads(event.state)
            if "class_version" in state or MessageAppended.class_version > 1:
                upcast(MessageAppended, state)
            messages.append(state["message"])
        return messages

    def head(self, session_id: SessionId) -> int:
        """How many events the session's stream holds; UnknownSessionError if none."""
        if self.exists:
            head = self.log.stream_heads([session_id.hex]).get(session_id.hex, 0)
            if head:
                return head
        msg = f"no session {session_id} in the journal"
        raise UnknownSessionError(msg)
