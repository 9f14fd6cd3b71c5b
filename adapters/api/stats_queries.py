"""Queries over the daily statistics, for the whole journal or one session; adapter layer."""

from __future__ import annotations

from datetime import timedelta

from adapters.api.filters import Filters, Where, day_start
from adapters.api.read_models import ReadModels, Rows
from domain.tools.exposure import NO_SUCH_TOOL
from domain.values.authorization import DenialCategory
from projections.daily_stats import UNKNOWN_TOOL


class StatsQueries(ReadModels):
    """Calls, durations, denials and approvals per day, tool and outcome."""

    def daily(self, filters: Filters) -> Rows:
        """Per day, tool and outcome: calls, durations, denials and approvals; newest first.

        With a session, the same figures are computed from that session's audit rows, by
        the same rules (outcome, nearest-rank p95).
        """
        if filters.session is not None:
            return self._daily_of_session(filters)
        # The table counts whole UTC days: keep the days that lie wholly inside the window.
        where = Where()
        if filters.lower is not None:
            lower = filters.lower
            first = lower.date() + timedelta(days=lower != day_start(lower.date(), end=False))
            where.add("day >= ?", first.isoformat())
        if filters.upper is not None:
            where.add("day < ?", filters.upper.date().isoformat())
        return self._rows(
            f"SELECT * FROM daily_stats{where}"  # noqa: S608 - fixed columns
            " ORDER BY day DESC, tool, outcome LIMIT ?",
            [*where.params, filters.sql_limit],
            "daily_stats",
        )

    def _daily_of_session(self, filters: Filters) -> Rows:
        session = self._session(filters)
        where = Where()
        where.add("session_id = ?", session)
        where.add("ended_at IS NOT NULL")
        where.window(filters, "started_at")
        return self._rows(
            "WITH ended AS (SELECT substr(started_at, 1, 10) AS day,"  # noqa: S608 - fixed columns
            " CASE WHEN failure_category = ? AND detail = ? THEN ? ELSE tool END AS tool,"
            " CASE decision WHEN 'denied' THEN 'denied' WHEN 'corrected' THEN 'corrected'"
            " ELSE COALESCE(outcome, 'unknown') END AS outcome,"
            " duration_ms, decision, approval_asked, approval_verdict"
            f" FROM authorization_audit{where}),"
            " ranked AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY day, tool, outcome"
            " ORDER BY duration_ms) AS rank, COUNT(*) OVER (PARTITION BY day, tool, outcome)"
            " AS n FROM ended)"
            " SELECT day, tool, outcome, COUNT(*) AS calls,"
            " SUM(duration_ms) AS total_duration_ms,"
            " MAX(CASE WHEN rank = (95 * n + 99) / 100 THEN duration_ms END) AS p95_duration_ms,"
            " SUM(decision = 'denied') AS denials, SUM(approval_asked) AS approvals_asked,"
            " SUM(CASE approval_verdict WHEN 'approved' THEN 1 ELSE 0 END) AS approvals_granted,"
            " SUM(CASE approval_verdict WHEN 'expired' THEN 1 ELSE 0 END) AS approvals_timed_out"
            " FROM ranked GROUP BY day, tool, outcome ORDER BY day DESC, tool, outcome LIMIT ?",
            [
                DenialCategory.NOT_EXPOSED,
                NO_SUCH_TOOL,
                UNKNOWN_TOOL,
                *where.params,
                filters.sql_limit,
            ],
            "daily_stats",
        )
