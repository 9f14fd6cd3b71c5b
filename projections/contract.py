"""What a projection is: its tables as data, and the statements a batch of events turns into.

A projection is pure: given a batch of events as the log holds them (`Events`: the batch's
topics and streams as columns, and each event as a `Stored` one, decoded only as far as the
projection asks) it returns SQL statements (text and parameters, or one text with many
parameter rows), and it names the tables those statements write. The adapter that runs
projections executes a batch's statements together with the projection's new position in
one transaction, so an event is applied exactly once. Projection layer.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
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
    looked_up: bool = False
    """Whether the projection's own statements find rows by `indexes`, not only by the key.

    The indexes of other tables serve their readers alone, so a read model built from
    nothing gets them in the commit that brings it to the head of the log, in one pass over
    its rows, rather than keeping them through every insert of the catch-up.
    """


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

    def at_text(self) -> str:
        """When the event happened, as `utc_text` writes it."""
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

    def at_text(self) -> str:
        """The event's time as `utc_text` writes it."""
        return utc_text(self.decoded.timestamp)

    def position(self) -> Position:
        """The event's position."""
        return Position(log=self.log, stream=self.decoded.originator_id, at=self.at())


class Events(Protocol):
    """The events of one batch, in log order: columns that cost nothing, events on demand.

    A projection that only counts reads `topics` and `streams`; one that needs a few topics
    takes their places (`indices`) or their events (`of`) and never touches the rest.
    """

    @property
    def topics(self) -> Sequence[str]:
        """Each event's topic, in log order."""
        ...

    @property
    def streams(self) -> Sequence[str]:
        """Each event's stream id (32 hex digits), in log order."""
        ...

    def __len__(self) -> int:
        """How many events the batch holds."""
        ...

    def __getitem__(self, index: int) -> Stored:
        """The event at `index` (0 is the batch's first)."""
        ...

    def __iter__(self) -> Iterator[Stored]:
        """Every event, in log order."""
        ...

    def indices(self, topics: Collection[str]) -> list[int]:
        """The places of the events of `topics`, in log order."""
        ...

    def of(self, topics: Collection[str]) -> Sequence[Stored]:
        """The events of `topics`, in log order."""
        ...


class DecodedEvents:
    """Domain events already in memory, seen as one batch; for pure callers and tests."""

    def __init__(self, events: Sequence[Stored]) -> None:
        self._events = list(events)
        self.topics: Sequence[str] = [event.topic for event in self._events]
        self.streams: Sequence[str] = [event.stream for event in self._events]

    @classmethod
    def of_events(cls, events: Sequence[DomainEvent], first: int = 1) -> DecodedEvents:
        """`events` at log positions from `first` on."""
        return cls([Decoded(event, first + index) for index, event in enumerate(events)])

    def __len__(self) -> int:
        """How many events the batch holds."""
        return len(self._events)

    def __getitem__(self, index: int) -> Stored:
        """The event at `index`."""
        return self._events[index]

    def __iter__(self) -> Iterator[Stored]:
        """Every event, in log order."""
        return iter(self._events)

    def indices(self, topics: Collection[str]) -> list[int]:
        """The places of the events of `topics`, in log order."""
        return [index for index, topic in enumerate(self.topics) if topic in topics]

    def of(self, topics: Collection[str]) -> Sequence[Stored]:
        """The events of `topics`, in log order."""
        return [self._events[index] for index in self.indices(topics)]


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

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """Add the statements the batch's `events` turn into, in as few as the batch allows."""
        ...
