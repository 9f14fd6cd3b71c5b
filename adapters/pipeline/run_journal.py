"""One run's session as the pipeline's steps write and read it; adapter layer.

Every step that stores something (the authorization, the operator's answer, a changed
target, the receipt, a cancellation) does it through a shielded update: a cancellation
never interrupts a journal write halfway, so its outcome is always known.

A call decided on a read (adapters/pipeline/held.py) holds its decision's writes here: the
call's next write applies them first, in the same transaction, and they are dropped only
once that transaction committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio

from adapters.pipeline.context import RunScope
from adapters.pipeline.held import Write
from adapters.pipeline.ports import SessionUpdates
from domain.ids import CallId, SpillId
from domain.session.aggregate import Session

T = TypeVar("T")


@dataclass
class RunJournal:
    """The session of one run, through the dispatcher's writer, for one call."""

    writer: SessionUpdates
    run: RunScope
    held: tuple[Write, ...] = field(default=())
    """Writes decided on a read and not stored yet; the next write stores them first."""

    async def write(self, command: Callable[[Session], T]) -> T:
        """A journal update that a cancellation cannot interrupt halfway."""
        held = self.held
        if held:
            command = _after(held, command)
        with anyio.CancelScope(shield=True):
            result = await self.writer.update(self.run.session_id, command)
        self.held = ()
        return result

    async def write_prepared(self, prepare: Callable[[], Callable[[Session], T]]) -> T:
        """As `write`, the command made by `prepare` in a worker thread, outside any lock."""
        with anyio.CancelScope(shield=True):
            result = await self.writer.update_prepared(self.run.session_id, prepare)
        return result  # noqa: RET504 - returned after the shield closes, as mypy needs

    def read(self, view: Callable[[Session], T]) -> T:
        """`view` of the session as last saved; blocking, for worker threads."""
        return self.writer.journal.read_session(self.run.session_id, view)

    def spill_of(self, call_id: CallId) -> SpillId | None:
        """The spill a call's receipt named, if any; blocking, for worker threads.

        Read rarely, so the session is loaded afresh rather than kept per call.
        """
        return self.writer.journal.session(self.run.session_id).spills.get(call_id)


def _after(held: tuple[Write, ...], command: Callable[[Session], T]) -> Callable[[Session], T]:
    """`command`, preceded by the held writes, as one command."""

    def both(session: Session) -> T:
        for write in held:
            write(session)
        return command(session)

    return both
