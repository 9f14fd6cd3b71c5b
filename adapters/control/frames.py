"""The gateway protocol's frames, as pydantic models whose JSON Schema docs/gateway.md shows.

Four frames travel on the daemon's control WebSocket: a request (`req`) and its response
(`res`), an event (`event`, numbered per connection by `seq`, with the journal position it
was sent at as `stateVersion`), and a cancel of a request in flight (`cancel`). The server
speaks first with `connect.challenge`; the client's first request is `connect`. Adapter
layer.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

PROTOCOL_VERSION = 1
"""The one version this daemon speaks; `connect` names the range a client speaks."""

Name = Annotated[str, Field(min_length=1, max_length=128)]


class Scope(StrEnum):
    """What a connection may do; each method names the scope it needs."""

    READ = "operator.read"
    """Read status, sessions, history and tools."""
    WRITE = "operator.write"
    """Create and close sessions, send, steer and abort, issue pairing codes."""
    APPROVALS = "operator.approvals"
    """List and resolve approvals."""


class _Frame(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RequestFrame(_Frame):
    """A client's request; `id` pairs it with its response."""

    type: Literal["req"] = "req"
    id: Name
    method: Name
    params: dict[str, JsonValue] = Field(default_factory=dict)


class ErrorBody(_Frame):
    """Why a request failed: a stable code, words, and whether trying again can help."""

    code: Name
    message: str
    retryable: bool = False
    retry_after_ms: int | None = Field(default=None, ge=0)


class ResponseFrame(_Frame):
    """The answer to one request: a payload, or an error."""

    type: Literal["res"] = "res"
    id: Name | None
    """The request's id; None when the frame was too broken to carry one."""
    ok: bool
    payload: dict[str, JsonValue] | None = None
    error: ErrorBody | None = None

    @model_validator(mode="after")
    def _one_of(self) -> ResponseFrame:
        if self.ok != (self.error is None):
            msg = "a response is ok with no error, or not ok with one"
            raise ValueError(msg)
        return self


class EventFrame(_Frame):
    """Something that happened, pushed to a connection."""

    type: Literal["event"] = "event"
    event: Name
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    seq: int = Field(ge=0)
    """This connection's event count: a client that sees a gap missed an event."""
    stateVersion: int = Field(ge=0)  # noqa: N815 - the wire's own name
    """The journal position the daemon was at when it sent the event."""


class CancelFrame(_Frame):
    """Give up on a request in flight; its response says `cancelled`."""

    type: Literal["cancel"] = "cancel"
    id: Name


class Challenge(_Frame):
    """The payload of `connect.challenge`: what a local-control proof must sign."""

    nonce: str = Field(pattern=r"^[0-9a-f]{64}$")
    ts: int = Field(ge=0)
    """The daemon's time, in milliseconds since the epoch."""


class ClientInfo(_Frame):
    """Who connects, as the client says (self-declared: not an identity)."""

    name: Name
    version: str = Field(default="", max_length=64)
    platform: str = Field(default="", max_length=64)


class ConnectParams(_Frame):
    """`connect`: the protocol range, who connects, what it asks for and how it proves it."""

    min_protocol: int = Field(default=PROTOCOL_VERSION, ge=1)
    max_protocol: int = Field(default=PROTOCOL_VERSION, ge=1)
    client: ClientInfo | None = None
    role: Literal["operator"] = "operator"
    scopes: tuple[Scope, ...] | None = None
    """The scopes asked for; None asks for every scope the credential grants."""
    token: str | None = Field(default=None, max_length=512)
    proof: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_credential(self) -> ConnectParams:
        if (self.token is None) == (self.proof is None):
            msg = "connect needs either a proof or a token"
            raise ValueError(msg)
        if self.min_protocol > self.max_protocol:
            msg = "min_protocol is above max_protocol"
            raise ValueError(msg)
        return self


class Limits(_Frame):
    """What the daemon accepts and promises on a connection."""

    max_frame_bytes: int
    pre_connect_max_bytes: int
    max_buffered_bytes: int
    tick_interval_ms: int
    idle_timeout_ms: int
    """A peer silent this long is dropped: any frame counts, a `status` request will do."""
    connect_timeout_ms: int


class Hello(_Frame):
    """The payload answering `connect`: what was chosen and what is offered."""

    protocol: int
    role: str
    scopes: tuple[Scope, ...]
    methods: tuple[str, ...]
    events: tuple[str, ...]
    limits: Limits
    journal_position: int
    device: str | None = None


FRAMES: tuple[type[BaseModel], ...] = (
    RequestFrame,
    ResponseFrame,
    EventFrame,
    CancelFrame,
    Challenge,
    ConnectParams,
    Hello,
)
"""Every model docs/gateway.md shows the JSON Schema of, in its order."""


SCHEMA_START = "<!-- frames:start (written by scripts/gateway_schema.py) -->"
SCHEMA_END = "<!-- frames:end -->"


def schema_markdown() -> str:
    """Each frame model's JSON Schema as a Markdown section: what docs/gateway.md shows."""
    parts = [SCHEMA_START, ""]
    for model in FRAMES:
        schema = json.dumps(model.model_json_schema(), indent=2, sort_keys=True)
        parts += [f"#### `{model.__name__}`", "", "```json", schema, "```", ""]
    parts.append(SCHEMA_END)
    return "\n".join(parts)
