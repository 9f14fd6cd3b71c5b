"""Ports the domain's services are written against; domain layer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.devices.aggregate import DeviceRegistry
from domain.ids import SessionId
from domain.session.aggregate import Session
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage

T = TypeVar("T")


class Journal(Protocol):
    """The durable home of every aggregate; synchronous, called from worker threads."""

    def open_session(  # noqa: PLR0913 - one argument per fact of the opening event
        self,
        session_id: SessionId,
        session_key: str,
        kind: SessionKind,
        audience: Audience,
        parent_session_id: SessionId | None = None,
        *,
        client_name: str | None = None,
        client_version: str | None = None,
    ) -> Session:
        """Open and store a new session stream."""
        ...

    def session(self, session_id: SessionId, *, version: int | None = None) -> Session:
        """The session rebuilt from its stream, at `version` if given."""
        ...

    def update_session(self, session_id: SessionId, command: Callable[[Session], T]) -> T:
        """Run `command` on the latest session and store what it triggered, atomically."""
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

    def close(self) -> None:
        """Release the store."""
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
