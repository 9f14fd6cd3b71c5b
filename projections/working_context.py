"""Each main session's working context: its project directory and recent files; projection layer."""

from __future__ import annotations

import json
from functools import singledispatchmethod

from domain.base import DomainEvent
from domain.session.events import WorkingContextChanged
from projections.catalog import session_of
from projections.contract import Batch, Position, Table

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


class WorkingContextView:
    """Which project a session works in and which files it used last."""

    name = "working_context"
    version = 1
    tables: tuple[Table, ...] = (WORKING_CONTEXT,)

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events do not change a working context."""

    @apply.register
    def _(self, event: WorkingContextChanged, position: Position, batch: Batch) -> None:
        batch.add(
            "INSERT INTO working_context (session_id, project_directory, recent_files,"
            " updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (session_id) DO UPDATE SET"
            " project_directory = excluded.project_directory,"
            " recent_files = excluded.recent_files, updated_at = excluded.updated_at",
            session_of(position),
            event.project_directory,
            json.dumps(list(event.recent_files), ensure_ascii=False, separators=(",", ":")),
            position.at.isoformat(),
        )

    def finish(self, batch: Batch) -> None:
        """Nothing is recomputed at the end of a batch."""
