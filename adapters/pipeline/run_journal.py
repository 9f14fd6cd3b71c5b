"""One run's session as the pipeline's steps write and read it; adapter layer.

Every step that stores something (the authorization, the operator's answer, a changed
target, the receipt, a cancellation) does it through a shielded update: a cancellation
never interrupts a journal write halfway, so its outcome is always known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import anyio

from adapters.pipeline.context import RunScope
from adapters.pipeline.ports import SessionUpdates
from domain.ids import CallId, SpillId
from domain.session.aggregate import Session

T = TypeVar("T")


@dataclass(frozen=True)
class RunJournal:
    """The session of one run, through the dispatcher's writer."""

    writer: SessionUpdates
    run: RunScope

    async def write(self, command: Callable[[Session], T]) -> T:
        """A journal update that a cancellation cannot interrupt halfway."""
        with anyio.CancelScope(shield=True):
            result = await self.writer.update(self.run.session_id, command)
        return result  # noqa: RET504 - returned after the shield closes, as mypy needs

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
