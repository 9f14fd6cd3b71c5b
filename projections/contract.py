"""What a projection is: its tables as data, and the statements one event turns into.

A projection is pure: given an event and its position in the journal's log it returns SQL
statements (text and parameters), and it names the tables those statements write. The
adapter that runs projections executes a batch of statements together with the projection's
new position in one transaction, so an event is applied exactly once. Projection layer.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    """One SQL statement with its parameters."""

    sql: str
    params: Sequence[Any] = ()


@dataclass(frozen=True)
class Position:
    """Where an event stands in the journal: its log position, stream and time."""

    log: int
    stream: UUID
    at: datetime


@dataclass
class Batch:
    """The statements of one batch, and what a projection wants recomputed at its end."""

    statements: list[Statement] = field(default_factory=list)
    dirty: set[Any] = field(default_factory=set)

    def add(self, sql: str, *params: Any) -> None:  # noqa: ANN401 - SQL parameters
        """Append one statement."""
        self.statements.append(Statement(sql, params))


class Projection(Protocol):
    """A read model fed from the journal's log."""

    name: str
    version: int
    tables: tuple[Table, ...]

    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Add the statements `event` turns into (nothing if it does not concern this model)."""
        ...

    def finish(self, batch: Batch) -> None:
        """Add statements that recompute what the batch's events left dirty."""
        ...
