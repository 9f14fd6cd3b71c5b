"""What a projection is: its tables as data, and the statements a batch of events turns into.

A projection is pure: given a batch of events as the log holds them (`Stored`: position,
stream, topic, decoded only as far as the projection asks) it returns SQL statements (text
and parameters, or one text with many parameter rows), and it names the tables those
statements write. The adapter that runs projections executes a batch's statements together
with the projection's new position in one transaction, so an event is applied exactly once.
Projection layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol
from uuid import UUID

from domain.base import DomainEvent


def utc_text(moment: datetime) -> str:
    """A time as ISO-8601 text in UTC (naive means UTC), so text order is time order."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat()


@dataclass(frozen=True)
class Table:
    """One table of a read model: columns with SQLite types, a primary key, indexes."""

    name: str
    columns: dict[str, type]
    pk: tuple[str, ...]
    indexes: tuple[tuple[str, ...], ...] = ()
    doc: str = ""


@dataclass(frozen=True)
class Statement:
    """One SQL statement with its parameters; with `many`, one execution per parameter row."""

    sql: str
    params: Sequence[Any] = ()
    many: bool = False


@dataclass(frozen=True)
class Position:
    """Where an event stands in the journal: its log position, stream and time."""

    log: int
    stream: UUID
    at: datetime


class Stored(Protocol):
    """One event of a batch as the log holds it, decoded only as far as a projection asks.

    The position, stream and topic cost nothing; `fields` parses the stored state (brought
    up to the current class version) without validating it; `event` is the full domain event.
    """

    @property
    def log(self) -> int:
        """The event's position in the whole log."""
        ...

    @property
    def stream(self) -> str:
        """The stream (aggregate) id: 32 hex digits."""
        ...

    @property
    def topic(self) -> str:
        """The event's stable topic."""
        ...

    def fields(self) -> Mapping[str, Any]:
        """The stored state as JSON values; fields left at their default may be absent."""
        ...

    def event(self) -> DomainEvent:
        """The decoded, validated domain event."""
        ...

    def at(self) -> datetime:
        """When the event happened, in UTC."""
        ...

    def position(self) -> Position:
        """The event's log position, stream and time."""
        ...


@dataclass(frozen=True)
class Decoded:
    """A domain event already in memory, seen as a `Stored` one; for pure callers and tests."""

    decoded: DomainEvent
    log: int

    @property
    def stream(self) -> str:
        """The stream id's 32 hex digits."""
        return self.decoded.originator_id.hex

    @property
    def topic(self) -> str:
        """The event type's topic."""
        return self.decoded.TOPIC

    def fields(self) -> Mapping[str, Any]:
        """The event as JSON values, every field present."""
        return self.decoded.model_dump(mode="json", exclude={"originator_id", "originator_version"})

    def event(self) -> DomainEvent:
        """The event itself."""
        return self.decoded

    def at(self) -> datetime:
        """The event's time in UTC (naive means UTC)."""
        moment = self.decoded.timestamp
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)

    def position(self) -> Position:
        """The event's position."""
        return Position(log=self.log, stream=self.decoded.originator_id, at=self.at())


@dataclass
class Batch:
    """The statements of one batch, and what a projection wants recomputed at its end."""

    statements: list[Statement] = field(default_factory=list)
    dirty: set[Any] = field(default_factory=set)

    def add(self, sql: str, *params: Any) -> None:  # noqa: ANN401 - SQL parameters
        """Append one statement."""
        self.statements.append(Statement(sql, params))

    def add_rows(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Append one statement executed once per parameter row (nothing when there is none)."""
        if rows:
            self.statements.append(Statement(sql, rows, many=True))


class Projection(Protocol):
    """A read model fed from the journal's log, a batch at a time."""

    name: str
    version: int
    tables: tuple[Table, ...]

    def apply_batch(self, events: Sequence[Stored], batch: Batch) -> None:
        """Add the statements the batch's `events` turn into, in as few as the batch allows."""
        ...
