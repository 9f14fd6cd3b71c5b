"""Ports the domain's services are written against; domain layer.

`Journal` stores and rebuilds aggregates, `EventLog` reads the stored events in the order
they were committed (the notification log), `Clock` tells the time, `Approver` reaches a
person who can answer an approval request, and `ModelProvider` asks a model. Adapters
implement them; callers name only these.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar
from uuid import UUID

from domain.agent.failover import Candidate
from domain.agent.replies import ModelReply, ModelRequest
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.devices.aggregate import DeviceRegistry
from domain.ids import SessionId
from domain.logged import LoggedEvent, StreamSpan
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.upstream.aggregate import UpstreamServer
from domain.values.conversation import ChatMessage

T = TypeVar("T")


@dataclass
class BatchOutcome:
    """What one command of a batch returned, or the exception it raised."""

    value: object = None
    error: BaseException | None = None
    retry: bool = False
    """Set when the command must run again on its own (a conflict, or a stale refusal)."""

    def settle(self, call: Callable[[], object]) -> None:
        """Run `call`, keeping its value or its exception."""
        try:
            self.value = call()
        except Exception as error:  # noqa: BLE001 - handed back to the caller of that command
            self.error = error


class Journal(Protocol):
    """The durable home of every aggregate; synchronous, called from worker threads."""

    def open_session(self, opening: SessionOpening) -> Session:
        """Open and store a new session stream; a reused id is refused."""
        ...

    def session(self, session_id: SessionId, *, version: int | None = None) -> Session:
        """The session rebuilt from its stream, at `version` if given."""
        ...

    def update_session(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """Run `command` on the latest session and store what it triggered, atomically."""
        ...

    def update_sessions(
        self, requests: Sequence[tuple[SessionId, Callable[[Session], object]]]
    ) -> list[BatchOutcome]:
        """Run one command on each of several distinct sessions and commit them together.

        Each command's value or exception comes back in its outcome, in order; one that
        raises stores nothing, and the others still commit.
        """
        ...

    def read_session(self, session_id: SessionId, view: Callable[[Session], T]) -> T:
        """`view` of the session as this process last saved it, else as stored.

        `view` must not change the session.
        """
        ...

    def is_kept(self, stream_id: UUID) -> bool:
        """Whether an update of this stream starts from a copy in memory (no read needed)."""
        ...

    def stream_version(self, stream_id: UUID) -> int:
        """How many events the stream holds (0 if none)."""
        ...

    def transcript(self, session_id: SessionId, *, upto: int | None = None) -> list[ChatMessage]:
        """The session's messages in order, from its first `upto` events if given."""
        ...

    def devices(self) -> DeviceRegistry:
        """The home's device registry."""
        ...

    def update_devices(self, command: Callable[[DeviceRegistry], T]) -> T:
        """Run `command` on the latest registry and store what it triggered, atomically."""
        ...

    def upstream_server(self, name: str) -> UpstreamServer | None:
        """What the journal knows of the upstream server called `name`, None if nothing."""
        ...

    def update_upstream_server(self, name: str, command: Callable[[UpstreamServer], T]) -> T:
        """Run `command` on the latest stream of server `name` and store its events atomically."""
        ...

    def close(self) -> None:
        """Release the store."""
        ...


class EventLog(Protocol):
    """The stored events read in commit order, and stream by stream; read-only."""

    def head(self) -> int:
        """The position of the last event of the log; 0 when it holds none."""
        ...

    def count(self) -> int:
        """How many events the log holds."""
        ...

    def batch(self, after: int, limit: int, *, upto: int | None = None) -> list[LoggedEvent]:
        """At most `limit` events after position `after` (up to `upto`), in log order."""
        ...

    def stream(
        self,
        stream_id: str,
        *,
        topic: str | None = None,
        after: int = 0,
        upto: int | None = None,
        limit: int | None = None,
    ) -> list[LoggedEvent]:
        """The stream's events in order: of `topic`, after `after`, up to `upto`, `limit` first."""
        ...

    def stream_heads(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """How many events each of the streams holds; a stream without events is left out."""
        ...

    def opened(self, topic: str) -> list[StreamSpan]:
        """Every stream whose first event has `topic`, with its last event, in log order."""
        ...

    def opened_with_prefix(self, topic: str, prefix: str, limit: int) -> list[str]:
        """At most `limit` ids of streams opened by `topic` whose id starts with `prefix`."""
        ...


class Clock(Protocol):
    """The time as the product reads it for the facts it records and the waits it bounds."""

    def now(self) -> datetime:
        """The current wall-clock time, timezone-aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for measuring waits."""
        ...


class Approver(Protocol):
    """Reaches a person who can answer approval requests (the daemon, the CLI, an MCP client)."""

    def available(self) -> bool:
        """Whether anyone can be asked right now; if not, calls that need consent are denied."""
        ...

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Ask and wait for the answer; None when no one could be asked after all."""
        ...

    async def report(self, request: ApprovalRequest) -> None:
        """Tell an operator about a call that runs without waiting (report mode)."""
        ...


class ModelProvider(Protocol):
    """A model behind one wire format, asked one whole request at a time.

    `reply` returns the whole reply once it ended (streamed text goes to `on_text` as it
    comes), or raises `ModelFailure` classified for failover. Cancelling the call stops the
    stream; a reply that did not end is never returned.
    """

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The model's reply to `request`, asked as `candidate`."""
        ...
