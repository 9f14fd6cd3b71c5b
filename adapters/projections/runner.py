"""Catching projections up with the journal's log, exactly once, in the journal file.

Each projection keeps its position in `projection_positions` (name, version, position). A
batch of events is decoded, turned into statements, and written together with the new
position in one transaction: a crash mid-batch leaves the old position and none of the
batch's rows, so no event is applied twice or skipped. A projection whose version changed is
dropped and rebuilt from the start. The events are read from an `EventLog` (by default the
journal in the same file, read through the catch-up's own connection), one query per batch.
A projection built from nothing gets the indexes only its readers use in the commit that
brings it to the head. Adapter layer.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import sqlite_utils

from adapters.errors import JournalBusyError
from adapters.journal.event_log import Row, SqliteEventLog
from adapters.journal.failures import refuse_if_damaged, translated
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from adapters.projections.stored import StoredBatch
from domain.ports import EventLog
from projections.contract import Batch, Projection

POSITIONS = "projection_positions"
BATCH_SIZE = 20_000
Progress = Callable[[int, int], None]
"""Called with (events done, events to do) as a catch-up goes."""


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector (if it runs) until the block ends.

    A catch-up allocates a batch's rows, parsed states and statement rows, and frees them by
    reference counting: it makes no cycles. The collector would still pass over them again
    and again while they live (up to a fifth of a catch-up's time), so it waits until the
    catch-up is over.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@dataclass(frozen=True)
class Status:
    """Where one projection stands against the head of the log."""

    name: str
    version: int
    stored_version: int | None
    position: int
    head: int

    @property
    def lag(self) -> int:
        """Events not applied yet."""
        return max(self.head - self.position, 0)


class ProjectionRunner:
    """Applies the journal's events to read-model tables in the same SQLite file."""

    def __init__(
        self,
        database: Path,
        projections: Sequence[Projection],
        *,
        busy_timeout: float = 5.0,
        log: EventLog | None = None,
    ) -> None:
        self.database = database
        self.log: EventLog = log or SqliteEventLog(database, busy_timeout=busy_timeout)
        """Where the events come from: by default the journal in the same file."""
        self._own_log = log is None
        """Whether the log is the journal in the runner's own file, read through its connection."""
        self.projections = tuple(projections)
        self.busy_timeout = busy_timeout
        self.mapper = CatalogMapper(transcoder=OrjsonTranscoder())

    # -- public ----------------------------------------------------------------------------

    def catch_up(self, progress: Progress | None = None, batch_size: int = BATCH_SIZE) -> int:
        """Apply every event after each projection's position; the number applied in all.

        When every projection already stands at the head in its current version, nothing is
        written at all, so a query beside a busy writer needs no write lock.
        """
        with self._guarded("catching up its projections"), closing(self._connect()) as db:
            stored = self._positions(db)
            head = self.log.head()
            current = all(stored.get(p.name) == (p.version, head) for p in self.projections)
            if current:
                return 0
            self._prepare(db)
            return self._catch_up(db, self.projections, head, progress, batch_size)

    def rebuild(self, names: Sequence[str] = (), progress: Progress | None = None) -> int:
        """Drop the named projections (all when none) and apply the whole log again."""
        chosen = [p for p in self.projections if not names or p.name in names]
        with self._guarded("rebuilding its projections"), closing(self._connect()) as db:
            self._prepare(db)
            for projection in chosen:
                self._reset(db, projection)
            head = self.log.head()
            return self._catch_up(db, chosen, head, progress, BATCH_SIZE)

    def status(self) -> list[Status]:
        """Each projection's stored version, position and lag behind the head of the log."""
        with self._guarded("reading its projections' positions"), closing(self._connect()) as db:
            head = self.log.head()
            stored = self._positions(db)
        return [
            Status(
                name=p.name,
                version=p.version,
                stored_version=stored.get(p.name, (None, 0))[0],
                position=stored.get(p.name, (None, 0))[1],
                head=head,
            )
            for p in self.projections
        ]

    # -- plumbing --------------------------------------------------------------------------

    def _guarded(self, doing: str) -> AbstractContextManager[None]:
        """Typed errors for a damaged or held file; a damaged one takes no more writes."""
        refuse_if_damaged(self.database)
        return translated(self.database, doing)

    def _connect(self) -> sqlite3.Connection:
        try:
            # Opened as a URI, so the read-only ATTACH of a scratch source below is a URI too,
            # on every SQLite build.
            db = sqlite3.connect(
                Path(self.database).resolve().as_uri(),
                uri=True,
                timeout=self.busy_timeout,
                isolation_level=None,
            )
        except sqlite3.OperationalError as error:
            msg = f"cannot open {self.database}: {error}"
            raise JournalBusyError(msg) from None
        db.execute("PRAGMA journal_mode=WAL")
        # Read models are derived: a commit lost to a power cut (never to a crash of the
        # process) takes its position with it and is applied again from the journal, so a
        # catch-up's commits need not wait for the disk.
        db.execute("PRAGMA synchronous=NORMAL")
        return db

    def _prepare(self, db: sqlite3.Connection) -> None:
        """Create the positions table and each projection's tables; rebuild changed versions."""
        sqlite_utils.Database(db).table(POSITIONS).create(
            {"name": str, "version": int, "position": int}, pk="name", if_not_exists=True
        )
        stored = self._positions(db)
        for projection in self.projections:
            version, position = stored.get(projection.name, (projection.version, 0))
            if version != projection.version:
                self._reset(db, projection)
                position = 0
            self._create(db, projection, readers=position > 0)
            db.execute(
                f"INSERT INTO {POSITIONS} (name, version, position) VALUES (?, ?, 0)"  # noqa: S608 - fixed table name
                " ON CONFLICT(name) DO NOTHING",
                (projection.name, projection.version),
            )

    @staticmethod
    def _create(db: sqlite3.Connection, projection: Projection, *, readers: bool = True) -> None:
        """Create the projection's tables and indexes; without `readers`, only those it uses.

        A projection at position 0 is created so: its other indexes come in the commit that
        brings it to the head (`_indexed`), or with the next catch-up if this one stops first.
        """
        tables = sqlite_utils.Database(db)
        for table in projection.tables:
            created = tables.table(table.name)
            created.create(table.columns, pk=table.pk, if_not_exists=True)
            if readers or table.looked_up:
                for columns in table.indexes:
                    created.create_index(columns, if_not_exists=True)

    @staticmethod
    def _indexed(db: sqlite3.Connection, projection: Projection) -> None:
        """Create the indexes of the projection's tables that do not exist yet."""
        tables = sqlite_utils.Database(db)
        for table in projection.tables:
            for columns in table.indexes:
                tables.table(table.name).create_index(columns, if_not_exists=True)

    def _reset(self, db: sqlite3.Connection, projection: Projection) -> None:
        db.execute("BEGIN IMMEDIATE")
        for table in projection.tables:
            db.execute(f'DROP TABLE IF EXISTS "{table.name}"')
        db.execute(f"DELETE FROM {POSITIONS} WHERE name = ?", (projection.name,))  # noqa: S608 - fixed table name
        db.execute("COMMIT")
        self._create(db, projection, readers=False)

    @staticmethod
    def _positions(db: sqlite3.Connection) -> dict[str, tuple[int, int]]:
        try:
            rows = db.execute(f"SELECT name, version, position FROM {POSITIONS}").fetchall()  # noqa: S608 - fixed table name
        except sqlite3.OperationalError:
            return {}
        return {name: (version, position) for name, version, position in rows}

    def _catch_up(
        self,
        db: sqlite3.Connection,
        projections: Sequence[Projection],
        head: int,
        progress: Progress | None,
        batch_size: int,
    ) -> int:
        """Bring `projections` to `head`; the number of (event, projection) applications.

        Projections that stand at the same position move together: each batch is read and
        decoded once and handed to all of them, and their statements and positions commit in
        one transaction. Each still has its own position: one that stands elsewhere moves in
        its own group.
        """
        log = self.log
        read: Callable[..., Sequence[Row]] = log.batch
        if isinstance(log, SqliteEventLog):
            # The runner reads rows by place: SQLite's tuples do, without a LoggedEvent each;
            # the journal in its own file is read through its own connection.
            read = (log.through(db) if self._own_log else log).batch_rows
        stored = self._positions(db)
        at = {p.name: stored.get(p.name, (p.version, 0))[1] for p in projections}
        # Built from nothing: their readers' indexes come with the commit that reaches head.
        fresh = {name for name, position in at.items() if position == 0}
        total = sum(max(head - position, 0) for position in at.values())
        done = applied = 0
        with collector_paused():
            while behind := [p for p in projections if at[p.name] < head]:
                start = min(at[p.name] for p in behind)
                group = [p for p in behind if at[p.name] == start]
                rows = read(start, batch_size, upto=head)
                if not rows:
                    break
                batches = self._apply(group, rows)
                end = rows[-1][0]
                indexed = [p for p in group if p.name in fresh] if end >= head else []
                work = list(zip(group, batches, strict=True))
                moved = self._commit(db, work, start, end, indexed)
                if moved:
                    # Another catch-up moved some of them meanwhile: nothing was written; go
                    # on from where each stands now.
                    latest = self._positions(db)
                    at.update({p.name: latest.get(p.name, (p.version, 0))[1] for p in group})
                    continue
                for projection in group:
                    at[projection.name] = end
                applied += len(rows) * len(group)
                done += (end - start) * len(group)
                if progress is not None:
                    progress(min(done, total), total)
        for projection in projections:
            if projection.name in fresh and at[projection.name] == 0:
                self._indexed(db, projection)  # an empty log: no commit to wait for
        return applied

    def _apply(self, group: Sequence[Projection], rows: Sequence[Row]) -> list[Batch]:
        """Give the batch's rows, wrapped once on demand, to every projection of the group."""
        events = StoredBatch(rows, self.mapper)
        batches = [Batch() for _ in group]
        for projection, batch in zip(group, batches, strict=True):
            projection.apply_batch(events, batch)
        return batches

    @classmethod
    def _commit(
        cls,
        db: sqlite3.Connection,
        work: Sequence[tuple[Projection, Batch]],
        started: int,
        position: int,
        indexed: Sequence[Projection] = (),
    ) -> bool:
        """Write the batches and the new position of each projection, all still at `started`.

        The `indexed` projections also get the indexes they were created without. Returns
        True, and writes nothing, when another catch-up moved any of them meanwhile.
        """
        db.execute("BEGIN IMMEDIATE")
        try:
            for projection, _ in work:
                row = db.execute(
                    f"SELECT position FROM {POSITIONS} WHERE name = ?",  # noqa: S608 - fixed table name
                    (projection.name,),
                ).fetchone()
                if (int(row[0]) if row is not None else 0) != started:
                    db.execute("ROLLBACK")
                    return True
            for projection, batch in work:
                for statement in batch.statements:
                    if statement.many:
                        db.executemany(statement.sql, statement.params)
                    else:
                        db.execute(statement.sql, tuple(statement.params))
                db.execute(
                    f"INSERT INTO {POSITIONS} (name, version, position) VALUES (?, ?, ?)"  # noqa: S608 - fixed table name
                    " ON CONFLICT(name) DO UPDATE SET version = excluded.version,"
                    " position = excluded.position",
                    (projection.name, projection.version, position),
                )
            for projection in indexed:
                cls._indexed(db, projection)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return False
