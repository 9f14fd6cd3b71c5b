"""Each main session's working context: its project directory and recent files.

A change replaces the whole row, so of a batch's changes only each session's last one is
read and written, in one statement for the batch; projection layer.
"""

from __future__ import annotations

import json
from functools import singledispatchmethod

from domain.base import DomainEvent
from domain.session.events import WorkingContextChanged
from projections.catalog import session_id_of, session_of
from projections.contract import Batch, Events, Position, Table
from projections.per_event import EventByEvent

WORKING_CONTEXT = Table(
    name="working_context",
    columns={
        "session_id": str,
        "project_directory": str,
        "recent_files": str,
        "updated_at": str,
    },
    pk=("session_id",),
    doc="Each main session's project directory and recent files (JSON array, most recent first).",
)
_UPSERT = (
    "INSERT INTO working_context (session_id, project_directory, recent_files,"
    " updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
    " project_directory = excluded.project_directory,"
    " recent_files = excluded.recent_files, updated_at = excluded.updated_at"
)
_TOPICS = (WorkingContextChanged.TOPIC,)


class WorkingContextView(EventByEvent):
    """Which project a session works in and which files it used last."""

    name = "working_context"
    version = 1
    tables: tuple[Table, ...] = (WORKING_CONTEXT,)

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """Upsert each session's last change of the batch; the earlier ones it replaces."""
        places = events.indices(_TOPICS)
        last = dict(zip(map(events.streams.__getitem__, places), places, strict=True))
        rows = []
        for stream, place in last.items():
            stored = events[place]
            f = stored.fields()
            recent = json.dumps(list(f["recent_files"]), ensure_ascii=False, separators=(",", ":"))
            rows.append((session_id_of(stream), f["project_directory"], recent, stored.at_text()))
        batch.add_rows(_UPSERT, rows)

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events do not change a working context."""

    @apply.register
    def _(self, event: WorkingContextChanged, position: Position, batch: Batch) -> None:
        batch.add(
            _UPSERT,
            session_of(position),
            event.project_directory,
            json.dumps(list(event.recent_files), ensure_ascii=False, separators=(",", ":")),
            position.at.isoformat(),
        )

    def finish(self, batch: Batch) -> None:
        """Nothing is recomputed at the end of a batch."""
