"""Audit questions answered from the read models, caught up with the journal first.

`open_audit` checks the home and the journal like every read command, then catches every
projection up with the log, so each answer reflects the journal as it is. A home without a
journal answers with empty results and nothing is created. Every query is parameterized SQL
on a read-only connection; rows come back as dicts, newest first, with JSON columns decoded.
The queries live by concept beside this module: the session catalog, the audit trail, the
daily statistics and the projections' status. Adapter layer.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.api.audit_terms import DEFAULT_LIMIT
from adapters.api.catalog_queries import CatalogQueries
from adapters.api.filters import (
    MAX_LIMIT,
    AuditQueryError,
    BadFilterError,
    Filters,
    Moment,
    parse_moment,
    stamp,
)
from adapters.api.projection_status import (
    STATUS_COLUMNS,
    StatusQueries,
    overall_progress,
    status_row,
)
from adapters.api.read_models import Rows
from adapters.api.stats_queries import StatsQueries
from adapters.api.trail_queries import DECISIONS, OPERATIONS, TrailQueries
from adapters.home import Home
from adapters.journal.reader import JournalReader
from adapters.projections.runner import Progress, ProjectionRunner
from adapters.wiring.home import open_reader
from projections.contract import Projection
from projections.registry import ALL_PROJECTIONS, by_name

__all__ = [
    "DECISIONS",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "OPERATIONS",
    "STATUS_COLUMNS",
    "Audit",
    "AuditQueryError",
    "BadFilterError",
    "Filters",
    "Moment",
    "Rows",
    "UnknownProjectionError",
    "open_audit",
    "overall_progress",
    "parse_moment",
    "rebuild",
    "stamp",
    "status",
    "status_row",
]


class UnknownProjectionError(AuditQueryError):
    """No projection has the given name."""


class Audit(CatalogQueries, TrailQueries, StatsQueries, StatusQueries):
    """Read-only queries over the projection tables of one home's journal."""


def _checked(home: Home) -> JournalReader:
    """The home's journal reader, after the same checks as every read command."""
    return open_reader(home)


def open_audit(
    home: Home,
    progress: Progress | None = None,
    projections: Sequence[Projection] | None = None,
) -> Audit:
    """Check the home, catch every projection up with the journal, and query it."""
    chosen = tuple(ALL_PROJECTIONS if projections is None else projections)
    reader = _checked(home)
    if reader.exists:
        ProjectionRunner(home.database, chosen).catch_up(progress)
    return Audit(home, reader, chosen)


def status(home: Home, projections: Sequence[Projection] | None = None) -> Rows:
    """Where each projection stands, without catching up (so the lag shows)."""
    chosen = tuple(ALL_PROJECTIONS if projections is None else projections)
    return Audit(home, _checked(home), chosen).status()


def rebuild(home: Home, names: Sequence[str] = (), progress: Progress | None = None) -> Rows:
    """Drop the named projections (every one when none) and apply the whole log again.

    Progress is reported across all of them, as one pass. Returns every projection's status.
    """
    for name in names:
        try:
            by_name(name)
        except LookupError as error:
            raise UnknownProjectionError(str(error)) from None
    reader = _checked(home)
    audit = Audit(home, reader, ALL_PROJECTIONS)
    if not reader.exists:
        return audit.status()
    runner = ProjectionRunner(home.database, ALL_PROJECTIONS)
    targets = [p.name for p in ALL_PROJECTIONS if not names or p.name in names]
    for index, name in enumerate(targets):
        runner.rebuild([name], overall_progress(progress, index, len(targets)))
    return audit.status()
