"""The UpstreamServer aggregate: one stream per configured server name; domain layer."""

from __future__ import annotations

from datetime import datetime
from functools import singledispatchmethod
from typing import ClassVar
from uuid import NAMESPACE_URL, UUID, uuid5

from domain.base import Aggregate, AggregateSnapshot, DomainEvent, SnapshotState
from domain.upstream.catalog import CatalogChange, ToolDigest, UpstreamTool, compare, digests
from domain.upstream.events import (
    UpstreamCatalogChanged,
    UpstreamServerCreated,
    UpstreamStateChanged,
)
from domain.upstream.states import FailureClass, ServerState

REASON_LIMIT = 2000


def server_stream(name: str) -> UUID:
    """The fixed stream id of the server called `name`."""
    return uuid5(NAMESPACE_URL, f"ledgerclaw:upstream:{name}")


def _reason(text: str) -> str:
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 1] + "…"


class UpstreamServerSnapshotState(SnapshotState):
    """The typed state an UpstreamServer snapshot stores."""

    name: str
    state: ServerState
    reason: str
    failure: FailureClass | None
    next_retry_at: datetime | None
    failures: int
    changed_at: datetime | None
    tools: tuple[UpstreamTool, ...]
    digests: tuple[ToolDigest, ...]
    listed_at: datetime | None
    last_error: str
    connected_at: datetime | None


class UpstreamServerSnapshot(AggregateSnapshot):
    """An UpstreamServer at one version."""

    TOPIC: ClassVar[str] = "ledgerclaw.upstream.snapshot"

    state: UpstreamServerSnapshotState


class UpstreamServer(Aggregate):
    """What the journal knows of one upstream server: its state and its last good catalog."""

    JOURNAL_NAME = "ledgerclaw.upstream"
    Snapshot = UpstreamServerSnapshot

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = ServerState.CONNECTING
        self.reason = "not connected yet"
        self.failure: FailureClass | None = None
        self.next_retry_at: datetime | None = None
        self.failures = 0
        self.changed_at: datetime | None = None
        self.tools: tuple[UpstreamTool, ...] = ()
        self.digests: tuple[ToolDigest, ...] = ()
        self.listed_at: datetime | None = None
        self.last_error = ""
        self.connected_at: datetime | None = None

    @classmethod
    def create(cls, name: str) -> UpstreamServer:
        """The stream of the server called `name`; its id is fixed by the name."""
        return cls._create(UpstreamServerCreated, id=server_stream(name), name=name)

    def change_state(  # noqa: PLR0913 - the facts of one change
        self,
        state: ServerState,
        reason: str,
        at: datetime,
        *,
        failure: FailureClass | None = None,
        next_retry_at: datetime | None = None,
        failures: int = 0,
    ) -> bool:
        """Record a state change; nothing when state, reason and next retry are as they are."""
        reason = _reason(reason)
        if (state, reason, next_retry_at, failures) == (
            self.state,
            self.reason,
            self.next_retry_at,
            self.failures,
        ) and self.changed_at is not None:
            return False
        self.trigger_event(
            UpstreamStateChanged,
            state=state,
            reason=reason,
            failure=failure,
            next_retry_at=next_retry_at,
            failures=failures,
            changed_at=at,
        )
        return True

    def record_catalog(self, tools: tuple[UpstreamTool, ...], at: datetime) -> CatalogChange:
        """Record a listing; an event only for the first one or one that differs."""
        listed = digests(tools)
        change = compare(self.digests, listed)
        if change.empty and self.listed_at is not None:
            return change
        self.trigger_event(
            UpstreamCatalogChanged,
            tools=tuple(sorted(tools, key=lambda tool: tool.name)),
            digests=listed,
            added=change.added,
            removed=change.removed,
            changed=change.changed,
            listed_at=at,
        )
        return change

    def tool(self, name: str) -> UpstreamTool | None:
        """The tool of the last good catalog called `name` (the upstream's own name)."""
        return next((tool for tool in self.tools if tool.name == name), None)

    @singledispatchmethod
    def apply_event(self, event: DomainEvent) -> None:
        """Change state for `event`; every state change of the server happens here."""
        msg = f"UpstreamServer cannot apply {type(event).__name__}"
        raise TypeError(msg)

    @apply_event.register
    def _(self, event: UpstreamStateChanged) -> None:
        self.state, self.reason, self.failure = event.state, event.reason, event.failure
        self.next_retry_at, self.failures = event.next_retry_at, event.failures
        self.changed_at = event.changed_at
        if event.failure is not None:
            self.last_error = event.reason
        if event.state is ServerState.CONNECTED:
            self.connected_at = event.changed_at

    @apply_event.register
    def _(self, event: UpstreamCatalogChanged) -> None:
        self.tools, self.digests, self.listed_at = event.tools, event.digests, event.listed_at
