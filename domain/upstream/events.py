"""Facts recorded in an UpstreamServer stream: its states and its catalogs; domain layer."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from domain.base import Aggregate
from domain.text import Detail, ShortText
from domain.upstream.catalog import ToolDigest, UpstreamTool
from domain.upstream.states import FailureClass, ServerState


class UpstreamServerEvent(Aggregate.Event):
    """Base of every event in an UpstreamServer stream except the first."""


class UpstreamServerCreated(Aggregate.Created):
    """A configured upstream server was first seen by this home."""

    TOPIC: ClassVar[str] = "ledgerclaw.upstream.created"
    KEY_FIELDS = ("name",)

    name: ShortText


class UpstreamStateChanged(UpstreamServerEvent):
    """The server's owner moved to another state, or failed again in the same one."""

    TOPIC: ClassVar[str] = "ledgerclaw.upstream.state_changed"
    KEY_FIELDS = ("state", "reason")

    state: ServerState
    reason: Detail
    failure: FailureClass | None = None
    """The class of the failure that caused the change, if one did."""
    next_retry_at: datetime | None = None
    """When the owner tries again by itself; None when it waits for a reload or an answer."""
    failures: int = 0
    """Failed attempts in a row, the one that caused this change included."""
    changed_at: datetime


class UpstreamCatalogChanged(UpstreamServerEvent):
    """The server listed tools that differ from its last good catalog (or its first)."""

    TOPIC: ClassVar[str] = "ledgerclaw.upstream.catalog_changed"
    KEY_FIELDS = ("added", "removed", "changed")

    tools: tuple[UpstreamTool, ...]
    """The whole catalog as listed (after the server's tool filter)."""
    digests: tuple[ToolDigest, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    listed_at: datetime


UPSTREAM_EVENTS: tuple[type[Aggregate.Event], ...] = (
    UpstreamServerCreated,
    UpstreamStateChanged,
    UpstreamCatalogChanged,
)
