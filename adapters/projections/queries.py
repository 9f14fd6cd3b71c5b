"""Audit questions answered from the read models, caught up with the journal first.

`open_audit` checks the home and the journal like every read command, then catches every
projection up with the log, so each answer reflects the journal as it is. A home without a
journal answers with empty results and nothing is created. Every query is parameterized SQL
on a read-only connection; rows come back as dicts, newest first, with JSON columns decoded.
Adapter layer.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import orjson

from adapters import wiring
from adapters.errors import UnknownSessionError
from adapters.home import Home
from adapters.journal.failures import translated
from adapters.journal.reader import JournalReader
from adapters.projections.runner import Progress, ProjectionRunner, Status
from domain.errors import LedgerclawError
from domain.tools.exposure import NO_SUCH_TOOL
from domain.values.authorization import DenialCategory, FileOperation
from projections.daily_stats import UNKNOWN_TOOL
from projections.file_activity import SHELL_CANDIDATE
from projections.model import Projection
from projections.registry import ALL_PROJECTIONS, by_name

DEFAULT_LIMIT = 50
DECISIONS = ("pending", "allowed", "denied", "corrected", "not_run")
"""How an authorization attempt stands in `authorization_audit.decision`."""
OPERATIONS = (*(operation.value for operation in FileOperation), SHELL_CANDIDATE)
"""The operations `file_activity.operation` records: file operations, and shell candidates."""

_JSON_COLUMNS = frozenset({"operations", "paths", "recent_files", "arguments", "bounded_arguments"})
_EVENTS = (
    "(SELECT max(e.originator_version) FROM stored_events e"
    " WHERE e.originator_id = substr(s.session_id, instr(s.session_id, '_') + 1)) AS events"
)
"""The length of a session's stream, next to its catalog row `s`."""
_AGE = re.compile(r"^(\d+)\s*([smhdw])$")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class AuditQueryError(LedgerclawError):
    """An audit query was asked with bad input (a date, a value, a name); nothing was read."""

    exit_code = 2


class BadFilterError(AuditQueryError):
    """A filter (`--since`, `--until`, `--limit`, `--decision`, ...) is not valid."""


class UnknownProjectionError(AuditQueryError):
    """No projection has the given name."""


Moment = date | datetime | str | None
"""A bound as given: a date, a datetime (naive means UTC), text, or none."""


def parse_moment(
    value: Moment, label: str, *, end: bool, now: datetime | None = None
) -> datetime | None:
    """`value` as an aware UTC datetime.

    Text may be a date (`2026-11-30`), a date and time (`2026-11-30T10:00`, an offset is
    honoured, none means UTC) or an age (`90m`, `24h`, `7d`, `2w`: that long before now). A
    date alone is the start of that day, or with `end` the start of the next one, so an
    `--until` date includes the whole day.
    """
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return _utc(value)
    if isinstance(value, date):
        return _day_start(value, end=end)
    text = value.strip()
    age = _AGE.match(text.lower())
    if age:
        amount, unit = int(age.group(1)), _AGE_UNITS[age.group(2)]
        try:
            return (now or datetime.now(UTC)) - timedelta(**{unit: amount})
        except OverflowError:
            msg = f"--{label} {value!r} reaches too far back"
            raise BadFilterError(msg) from None
    try:
        try:
            return _day_start(date.fromisoformat(text), end=end)
        except ValueError:
            return _utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):
        msg = (
            f"--{label} {value!r} is not a date (2026-11-30), a time (2026-11-30T10:00)"
            " or an age (7d, 24h)"
        )
        raise BadFilterError(msg) from None


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _day_start(day: date, *, end: bool) -> datetime:
    if end and day == date.max:
        return datetime.max.replace(tzinfo=UTC)
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start + timedelta(days=1) if end else start


def stamp(moment: datetime) -> str:
    """`moment` spelled like the tables spell times, so text comparison orders them."""
    return moment.astimezone(UTC).isoformat()


MAX_LIMIT = 2**63 - 1
"""The largest limit SQLite can take."""


@dataclass(frozen=True)
class Filters:
    """What every listing can be narrowed by; bad values raise BadFilterError at once.

    `since` is inclusive and `until` exclusive; `session` is an id or a unique prefix;
    `limit` caps the rows (0 means no limit).
    """

    since: Moment = None
    until: Moment = None
    session: str | None = None
    limit: int = DEFAULT_LIMIT
    lower: datetime | None = field(init=False, default=None)
    upper: datetime | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.limit < 0:
            msg = f"--limit {self.limit} is negative; give 0 for no limit"
            raise BadFilterError(msg)
        if self.limit > MAX_LIMIT:
            msg = f"--limit {self.limit} is too large; give 0 for no limit"
            raise BadFilterError(msg)
        now = datetime.now(UTC)
        lower = parse_moment(self.since, "since", end=False, now=now)
        upper = parse_moment(self.until, "until", end=True, now=now)
        if lower is not None and upper is not None and lower >= upper:
            msg = f"--since {self.since} is not before --until {self.until}"
            raise BadFilterError(msg)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def sql_limit(self) -> int:
        """The LIMIT parameter: -1 (no limit) for 0."""
        return self.limit or -1


class _Where:
    """Conditions and their parameters, joined with AND."""

    def __init__(self) -> None:
        self.conditions: list[str] = []
        self.params: list[Any] = []

    def add(self, condition: str, *params: Any) -> None:  # noqa: ANN401 - SQL parameters
        self.conditions.append(condition)
        self.params.extend(params)

    def window(self, filters: Filters, column: str) -> None:
        if filters.lower is not None:
            self.add(f"{column} >= ?", stamp(filters.lower))
        if filters.upper is not None:
            self.add(f"{column} < ?", stamp(filters.upper))

    def __str__(self) -> str:
        return " WHERE " + " AND ".join(self.conditions) if self.conditions else ""


def _choice(value: str | None, allowed: Sequence[str], label: str) -> str | None:
    if value is None:
        return None
    if value not in allowed:
        msg = f"--{label} {value!r} is not one of {', '.join(allowed)}"
        raise BadFilterError(msg)
    return value


def _decoded(row: sqlite3.Row) -> dict[str, Any]:
    result = dict(row)
    for name in _JSON_COLUMNS & result.keys():
        raw = result[name]
        if isinstance(raw, str | bytes) and raw:
            try:
                result[name] = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
    return result


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


class Rows(list[dict[str, Any]]):
    """Rows as dicts, with the column names in order (known even when there are no rows)."""

    def __init__(self, rows: Sequence[dict[str, Any]] = (), columns: Sequence[str] = ()) -> None:
        super().__init__(rows)
        self.columns = list(columns)


class Audit:
    """Read-only queries over the projection tables of one home's journal."""

    def __init__(
        self, home: Home, reader: JournalReader, projections: Sequence[Projection]
    ) -> None:
        self.home = home
        self.reader = reader
        self.projections = tuple(projections)

    @property
    def exists(self) -> bool:
        """Whether the home has a journal (without one every answer is empty)."""
        return self.reader.exists

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        uri = f"{self.home.database.as_uri()}?mode=ro"
        with (
            translated(self.home.database, "reading its read models"),
            closing(sqlite3.connect(uri, uri=True, timeout=5)) as db,
        ):
            db.row_factory = sqlite3.Row
            yield db

    def _rows(self, sql: str, params: Sequence[Any], table: str, extra: Sequence[str] = ()) -> Rows:
        if not self.exists:
            columns = [
                c for p in self.projections for t in p.tables if t.name == table for c in t.columns
            ]
            return Rows([], [*columns, *extra])
        with self._connect() as db:
            cursor = db.execute(sql, tuple(params))
            found = Rows([_decoded(row) for row in cursor.fetchall()])
            found.columns = [column[0] for column in cursor.description]
            return found

    def _session(self, filters: Filters) -> str | None:
        if filters.session is None:
            return None
        return str(self.reader.resolve_session(filters.session))

    # -- queries ---------------------------------------------------------------------------

    def sessions(self, filters: Filters, *, oldest_first: bool = False) -> Rows:
        """Sessions active in the window, newest first by creation (or oldest first).

        A session is in the window when it was created before `until` and last active at or
        after `since`. With a limit, the newest sessions are kept in either order. Each row
        also has `events`, the length of the session's stream.
        """
        where = _Where()
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
        return self._rows(sql, [*where.params, filters.sql_limit], "sessions", ["events"])

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
        row = rows[0]
        if row["recent_files"] is None:
            row["recent_files"] = []
        return row

    def attempts(
        self,
        filters: Filters,
        decision: str | None = None,
        tool: str | None = None,
        path_glob: str | None = None,
    ) -> Rows:
        """Authorization attempts started in the window, newest first."""
        decision = _choice(decision, DECISIONS, "decision")
        where = _Where()
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
        operation = _choice(operation, OPERATIONS, "operation")
        where = _Where()
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

    def daily(self, filters: Filters) -> Rows:
        """Per day, tool and outcome: calls, durations, denials and approvals; newest first.

        With a session, the same figures are computed from that session's audit rows, by
        the same rules (outcome, nearest-rank p95).
        """
        if filters.session is not None:
            return self._daily_of_session(filters)
        # The table counts whole UTC days: keep the days that lie wholly inside the window.
        where = _Where()
        if filters.lower is not None:
            lower = filters.lower
            first = lower.date() + timedelta(days=lower != _day_start(lower.date(), end=False))
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
        where = _Where()
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

    def status(self) -> Rows:
        """Each projection's version, stored version, position, the log's head and the lag."""
        if not self.exists:
            statuses = [Status(p.name, p.version, None, 0, 0) for p in self.projections]
        else:
            statuses = ProjectionRunner(self.home.database, self.projections).status()
        return Rows([status_row(status) for status in statuses], STATUS_COLUMNS)


def _checked(home: Home) -> JournalReader:
    """The home's journal reader, after the same checks as every read command."""
    return wiring.open_reader(home)


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


def overall_progress(progress: Progress | None, index: int, count: int) -> Progress | None:
    """Progress of the `index`-th of `count` equal passes over the log, as one bar."""
    if progress is None:
        return None

    def update(done: int, total: int) -> None:
        progress(index * total + done, count * total)

    return update
