"""Queries over the audit trail: authorization attempts and file activity; adapter layer."""

from __future__ import annotations

from adapters.api.audit_terms import DECISIONS, OPERATIONS
from adapters.api.filters import Filters, Where, choice
from adapters.api.read_models import ReadModels, Rows

__all__ = ["DECISIONS", "OPERATIONS", "TrailQueries"]


class TrailQueries(ReadModels):
    """Who tried what, what was decided, and which files it touched."""

    def attempts(
        self,
        filters: Filters,
        decision: str | None = None,
        tool: str | None = None,
        path_glob: str | None = None,
    ) -> Rows:
        """Authorization attempts started in the window, newest first."""
        decision = choice(decision, DECISIONS, "decision")
        where = Where()
        where.window(filters, "started_at")
        session = self._session(filters)
        if session is not None:
            where.add("session_id = ?", session)
        if decision is not None:
            where.add("decision = ?", decision)
        if tool is not None:
            where.add("tool = ?", tool)
        if path_glob is not None:
            where.add(
                "EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(paths) THEN paths"
                " ELSE '[]' END) WHERE json_each.value GLOB ?)",
                path_glob,
            )
        return self._rows(
            f"SELECT * FROM authorization_audit{where}"  # noqa: S608 - fixed columns
            " ORDER BY started_at DESC, attempt_id DESC LIMIT ?",
            [*where.params, filters.sql_limit],
            "authorization_audit",
        )

    def files(
        self, filters: Filters, path_glob: str | None = None, operation: str | None = None
    ) -> Rows:
        """File activity recorded in the window, newest first."""
        operation = choice(operation, OPERATIONS, "operation")
        where = Where()
        where.window(filters, "at")
        session = self._session(filters)
        if session is not None:
            where.add("session_id = ?", session)
        if operation is not None:
            where.add("operation = ?", operation)
        if path_glob is not None:
            where.add("path GLOB ?", path_glob)
        return self._rows(
            f"SELECT * FROM file_activity{where}"  # noqa: S608 - fixed columns
            " ORDER BY at DESC, attempt_id DESC, path LIMIT ?",
            [*where.params, filters.sql_limit],
            "file_activity",
        )
