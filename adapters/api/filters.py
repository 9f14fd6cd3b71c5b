"""What the audit listings can be narrowed by: time windows, sessions, limits; adapter layer.

A bound is a date, a time or an age (`7d`), read as UTC; `Filters` checks every value as it
is made, so a bad one is refused before anything is read. `Where` joins the conditions a
listing builds from them, with their parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from adapters.api.audit_terms import DEFAULT_LIMIT
from adapters.clock import SYSTEM_CLOCK
from domain.errors import LedgerclawError

if TYPE_CHECKING:
    from domain.ports import Clock

_AGE = re.compile(r"^(\d+)\s*([smhdw])$")
_AGE_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


class AuditQueryError(LedgerclawError):
    """An audit query was asked with bad input (a date, a value, a name); nothing was read."""

    exit_code = 2


class BadFilterError(AuditQueryError):
    """A filter (`--since`, `--until`, `--limit`, `--decision`, ...) is not valid."""


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
        return utc(value)
    if isinstance(value, date):
        return day_start(value, end=end)
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
            return day_start(date.fromisoformat(text), end=end)
        except ValueError:
            return utc(datetime.fromisoformat(text))
    except (ValueError, OverflowError):
        msg = (
            f"--{label} {value!r} is not a date (2026-11-30), a time (2026-11-30T10:00)"
            " or an age (7d, 24h)"
        )
        raise BadFilterError(msg) from None


def utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def day_start(day: date, *, end: bool) -> datetime:
    """The start of `day` in UTC, or with `end` the start of the next day."""
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
    clock: Clock = field(default=SYSTEM_CLOCK, repr=False, compare=False)
    """Tells the time an age (`7d`) counts back from."""
    lower: datetime | None = field(init=False, default=None)
    upper: datetime | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.limit < 0:
            msg = f"--limit {self.limit} is negative; give 0 for no limit"
            raise BadFilterError(msg)
        if self.limit > MAX_LIMIT:
            msg = f"--limit {self.limit} is too large; give 0 for no limit"
            raise BadFilterError(msg)
        now = self.clock.now()
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


class Where:
    """Conditions and their parameters, joined with AND."""

    def __init__(self) -> None:
        self.conditions: list[str] = []
        self.params: list[Any] = []

    def add(self, condition: str, *params: Any) -> None:  # noqa: ANN401 - SQL parameters
        """One more condition, with the parameters its placeholders take."""
        self.conditions.append(condition)
        self.params.extend(params)

    def window(self, filters: Filters, column: str) -> None:
        """Keep `column` inside the filters' time window (since inclusive, until not)."""
        if filters.lower is not None:
            self.add(f"{column} >= ?", stamp(filters.lower))
        if filters.upper is not None:
            self.add(f"{column} < ?", stamp(filters.upper))

    def __str__(self) -> str:
        return " WHERE " + " AND ".join(self.conditions) if self.conditions else ""


def choice(value: str | None, allowed: Sequence[str], label: str) -> str | None:
    """`value` if it is one of `allowed` (or None); else BadFilterError naming `--label`."""
    if value is None:
        return None
    if value not in allowed:
        msg = f"--{label} {value!r} is not one of {', '.join(allowed)}"
        raise BadFilterError(msg)
    return value
