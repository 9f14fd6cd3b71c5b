"""Async access to the journal with group commit across sessions; adapter layer.

Callers await `update`. Requests that arrive while a commit is in flight wait for it and
are then committed together, one per session, in one transaction: under load many sessions
share one flush, and a lone caller pays for no batching at all. Every awaited update has
been committed (or has failed) when it returns, so nothing acknowledged is lost.

A batch whose sessions are all kept in memory commits on the event loop itself: it is an
insert and a flush, and a round trip to a worker thread costs more than that. A batch that
must load a session from disk runs in a worker thread, so a long replay never stalls the
loop.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar, cast

import anyio
import anyio.to_thread

from domain.ids import SessionId
from domain.ports import BatchOutcome, Journal
from domain.session.aggregate import Session

T = TypeVar("T")
MAX_BATCH = 64
"""Sessions per transaction; more waiters simply form the next batch."""


@dataclass
class _Request:
    session_id: SessionId
    command: Callable[[Session], object] | None
    prepare: Callable[[], Callable[[Session], object]] | None = None
    """Blocking work that yields the command: run in the commit's thread, before any lock."""
    outcome: BatchOutcome | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


class SessionWriter:
    """Session updates from async code, committed in groups."""

    def __init__(self, journal: Journal, *, batching: bool = True, inline: bool = True) -> None:
        self.journal = journal
        self.batching = batching
        self.inline = inline
        self._queue: list[_Request] = []
        self._lock = anyio.Lock()
        self.batches = 0
        """How many transactions were committed; with `requests`, shows the batching."""
        self.requests = 0

    async def update(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """Run `command` on the latest session and commit what it triggered."""
        request = _Request(session_id, cast("Callable[[Session], object]", command))
        return cast("T", await self._submit(request))

    async def update_prepared(
        self, session_id: SessionId, prepare: Callable[[], Callable[[Session], T]]
    ) -> T:
        """Run `prepare` in a worker thread, then the command it returns, and commit.

        `prepare` does the blocking reads a command decides from (the filesystem, say)
        outside the journal's stream locks and off the event loop. A batch's preparations
        and its commit share one worker-thread trip, so the batch still groups every waiting
        session and the event loop does neither the reads nor the commit's write and sync.
        """
        prepared = cast("Callable[[], Callable[[Session], object]]", prepare)
        return cast("T", await self._submit(_Request(session_id, None, prepared)))

    async def _submit(self, request: _Request) -> object:
        self._queue.append(request)
        try:
            while request.outcome is None:
                async with self._lock:
                    if request.outcome is None:
                        await self._commit(self._take(request))
        except BaseException:
            if request in self._queue:
                # Cancelled before any leader took it: it is never committed.
                self._queue.remove(request)
            elif request.outcome is None:
                with anyio.CancelScope(shield=True):
                    await request.done.wait()
            raise
        if request.outcome.error is not None:
            raise request.outcome.error
        return request.outcome.value

    async def session(self, session_id: SessionId) -> Session:
        """The latest session, read in a worker thread."""
        return await anyio.to_thread.run_sync(self.journal.session, session_id)

    def _take(self, own: _Request) -> list[_Request]:
        """The next batch: own request first, then queued ones, at most one per session."""
        if not self.batching:
            self._queue.remove(own)
            return [own]
        batch: list[_Request] = []
        seen: set[SessionId] = set()
        for request in [own, *(r for r in self._queue if r is not own)]:
            if request.session_id in seen or len(batch) >= MAX_BATCH:
                continue
            seen.add(request.session_id)
            batch.append(request)
        for request in batch:
            self._queue.remove(request)
        return batch

    async def _commit(self, batch: list[_Request]) -> None:
        try:
            if any(r.prepare is not None for r in batch):
                # One worker-thread trip prepares every command of the batch and commits
                # them, so neither the gathering nor the commit's write and sync holds up
                # the event loop. Shielded: once started, its outcome must reach every waiter.
                with anyio.CancelScope(shield=True):
                    outcomes = await anyio.to_thread.run_sync(self._prepare_and_update, batch)
            else:
                outcomes = await self._update(batch)
        except Exception as error:  # noqa: BLE001 - every waiter gets the failure, none hangs
            outcomes = [BatchOutcome(error=error) for _ in batch]
        self.batches += 1
        self.requests += len(batch)
        for request, outcome in zip(batch, outcomes, strict=True):
            request.outcome = outcome
            request.done.set()

    def _prepare_and_update(self, batch: list[_Request]) -> list[BatchOutcome]:
        """Blocking: make the batch's prepared commands, then commit the ones that were made."""
        failed = _prepare(batch)
        ready = [request for index, request in enumerate(batch) if index not in failed]
        committed = iter(self.journal.update_sessions(_commands(ready)) if ready else [])
        return [failed.get(index) or next(committed) for index in range(len(batch))]

    async def _update(self, batch: list[_Request]) -> list[BatchOutcome]:
        if self.inline and all(self.journal.is_kept(r.session_id.as_uuid()) for r in batch):
            # Every session is in memory: the commit is a short insert and flush,
            # cheaper here than a hop to a worker thread and back.
            return self.journal.update_sessions(_commands(batch))
        with anyio.CancelScope(shield=True):
            outcomes = await anyio.to_thread.run_sync(
                self.journal.update_sessions, _commands(batch)
            )
        return outcomes  # noqa: RET504 - returned after the shield closes, as mypy needs


def _prepare(batch: list[_Request]) -> dict[int, BatchOutcome]:
    """Make the batch's prepared commands; a failed preparation fails its request alone."""
    failed: dict[int, BatchOutcome] = {}
    for index, request in enumerate(batch):
        if request.prepare is not None:
            try:
                request.command = request.prepare()
            except Exception as error:  # noqa: BLE001 - its waiter gets the failure
                failed[index] = BatchOutcome(error=error)
    return failed


def _commands(batch: list[_Request]) -> list[tuple[SessionId, Callable[[Session], object]]]:
    commands = []
    for request in batch:
        assert request.command is not None  # noqa: S101 - prepared before it is committed
        commands.append((request.session_id, request.command))
    return commands
