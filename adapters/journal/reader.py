"""A lean, read-only path over the stored events for timelines and listings; adapter layer.

Replaying a timeline does not rebuild aggregates or validate models: it reads rows with
sqlite3, parses them with orjson, upcasts old shapes and picks each event type's key fields.
That keeps `session replay` fast on long sessions and lets it run beside a live daemon.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from adapters.errors import AmbiguousSessionError, UnknownSessionError
from adapters.journal.failures import translated
from adapters.journal.identity import check_journal_file
from adapters.journal.mapper import upcast
from domain.ids import SessionId
from domain.session.events import MessageAppended, SessionOpened
from domain.topics import events_by_topic

_HEX = frozenset("0123456789abcdef")
_MIN_PREFIX = 4
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


class _Shape(NamedTuple):
    name: str
    keys: tuple[tuple[str, tuple[str, ...]], ...]
    event_type: type[Any]


def _shapes() -> dict[str, _Shape]:
    shapes = {}
    for topic, event_type in events_by_topic().items():
        keys = tuple(
            (path.rsplit(".", 1)[-1], tuple(path.split("."))) for path in event_type.KEY_FIELDS
        )
        shapes[topic] = _Shape(event_type.short_name(), keys, event_type)
    return shapes


class JournalReader:
    """Read-only queries straight on the journal file; safe beside a running writer."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.exists = check_journal_file(path)
        self._shapes = _shapes()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        uri = f"{self.path.as_uri()}?mode=ro"
        with (
            translated(self.path, "reading its events"),
            closing(sqlite3.connect(uri, uri=True, timeout=5)) as conn,
        ):
            yield conn

    def sessions(self) -> list[SessionSummary]:
        """Every session, oldest first."""
        if not self.exists:
            return []
        query = """
            SELECT o.originator_id, o.state,
              (SELECT l.originator_version FROM stored_events l
                 WHERE l.originator_id = o.originator_id
                 ORDER BY l.originator_version DESC LIMIT 1),
              (SELECT l.state FROM stored_events l
                 WHERE l.originator_id = o.originator_id
                 ORDER BY l.originator_version DESC LIMIT 1)
            FROM stored_events o
            WHERE o.originator_version = 1 AND o.topic = ?
            ORDER BY o.rowid
        """
        with self._connect() as conn:
            rows = conn.execute(query, (SessionOpened.TOPIC,)).fetchall()
        summaries = []
        for stream, opened_raw, head, last_raw in rows:
            opened = orjson.loads(opened_raw)
            summaries.append(
                SessionSummary(
                    session_id=f"{SessionId.prefix}{stream}",
                    session_key=opened["session_key"],
                    kind=opened["kind"],
                    audience=opened["audience"],
                    parent_session_id=opened.get("parent_session_id"),
                    events=head,
                    opened_at=opened["timestamp"],
                    last_event_at=orjson.loads(last_raw)["timestamp"],
                )
            )
        return summaries

    def resolve_session(self, text: str) -> SessionId:
        """The one session whose id is `text` or starts with it (with or without `ses_`)."""
        digits = text.strip().lower().removeprefix(SessionId.prefix)
        if not digits or not set(digits) <= _HEX or len(digits) > _ID_DIGITS:
            msg = f"{text!r} is not a session id or id prefix"
            raise UnknownSessionError(msg)
        if len(digits) < _MIN_PREFIX:
            msg = f"session prefix {text!r} is too short; give at least {_MIN_PREFIX} hex digits"
            raise UnknownSessionError(msg)
        matches: list[str] = []
        if self.exists:
            with self._connect() as conn:
                matches = [
                    row[0]
                    for row in conn.execute(
                        "SELECT originator_id FROM stored_events WHERE originator_version = 1"
                        " AND topic = ? AND originator_id >= ? AND originator_id < ? LIMIT 2",
                        (SessionOpened.TOPIC, digits, digits + "g"),
                    )
                ]
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
        query = (
            "SELECT originator_version, rowid, topic, state FROM stored_events"
            " WHERE originator_id = ? ORDER BY originator_version LIMIT ?"
        )
        with self._connect() as conn:
            rows = conn.execute(query, (session_id.hex, -1 if limit is None else limit)).fetchall()
        if not rows:
            msg = f"no session {session_id} in the journal"
            raise UnknownSessionError(msg)
        return [self._entry(*row) for row in rows]

    def transcript(self, session_id: SessionId, *, upto: int | None = None) -> list[dict[str, Any]]:
        """The session's messages as stored (JSON objects), from its first `upto` events."""
        if not self.exists:
            return []
        query = (
            "SELECT state FROM stored_events WHERE originator_id = ? AND topic = ?"
            " AND originator_version <= ? ORDER BY originator_version"
        )
        last = upto if upto is not None else 2**62
        with self._connect() as conn:
            rows = conn.execute(query, (session_id.hex, MessageAppended.TOPIC, last)).fetchall()
        messages = []
        for (raw,) in rows:
            state = orjson.loads(raw)
            if "class_version" in state or MessageAppended.class_version > 1:
                upcast(MessageAppended, state)
            messages.append(state["message"])
        return messages

    def head(self, session_id: SessionId) -> int:
        """How many events the session's stream holds; UnknownSessionError if none."""
        if self.exists:
            with self._connect() as conn:
                row = conn.execute(
                    "SELECT max(originator_version) FROM stored_events WHERE originator_id = ?",
                    (session_id.hex,),
                ).fetchone()
            if row[0]:
                return int(row[0])
        msg = f"no session {session_id} in the journal"
        raise UnknownSessionError(msg)

    def _entry(self, position: int, log_position: int, topic: str, raw: bytes) -> TimelineEntry:
        state = orjson.loads(raw)
        shape = self._shapes.get(topic)
        if shape is None:
            return TimelineEntry(
                position, log_position, state.get("timestamp", ""), topic, {}, state
            )
        if "class_version" in state or shape.event_type.class_version > 1:
            upcast(shape.event_type, state)
        fields: dict[str, Any] = {}
        for label, path in shape.keys:
            value: Any = state
            for part in path:
                value = value.get(part) if isinstance(value, dict) else None
            if value not in (None, "", [], {}):
                fields[label] = value
        data = {k: v for k, v in state.items() if k not in ("timestamp", "originator_topic")}
        return TimelineEntry(position, log_position, state["timestamp"], shape.name, fields, data)
