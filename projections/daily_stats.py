"""Tool calls per UTC day, tool and outcome: counts, durations, approvals.

Calls of names no tool is registered under are counted together, as the tool
`(unknown)`: made-up names would otherwise each get rows of their own. The names stay in
the journal and in the authorization audit; projection layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import singledispatchmethod
from typing import Any

import orjson

from domain.base import DomainEvent
from domain.session.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    ToolReceiptRecorded,
)
from domain.tools.exposure import NO_SUCH_TOOL
from domain.values.authorization import ApprovalVerdict, DenialCategory
from projections.contract import Batch, Events, Position, Table
from projections.per_event import EventByEvent, handled_topics

DAILY_STATS = Table(
    name="daily_stats",
    columns={
        "day": str,
        "tool": str,
        "outcome": str,
        "calls": int,
        "total_duration_ms": float,
        "p95_duration_ms": float,
        "denials": int,
        "approvals_asked": int,
        "approvals_granted": int,
        "approvals_timed_out": int,
    },
    pk=("day", "tool", "outcome"),
    doc="Calls per UTC day, tool and outcome: count, total and p95 duration, denials, approvals.",
)
DAILY_ATTEMPTS = Table(
    name="daily_attempts",
    columns={
        "attempt_id": str,
        "day": str,
        "tool": str,
        "started_at": str,
        "asked": int,
        "granted": int,
        "timed_out": int,
    },
    pk=("attempt_id",),
    doc="Helper of daily_stats: each attempt that has not ended, with its day, tool, approvals.",
)
DAILY_DURATIONS = Table(
    name="daily_durations",
    columns={
        "attempt_id": str,
        "day": str,
        "tool": str,
        "outcome": str,
        "duration_ms": float,
    },
    pk=("attempt_id",),
    indexes=(("day", "tool", "outcome", "duration_ms"),),
    doc="Helper of daily_stats: each ended attempt's group and duration, for the p95.",
    looked_up=True,
)

DENIED = "denied"
CORRECTED = "corrected"
UNKNOWN = "unknown"
UNKNOWN_TOOL = "(unknown)"
"""The one tool row every call of an unregistered name is counted in."""
_APPROVAL_COLUMN = {
    ApprovalVerdict.APPROVED: "granted",
    ApprovalVerdict.EXPIRED: "timed_out",
}

_GROUP_OF = "(SELECT day, tool, outcome FROM daily_durations WHERE attempt_id = ?1)"
# A group's nearest-rank p95 is its value at 1-based rank ceil(0.95 * n); (95 * n + 99) / 100
# is that ceiling in integer arithmetic, exact for every n (n = 1 gives rank 1), and needs no
# math functions, which not every SQLite build has. The group is named by one attempt that
# ended in it; the value is read in the order of the group's (covering) index, skipping the
# rows below its rank, so nothing is sorted.
_P95 = (
    "UPDATE daily_stats SET p95_duration_ms = ("  # noqa: S608 - fixed text
    f"SELECT duration_ms FROM daily_durations WHERE (day, tool, outcome) = {_GROUP_OF}"
    " ORDER BY duration_ms LIMIT 1 OFFSET ("
    "SELECT (95 * count(*) + 99) / 100 - 1 FROM daily_durations"
    f" WHERE (day, tool, outcome) = {_GROUP_OF}))"
    f" WHERE (day, tool, outcome) = {_GROUP_OF}"
)


Fields = Mapping[str, Any]
_DURATION = (
    "INSERT INTO daily_durations (attempt_id, day, tool, outcome, duration_ms)"
    " VALUES (?, ?, ?, ?, ROUND((julianday(?) - julianday(?)) * 86400000.0))"
)
_GROUP_COUNTS = (
    "INSERT INTO daily_stats (day, tool, outcome, calls, total_duration_ms, denials,"
    " approvals_asked, approvals_granted, approvals_timed_out)"
    " SELECT ?, ?, ?, ?, sum(duration_ms), ?, ?, ?, ? FROM daily_durations"
    " WHERE attempt_id IN (SELECT value FROM json_each(?))"
    " ON CONFLICT (day, tool, outcome) DO UPDATE SET calls = calls + excluded.calls,"
    " total_duration_ms = total_duration_ms + excluded.total_duration_ms,"
    " denials = denials + excluded.denials,"
    " approvals_asked = approvals_asked + excluded.approvals_asked,"
    " approvals_granted = approvals_granted + excluded.approvals_granted,"
    " approvals_timed_out = approvals_timed_out + excluded.approvals_timed_out"
)
"""A group's calls that ended in the batch, counted in memory; their durations summed by
SQLite from the rows `_DURATION` just wrote."""
_ENDINGS = {
    ToolReceiptRecorded.TOPIC: None,
    AttemptDenied.TOPIC: DENIED,
    CorrectionIssued.TOPIC: CORRECTED,
    AttemptOutcomeMarkedUnknown.TOPIC: UNKNOWN,
}
"""Each ending topic and its outcome (a receipt names its own)."""


@dataclass(slots=True)
class _Open:
    """An attempt started in the batch, as its helper row would hold it."""

    day: str
    tool: str
    started_at: str
    asked: int = 0
    granted: int = 0
    timed_out: int = 0


@dataclass(slots=True)
class _Ended:
    """The calls of one group that ended in the batch: their ids and summed counters."""

    attempts: list[str] = field(default_factory=list)
    denials: int = 0
    asked: int = 0
    granted: int = 0
    timed_out: int = 0


def utc_day(at: datetime) -> str:
    """The UTC date of `at` (a naive time is taken as UTC), as YYYY-MM-DD."""
    aware = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    return aware.astimezone(UTC).date().isoformat()


class DailyStats(EventByEvent):
    """How many calls each tool made per day, how they ended, how long they took."""

    name = "daily_stats"
    version = 2
    """2: calls of unregistered names are grouped as `(unknown)`."""
    tables: tuple[Table, ...] = (DAILY_STATS, DAILY_ATTEMPTS, DAILY_DURATIONS)

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """Fold the attempts started in the batch in memory, then write them set by set.

        Each ended attempt gets its duration row, each group its counts in one statement,
        each attempt still open a helper row, and every group touched its p95. An event of
        an attempt started in an earlier batch becomes its statements, as before.
        """
        opened: dict[str, _Open] = {}
        durations: list[tuple[object, ...]] = []
        ended: dict[tuple[str, str, str], _Ended] = {}
        for stored in events.of(handled_topics(type(self))):
            topic = stored.topic
            f = stored.fields()
            attempt_id = f["attempt_id"]
            if topic == AuthorizationAttemptStarted.TOPIC:
                at = stored.at_text()
                opened[attempt_id] = _Open(at[:10], f["tool_name"], at)
                continue
            attempt = opened.get(attempt_id)
            if attempt is None:
                self.apply(stored.event(), stored.position(), batch)
            elif topic == ApprovalRequested.TOPIC:
                attempt.asked = 1
            elif topic == ApprovalDecided.TOPIC:
                column = _APPROVAL_COLUMN.get(ApprovalVerdict(f["verdict"]))
                if column is not None:
                    setattr(attempt, column, 1)
            elif topic in _ENDINGS:
                outcome = _ENDINGS[topic] or f["outcome"]
                if outcome == DENIED and _unregistered(f):
                    attempt.tool = UNKNOWN_TOOL
                del opened[attempt_id]
                durations.append(
                    (
                        attempt_id,
                        attempt.day,
                        attempt.tool,
                        outcome,
                        stored.at_text(),
                        attempt.started_at,
                    )
                )
                group = ended.get((attempt.day, attempt.tool, outcome))
                if group is None:
                    group = ended[attempt.day, attempt.tool, outcome] = _Ended()
                group.attempts.append(attempt_id)
                group.denials += outcome == DENIED
                group.asked += attempt.asked
                group.granted += attempt.granted
                group.timed_out += attempt.timed_out
        batch.add_rows(_DURATION, durations)
        batch.add_rows(
            _GROUP_COUNTS,
            [
                (
                    *key,
                    len(group.attempts),
                    group.denials,
                    group.asked,
                    group.granted,
                    group.timed_out,
                    orjson.dumps(group.attempts).decode(),
                )
                for key, group in ended.items()
            ],
        )
        batch.dirty.update(group.attempts[0] for group in ended.values())
        batch.add_rows(
            "INSERT INTO daily_attempts (attempt_id, day, tool, started_at, asked, granted,"
            " timed_out) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (attempt_id, a.day, a.tool, a.started_at, a.asked, a.granted, a.timed_out)
                for attempt_id, a in opened.items()
            ],
        )
        self.finish(batch)

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events are not counted."""

    @apply.register
    def _(self, event: AuthorizationAttemptStarted, position: Position, batch: Batch) -> None:
        batch.add(
            "INSERT INTO daily_attempts (attempt_id, day, tool, started_at, asked, granted,"
            " timed_out) VALUES (?, ?, ?, ?, 0, 0, 0)",
            event.attempt_id,
            utc_day(position.at),
            event.tool_name,
            position.at.isoformat(),
        )

    @apply.register
    def _(self, event: ApprovalRequested, _position: Position, batch: Batch) -> None:
        batch.add("UPDATE daily_attempts SET asked = 1 WHERE attempt_id = ?", event.attempt_id)

    @apply.register
    def _(self, event: ApprovalDecided, _position: Position, batch: Batch) -> None:
        column = _APPROVAL_COLUMN.get(event.verdict)
        if column is not None:
            batch.add(
                f"UPDATE daily_attempts SET {column} = 1 WHERE attempt_id = ?",  # noqa: S608 - fixed columns
                event.attempt_id,
            )

    @apply.register
    def _(self, event: ToolReceiptRecorded, position: Position, batch: Batch) -> None:
        self._end(event.attempt_id, str(event.outcome), position, batch)

    @apply.register
    def _(self, event: AttemptDenied, position: Position, batch: Batch) -> None:
        if event.category is DenialCategory.NOT_EXPOSED and event.detail == NO_SUCH_TOOL:
            batch.add(
                "UPDATE daily_attempts SET tool = ? WHERE attempt_id = ?",
                UNKNOWN_TOOL,
                event.attempt_id,
            )
        self._end(event.attempt_id, DENIED, position, batch)

    @apply.register
    def _(self, event: CorrectionIssued, position: Position, batch: Batch) -> None:
        self._end(event.attempt_id, CORRECTED, position, batch)

    @apply.register
    def _(self, event: AttemptOutcomeMarkedUnknown, position: Position, batch: Batch) -> None:
        self._end(event.attempt_id, UNKNOWN, position, batch)

    def finish(self, batch: Batch) -> None:
        """Recompute the p95 of every group an attempt of this batch ended in.

        `dirty` names one attempt per group: an ending event names its attempt, not the
        attempt's day and tool, which for a call of an earlier batch only the helper row knows.
        """
        batch.add_rows(_P95, [(attempt_id,) for attempt_id in sorted(batch.dirty)])

    @staticmethod
    def _end(attempt_id: str, outcome: str, position: Position, batch: Batch) -> None:
        """Move the attempt into its group's durations and counters; its p95 waits for finish."""
        batch.add(
            "INSERT INTO daily_durations (attempt_id, day, tool, outcome, duration_ms)"
            " SELECT attempt_id, day, tool, ?,"
            " ROUND((julianday(?) - julianday(started_at)) * 86400000.0)"
            " FROM daily_attempts WHERE attempt_id = ?",
            outcome,
            position.at.isoformat(),
            attempt_id,
        )
        batch.add(
            "INSERT INTO daily_stats (day, tool, outcome, calls, total_duration_ms, denials,"
            " approvals_asked, approvals_granted, approvals_timed_out)"
            " SELECT a.day, a.tool, d.outcome, 1, d.duration_ms, ?, a.asked, a.granted,"
            " a.timed_out FROM daily_attempts AS a, daily_durations AS d"
            " WHERE a.attempt_id = ? AND d.attempt_id = a.attempt_id"
            " ON CONFLICT (day, tool, outcome) DO UPDATE SET calls = calls + 1,"
            " total_duration_ms = total_duration_ms + excluded.total_duration_ms,"
            " denials = denials + excluded.denials,"
            " approvals_asked = approvals_asked + excluded.approvals_asked,"
            " approvals_granted = approvals_granted + excluded.approvals_granted,"
            " approvals_timed_out = approvals_timed_out + excluded.approvals_timed_out",
            int(outcome == DENIED),
            attempt_id,
        )
        batch.add("DELETE FROM daily_attempts WHERE attempt_id = ?", attempt_id)
        batch.dirty.add(attempt_id)


def _unregistered(f: Fields) -> bool:
    """Whether a denial's fields say no tool is registered under the call's name."""
    return bool(f["category"] == DenialCategory.NOT_EXPOSED and f.get("detail", "") == NO_SUCH_TOOL)
