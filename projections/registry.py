"""Every projection kept, by name, and what its public tables hold; projection layer."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from projections.authorization_audit import AUTHORIZATION_AUDIT, AuthorizationAudit
from projections.catalog import SESSIONS, SessionCatalog
from projections.contract import Projection
from projections.daily_stats import DAILY_STATS, DailyStats
from projections.devices import DEVICES, DeviceList
from projections.file_activity import FILE_ACTIVITY, FileActivityLog
from projections.working_context import WORKING_CONTEXT, WorkingContextView

ALL_PROJECTIONS: tuple[Projection, ...] = (
    SessionCatalog(),
    WorkingContextView(),
    AuthorizationAudit(),
    FileActivityLog(),
    DailyStats(),
    DeviceList(),
)
"""Every projection, in the order a catch-up runs them."""

TABLE_DOCS: Mapping[str, str] = MappingProxyType(
    {
        table.name: table.doc
        for table in (
            SESSIONS,
            WORKING_CONTEXT,
            AUTHORIZATION_AUDIT,
            FILE_ACTIVITY,
            DAILY_STATS,
            DEVICES,
        )
    }
)
"""Each public table and what one row of it says; helper tables are left out."""


class UnknownProjectionError(LookupError):
    """No projection has the requested name."""


def by_name(name: str) -> Projection:
    """The projection called `name`."""
    for projection in ALL_PROJECTIONS:
        if projection.name == name:
            return projection
    known = ", ".join(p.name for p in ALL_PROJECTIONS)
    msg = f"no projection named {name!r} (known: {known})"
    raise UnknownProjectionError(msg)
