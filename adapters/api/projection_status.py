"""Where each projection stands against the head of the log, as rows; adapter layer."""

from __future__ import annotations

from typing import Any

from adapters.api.read_models import ReadModels, Rows
from adapters.projections.runner import Progress, ProjectionRunner, Status

STATUS_COLUMNS = ("name", "version", "stored_version", "position", "head", "lag")


def status_row(status: Status) -> dict[str, Any]:
    """One projection's status as a dict."""
    return {
        "name": status.name,
        "version": status.version,
        "stored_version": status.stored_version,
        "position": status.position,
        "head": status.head,
        "lag": status.lag,
    }


class StatusQueries(ReadModels):
    """Each projection's position against the head of the log."""

    def status(self) -> Rows:
        """Each projection's version, stored version, position, the log's head and the lag."""
        if not self.exists:
            statuses = [Status(p.name, p.version, None, 0, 0) for p in self.projections]
        else:
            statuses = ProjectionRunner(self.home.database, self.projections).status()
        return Rows([status_row(status) for status in statuses], STATUS_COLUMNS)


def overall_progress(progress: Progress | None, index: int, count: int) -> Progress | None:
    """Progress of the `index`-th of `count` equal passes over the log, as one bar."""
    if progress is None:
        return None

    def update(done: int, total: int) -> None:
        progress(index * total + done, count * total)

    return update
