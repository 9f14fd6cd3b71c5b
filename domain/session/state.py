"""The state a Session decides with, and its snapshot; domain layer."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from domain.base import AggregateSnapshot, SnapshotState
from domain.ids import AttemptId, CallId, RunId, SessionId, SpillId
from domain.values.attempts import AttemptState
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalGrant
from domain.values.runs import RunState, SessionCloseReason
from domain.values.storage import StorageBinding, WorkingContext


class SessionFields(BaseModel):
    """The attributes of a Session, shared by its state view and its snapshot."""

    session_key: str
    kind: SessionKind
    audience: Audience
    parent_session_id: SessionId | None
    storage: StorageBinding | None
    writer: RunId | None
    runs: dict[RunId, RunState]
    attempts: dict[AttemptId, AttemptState]
    message_count: int
    working_context: WorkingContext
    approval_grants: tuple[ApprovalGrant, ...] = ()
    loaded_tools: frozenset[str] = frozenset()
    ended_attempts: int = 0
    """How many attempts ever ended; `attempts` holds the open ones and the latest ended."""
    spills: dict[CallId, SpillId] = {}
    """The latest spilled output of each call id."""
    client_name: str | None = None
    client_version: str | None = None
    agent_turn: int | None = None
    """The agent loop's turn in progress, if one is."""
    pending_calls: tuple[tuple[int, CallId], ...] = ()
    """Calls of the agent's latest reply without a result yet, by position."""
    prompt_digest: str | None = None
    """The digest of the stable prefix and tools the agent last recorded."""
    closed: SessionCloseReason | None = None
    """Why the session was closed, once it is."""


class SessionState(SessionFields):
    """Everything a Session decides with; replay and live state compare equal on it.

    The transcript itself is not part of it: the MessageAppended events are the durable
    transcript, read back by `Journal.transcript`, so snapshots stay small however long
    the conversation grows.
    """

    model_config = ConfigDict(frozen=True)

    session_id: SessionId


class SessionSnapshotState(SnapshotState, SessionFields):
    """The typed state a Session snapshot stores."""


class SessionSnapshot(AggregateSnapshot):
    """A Session at one version."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.snapshot"
    SPARSE_FIELDS: ClassVar[tuple[str, ...]] = (
        "state.agent_turn",
        "state.pending_calls",
        "state.prompt_digest",
    )

    state: SessionSnapshotState
