"""Stored events as the notification log holds them, encoded; domain layer.

Kept apart from `domain.ports`, which re-exports them, so that a reader of the log (the
session list on current read models) needs neither the aggregates nor their events.
"""

from __future__ import annotations

from typing import NamedTuple


class LoggedEvent(NamedTuple):
    """One stored event as the log holds it: encoded, not decoded."""

    position: int
    """The event's place in the whole log, from 1, in commit order."""
    stream_id: str
    """The stream (aggregate) id as stored: 32 hex digits."""
    version: int
    """The event's place in its stream, from 1."""
    topic: str
    state: bytes


class StreamSpan(NamedTuple):
    """The first and the last event of one stream."""

    first: LoggedEvent
    last: LoggedEvent
