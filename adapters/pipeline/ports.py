"""What the pipeline needs from the journal's writer, as ports; adapter layer.

The dispatcher updates sessions through a writer (`adapters/journal/writer.py` groups the
updates of many sessions into one commit) and reads a session directly from the journal
the writer holds, in worker threads. These protocols name exactly those calls, so the
dispatcher depends on them and not on the writer's class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar
from uuid import UUID

from domain.ids import SessionId
from domain.session.aggregate import Session

T = TypeVar("T")


class SessionReads(Protocol):
    """Blocking reads of one session, for worker threads."""

    def session(self, session_id: SessionId) -> Session:
        """The session rebuilt from its stream."""
        ...

    def read_session(self, session_id: SessionId, view: Callable[[Session], T]) -> T:
        """`view` of the session as last saved; `view` must not change it."""
        ...

    def is_kept(self, stream_id: UUID) -> bool:
        """Whether the stream's last saved state is in memory (a read costs no replay)."""
        ...


class SessionUpdates(Protocol):
    """Session updates from async code, and the journal they are stored in."""

    @property
    def journal(self) -> SessionReads:
        """The journal the updates are stored in, for blocking reads."""
        ...

    async def update(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """Run `command` on the latest session and commit what it triggered."""
        ...

    async def update_prepared(
        self, session_id: SessionId, prepare: Callable[[], Callable[[Session], T]]
    ) -> T:
        """Run `prepare` off the event loop and outside any lock, then its command; commit."""
        ...
