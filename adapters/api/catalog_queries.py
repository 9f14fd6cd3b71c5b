"""Queries over the session catalog: sessions in a window, one session; adapter layer.

Each row also has `events`, the length of the session's stream, read from the event log in
one query for all the rows.
"""

from __future__ import annotations

from typing import Any

from adapters.api.filters import Filters, Where, stamp
from adapters.api.read_models import ReadModels, Rows
from adapters.errors import UnknownSessionError

_EVENTS = "NULL AS events"
"""A place for the length of a session's stream, next to its catalog row `s`: see `_counted`."""


def _stream_of(session_id: str) -> str:
    """The stream id of a catalog's session id: the digits after its `ses_`."""
    return session_id.split("_", 1)[-1]


class CatalogQueries(ReadModels):
    """The session catalog and each session's working context."""

    def _counted(self, rows: Rows) -> Rows:
        """`rows` with each session's `events`, its stream's length, read from the log at once."""
        streams = {row["session_id"]: _stream_of(row["session_id"]) for row in rows}
        heads = self.reader.log.stream_heads(list(streams.values())) if streams else {}
        for row in rows:
            row["events"] = heads.get(streams[row["session_id"]])
        return rows

    def sessions(self, filters: Filters, *, oldest_first: bool = False) -> Rows:
        """Sessions active in the window, newest first by creation (or oldest first).

        A session is in the window when it was created before `until` and last active at or
        after `since`. With a limit, the newest sessions are kept in either order. Each row
        also has `events`, the length of the session's stream.
        """
        where = Where()
        if filters.lower is not None:
            where.add("last_activity_at >= ?", stamp(filters.lower))
        if filters.upper is not None:
            where.add("created_at < ?", stamp(filters.upper))
        session = self._session(filters)
        if session is not None:
            where.add("session_id = ?", session)
        newest = (
            f"SELECT s.*, {_EVENTS} FROM sessions s{where}"  # noqa: S608 - fixed columns
            " ORDER BY s.created_at DESC, s.session_id DESC LIMIT ?"
        )
        sql = (
            f"SELECT * FROM ({newest}) ORDER BY created_at, session_id"  # noqa: S608 - fixed query
            if oldest_first
            else newest
        )
        rows = self._rows(sql, [*where.params, filters.sql_limit], "sessions", ["events"])
        return self._counted(rows)

    def session(self, session: str) -> dict[str, Any]:
        """One session's catalog row with its working context, by id or unique prefix."""
        session_id = str(self.reader.resolve_session(session))
        rows = self._rows(
            f"SELECT s.*, {_EVENTS},"  # noqa: S608 - fixed columns
            " w.project_directory, w.recent_files, w.updated_at AS context_updated_at"
            " FROM sessions s LEFT JOIN working_context w ON w.session_id = s.session_id"
            " WHERE s.session_id = ?",
            [session_id],
            "sessions",
        )
        if not rows:
            msg = f"no session {session_id} in the session catalog"
            raise UnknownSessionError(msg)
        row = self._counted(rows)[0]
        if row["recent_files"] is None:
            row["recent_files"] = []
        return row
