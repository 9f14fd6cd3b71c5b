"""The journal facade that session actors and the CLI call; adapter layer.

Every update takes the latest aggregate, runs the command, and saves its events in one
transaction. If another process appended in between, the optimistic-concurrency check
fails, nothing is written, and the command runs again on freshly loaded state, where a stale
writer meets its typed error instead of losing an event.

The last saved copy of each recently used stream is kept in memory and used as it is, so a
command neither decodes nor reads the stream again. If another process appended meanwhile,
the save conflicts and the command runs again on a fresh load; a refusal decided on a kept
copy is decided again on a fresh load before it is reported. A copy is kept only after a
successful save. Snapshots are taken from the in-memory copy, once per save that crosses an
interval. `update_sessions` commits commands on several sessions in one transaction.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError, OperationalError

from adapters.clock import SYSTEM_CLOCK
from adapters.errors import (
    JournalBusyError,
    JournalConflictError,
    JournalError,
    SessionExistsError,
    UnknownSessionError,
)
from adapters.journal.application import SNAPSHOT_INTERVAL, SYNCHRONOUS, JournalApplication
from adapters.journal.failures import refuse_if_damaged, translated
from adapters.journal.identity import prepare_journal_file
from adapters.settings.journal import JournalSettings
from domain.base import Aggregate
from domain.devices.aggregate import REGISTRY_ID, DeviceRegistry
from domain.errors import DomainError
from domain.ids import SessionId
from domain.ports import BatchOutcome, Clock
from domain.session.aggregate import Session
from domain.session.events import MessageAppended
from domain.session.opening import SessionOpening
from domain.upstream.aggregate import UpstreamServer, server_stream
from domain.values.conversation import ChatMessage

T = TypeVar("T")
A = TypeVar("A", bound=Aggregate)

CONFLICT_TIMEOUT_SECONDS = 5.0
"""How long a command keeps retrying on a stream that other processes keep changing."""
MAX_BACKOFF_SECONDS = 0.02
WORKING_COPIES = 128
"""How many streams keep their last saved aggregate in memory."""

log = logging.getLogger(__name__)


class EventJournal:
    """Sessions and devices stored through one eventsourcing application."""

    def __init__(
        self,
        app: JournalApplication,
        conflict_timeout: float = CONFLICT_TIMEOUT_SECONDS,
        *,
        path: Path | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.app = app
        self.conflict_timeout = conflict_timeout
        self.clock = clock
        """Bounds the retries on a stream that keeps changing (its monotonic seconds)."""
        self.path = path or Path(str(app.env.get("SQLITE_DBNAME", "journal")))
        self._locks: dict[UUID, threading.Lock] = {}
        self._locks_guard = threading.Lock()
        self._working: OrderedDict[UUID, Aggregate] = OrderedDict()

    # -- sessions --------------------------------------------------------------------------

    def open_session(self, opening: SessionOpening) -> Session:
        """Open and store a new session stream; a reused id is a SessionExistsError."""
        session = Session.open(opening)
        try:
            self.save(session)
        except IntegrityError:
            msg = f"session {opening.session_id} already exists"
            raise SessionExistsError(msg) from None
        return session

    def session(self, session_id: SessionId, *, version: int | None = None) -> Session:
        """The session rebuilt from its latest snapshot and the events after it."""
        return self._get(Session, session_id.as_uuid(), version, str(session_id))

    def update_session(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """Run `command` on the latest session and store its events atomically."""
        return self._update(session_id.as_uuid(), lambda: self.session(session_id), command)

    def update_sessions(
        self, requests: Sequence[tuple[SessionId, Callable[[Session], object]]]
    ) -> list[BatchOutcome]:
        """Run one command on each of several distinct sessions and commit them together.

        This is group commit: one transaction (one flush) for many sessions. A command that
        raises gets its exception back and stores nothing; the others still commit. If the
        joint save meets a conflict, each command runs again on its own through
        `update_session`, so a batch is never less safe than single updates.
        """
        streams = [session_id.as_uuid() for session_id, _ in requests]
        if len(set(streams)) != len(streams):
            msg = "a batch holds at most one command per session"
            raise ValueError(msg)
        outcomes: list[BatchOutcome] = [BatchOutcome() for _ in requests]
        locks = [self._lock_for(stream) for stream in sorted(streams)]
        for lock in locks:
            lock.acquire()
        try:
            done = self._run_batch(requests, outcomes)
        finally:
            for lock in reversed(locks):
                lock.release()
        if not done:
            for (session_id, command), outcome in zip(requests, outcomes, strict=True):
                if outcome.retry:
                    outcome.retry = False
                    outcome.settle(partial(self.update_session, session_id, command))
        return outcomes

    def _run_batch(
        self,
        requests: Sequence[tuple[SessionId, Callable[[Session], object]]],
        outcomes: list[BatchOutcome],
    ) -> bool:
        ready: list[tuple[UUID, Session]] = []
        for (session_id, command), outcome in zip(requests, outcomes, strict=True):
            stream = session_id.as_uuid()
            try:
                session, fresh = self._checkout(stream, partial(self.session, session_id))
            except Exception as error:  # noqa: BLE001 - handed back to the caller of that command
                outcome.error = error
                continue
            outcome.settle(partial(command, session))
            if isinstance(outcome.error, DomainError) and not fresh:
                # Decided on a kept copy that may be stale: decided again on its own later.
                outcome.error, outcome.retry = None, True
            elif outcome.error is None:
                ready.append((stream, session))
        try:
            self.save(*(session for _, session in ready))
        except IntegrityError:
            for outcome in outcomes:
                if outcome.error is None:
                    outcome.value, outcome.retry = None, True
            return False
        for stream, session in ready:
            self._checkin(stream, session)
        return not any(outcome.retry for outcome in outcomes)

    def transcript(self, session_id: SessionId, *, upto: int | None = None) -> list[ChatMessage]:
        """The session's messages in order, from its first `upto` events if given."""
        with self._storage(f"reading {session_id}"):
            events = list(self.app.events.get(session_id.as_uuid(), lte=upto))
        return [e.message for e in events if isinstance(e, MessageAppended)]

    # -- devices ---------------------------------------------------------------------------

    def devices(self) -> DeviceRegistry:
        """The device registry, empty if no device was ever paired."""
        try:
            return self._get(DeviceRegistry, REGISTRY_ID, None, "device registry")
        except UnknownSessionError:
            return DeviceRegistry.create()

    def update_devices(self, command: Callable[[DeviceRegistry], T]) -> T:
        """Run `command` on the latest registry and store its events atomically."""
        return self._update(REGISTRY_ID, self.devices, command)

    # -- upstream servers ------------------------------------------------------------------

    def upstream_server(self, name: str) -> UpstreamServer | None:
        """What the journal knows of the upstream server called `name`, None if nothing."""
        try:
            return self._get(UpstreamServer, server_stream(name), None, f"upstream server {name}")
        except UnknownSessionError:
            return None

    def update_upstream_server(self, name: str, command: Callable[[UpstreamServer], T]) -> T:
        """Run `command` on the latest stream of server `name` and store its events atomically."""

        def load() -> UpstreamServer:
            return self.upstream_server(name) or UpstreamServer.create(name)

        return self._update(server_stream(name), load, command)

    # -- plumbing --------------------------------------------------------------------------

    def save(self, *aggregates: Aggregate) -> None:
        """Store the pending events of `aggregates` in one transaction, then snapshot."""
        refuse_if_damaged(self.path)
        first_versions = [a.version - len(a.pending_events) for a in aggregates]
        try:
            # What Application.save does for us, without its per-object protocol checks:
            # collect the pending events, map them and insert them in one transaction.
            # Snapshots are taken below, and nothing here subscribes to in-process
            # notifications, so the event store's recordings are not built either.
            with self._storage("saving events"):
                to_stored = self.app.mapper.to_stored_event
                stored = [to_stored(e) for a in aggregates for e in a.collect_events()]
                self.app.recorder.insert_events(stored)
        except OperationalError as error:
            msg = f"journal is busy or unwritable: {error}"
            raise JournalBusyError(msg) from None
        for aggregate, first in zip(aggregates, first_versions, strict=True):
            if aggregate.version // SNAPSHOT_INTERVAL > first // SNAPSHOT_INTERVAL:
                self._snapshot(aggregate)

    def _snapshot(self, aggregate: Aggregate) -> None:
        # The events are committed; a snapshot is only a shortcut, so failing to store one
        # must not turn a successful command into an error.
        try:
            with self._storage("saving a snapshot"):
                self.app.snapshots.put([type(aggregate).Snapshot.take(aggregate)])  # type: ignore[union-attr]  # snapshots are always enabled
        except (OperationalError, IntegrityError, JournalError) as error:
            log.warning("snapshot of %s at v%s skipped: %s", aggregate.id, aggregate.version, error)

    def _storage(self, doing: str) -> AbstractContextManager[None]:
        """Typed errors for a damaged or held file; a damaged one takes no more writes."""
        return translated(self.path, doing)

    def stream_version(self, stream_id: UUID) -> int:
        """How many events the stream holds (0 if none)."""
        with self._storage("reading a stream"):
            events = self.app.recorder.select_events(stream_id, desc=True, limit=1)
        return events[0].originator_version if events else 0

    def close(self) -> None:
        """Release the database connections."""
        self.app.close()

    def _get(self, kind: type[A], stream_id: UUID, version: int | None, label: str) -> A:
        try:
            with self._storage(f"reading {label}"):
                aggregate: object = self.app.repository.get(stream_id, version=version)
        except AggregateNotFoundError:
            msg = f"no {label} in the journal"
            raise UnknownSessionError(msg) from None
        if not isinstance(aggregate, kind):
            msg = f"{label} names a {type(aggregate).__name__}, not a {kind.__name__}"
            raise UnknownSessionError(msg)
        return aggregate

    def _update(self, stream_id: UUID, load: Callable[[], A], command: Callable[[A], T]) -> T:
        with self._lock_for(stream_id):
            deadline = self.clock.monotonic() + self.conflict_timeout
            tries = 0
            aggregate, fresh = self._checkout(stream_id, load)
            while True:
                try:
                    result = command(aggregate)
                except DomainError:
                    if fresh:
                        raise
                    # A refusal decided on a kept copy may be stale: decide again on the
                    # stream as stored before reporting it.
                    aggregate, fresh = load(), True
                    continue
                try:
                    self.save(aggregate)
                except IntegrityError:
                    tries += 1
                    if self.clock.monotonic() >= deadline:
                        break
                    # A random, growing pause breaks the lock-step in which one process
                    # wins every race against a steady writer in another process.
                    pause = min(0.001 * 2**tries, MAX_BACKOFF_SECONDS)
                    time.sleep(random.uniform(0, pause))  # noqa: S311 - jitter, not secrecy
                    aggregate, fresh = load(), True
                    continue
                self._checkin(stream_id, aggregate)
                return result
        msg = f"stream {stream_id.hex} kept changing; gave up after {tries} tries"
        raise JournalConflictError(msg)

    def _checkout(self, stream_id: UUID, load: Callable[[], A]) -> tuple[A, bool]:
        """The kept copy (maybe stale: False) else a fresh load (True); never shared.

        A kept copy is used as it is. If another process appended meanwhile, the save
        conflicts and the command runs again on a fresh load; a refusal on a kept copy is
        checked against a fresh load too. So the common case costs no read at all.
        """
        with self._locks_guard:
            kept = self._working.pop(stream_id, None)
        if kept is None:
            return load(), True
        return kept, False  # type: ignore[return-value]  # a stream always holds one aggregate type

    def read_session(self, session_id: SessionId, view: Callable[[Session], T]) -> T:
        """`view` of the session as this process last saved it, else as stored; no replay.

        For a session only this process writes (a hosted session, held by its claim) the kept
        copy is the stored state, so this costs no read at all. `view` must not change it.
        """
        stream_id = session_id.as_uuid()
        with self._lock_for(stream_id):
            aggregate, _ = self._checkout(stream_id, lambda: self.session(session_id))
            try:
                return view(aggregate)
            finally:
                self._checkin(stream_id, aggregate)

    def is_kept(self, stream_id: UUID) -> bool:
        """Whether an update of this stream starts from a copy in memory (no read needed)."""
        with self._locks_guard:
            return stream_id in self._working

    def _checkin(self, stream_id: UUID, aggregate: Aggregate) -> None:
        with self._locks_guard:
            self._working[stream_id] = aggregate
            while len(self._working) > WORKING_COPIES:
                evicted, _ = self._working.popitem(last=False)
                # Its lock goes too, unless held: a daemon that hosts sessions for months
                # must not keep one lock per session it ever served. A lock fetched but not
                # yet taken can only cost a save conflict, which is retried on a fresh load.
                lock = self._locks.get(evicted)
                if lock is not None and not lock.locked():
                    del self._locks[evicted]

    def _lock_for(self, stream_id: UUID) -> threading.Lock:
        with self._locks_guard:
            return self._locks.setdefault(stream_id, threading.Lock())


class SqliteJournal(EventJournal):
    """The journal in one SQLite file (WAL), checked and stamped before first use."""

    def __init__(self, path: Path, settings: JournalSettings | None = None) -> None:
        settings = settings or JournalSettings()
        prepare_journal_file(path)
        with translated(path, "creating its tables"):
            app = JournalApplication(
                env={
                    "SQLITE_DBNAME": str(path),
                    "SQLITE_LOCK_TIMEOUT": str(settings.busy_timeout_seconds),
                    SYNCHRONOUS: settings.durability.value.upper(),
                }
            )
        super().__init__(app, conflict_timeout=settings.busy_timeout_seconds, path=path)
