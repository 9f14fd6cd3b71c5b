"""The gateway's agent methods: sessions, sending, steering, aborting and history; adapter layer.

Each method takes the request's params and returns a JSON object (see docs/gateway.md). The
daemon's `AgentHost` does the work; history is read from the journal, each event with its
place in the session's stream, which has no gaps and is the cursor a client resumes from.
"""

from __future__ import annotations

import base64
import binascii
from functools import partial
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from adapters.control.frames import Scope
from adapters.control.methods import BadControlRequestError
from adapters.control.plane import ControlMethod, current_peer
from adapters.errors import UnknownSessionError
from adapters.journal.events import decoded_stream
from adapters.runtime.agent_host import AgentHost
from adapters.runtime.attachments import Upload, fetch_attachment
from domain.attachments.media import MEDIA_TYPE, normalise
from domain.attachments.records import AttachmentName
from domain.base import DomainEvent
from domain.ids import AttachmentId, SessionId
from domain.ports import EventLog

HISTORY_LIMIT = 500
MAX_SENT_FILES = 64
"""The most files one `chat.send` may carry; those past the configured count are refused."""
SUBSCRIPTION_POLL = 0.5
"""Seconds a subscription waits for a write of this daemon before it looks anyway."""
AGENT_METHOD_SCOPES = {
    "sessions.create": Scope.WRITE,
    "sessions.list": Scope.READ,
    "chat.send": Scope.WRITE,
    "chat.steer": Scope.WRITE,
    "chat.abort": Scope.WRITE,
    "chat.history": Scope.READ,
    "subscribe": Scope.READ,
    "sessions.get": Scope.READ,
    "sessions.close": Scope.WRITE,
    "tools.list": Scope.READ,
    "attachments.get": Scope.READ,
}
"""The scope each agent method needs."""
AGENT_EVENTS = {
    "chat.delta": Scope.READ,
    "chat.record": Scope.READ,
    "chat.run_ended": Scope.READ,
    "session.event": Scope.READ,
}
"""The events of hosted sessions, heard by connections that may read."""
M = TypeVar("M", bound=BaseModel)
_INTERNAL_FIELDS = {"originator_id", "originator_version"}


class _Params(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Session(_Params):
    session: str

    @field_validator("session")
    @classmethod
    def _an_id(cls, value: str) -> str:
        SessionId(value)
        return value

    @property
    def session_id(self) -> SessionId:
        return SessionId(self.session)


class _Attachment(_Params):
    name: AttachmentName
    media_type: str = Field(min_length=1, max_length=255)
    data: bytes
    """Sent as base64 (RFC 4648, padded, no line breaks); decoded here."""

    @field_validator("media_type")
    @classmethod
    def _a_media_type(cls, value: str) -> str:
        if not MEDIA_TYPE.fullmatch(normalise(value)):
            msg = f"not a media type (type/subtype): {value!r}"
            raise ValueError(msg)
        return value

    @field_validator("data", mode="before")
    @classmethod
    def _base64(cls, value: object) -> bytes:
        if not isinstance(value, str):
            msg = "expected the file's bytes as a base64 string"
            raise ValueError(msg)  # noqa: TRY004 - pydantic reports a ValueError as the field's
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error:
            msg = "not valid base64"
            raise ValueError(msg) from None

    def upload(self) -> Upload:
        return Upload(self.name, self.media_type, self.data)


class _Send(_Session):
    text: str = Field(min_length=1, max_length=200_000)
    client_run_id: str | None = Field(default=None, min_length=1, max_length=200)
    attachments: tuple[_Attachment, ...] = Field(default=(), max_length=MAX_SENT_FILES)


class _Fetch(_Session):
    attachment: str

    @field_validator("attachment")
    @classmethod
    def _an_attachment_id(cls, value: str) -> str:
        AttachmentId(value)
        return value


class _Steer(_Session):
    text: str = Field(min_length=1, max_length=200_000)


class _Subscribe(_Session):
    after: int = Field(default=0, ge=0)


class _History(_Session):
    after: int | None = Field(default=None, ge=0)
    before: int | None = Field(default=None, ge=1)
    limit: int = Field(default=100, ge=1, le=HISTORY_LIMIT)

    @model_validator(mode="after")
    def _one_direction(self) -> _History:
        if self.after is not None and self.before is not None:
            msg = "give after or before, not both"
            raise ValueError(msg)
        return self


def _parse(model: type[M], params: dict[str, Any]) -> M:
    try:
        return model.model_validate(params)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        message = str(first["msg"]).removeprefix("Value error, ")
        msg = f"bad request: {where}: {message}"
        raise BadControlRequestError(msg) from None


def event_row(event: DomainEvent) -> dict[str, Any]:
    """One journaled event as history and subscriptions give it: position, name, fields."""
    return {
        "position": event.originator_version,
        "event": event.short_name(),
        "fields": event.model_dump(mode="json", exclude=_INTERNAL_FIELDS),
    }


def history(log: EventLog, session_id: SessionId, after: int, limit: int) -> dict[str, Any]:
    """The session's events after stream position `after`, at most `limit`, with positions."""
    events = decoded_stream(log, session_id, after=after, limit=limit + 1)
    shown = events[:limit]
    rows = [event_row(event) for event in shown]
    last = shown[-1].originator_version if shown else after
    return {"session": str(session_id), "events": rows, "next": last, "more": len(events) > limit}


def history_before(log: EventLog, session_id: SessionId, before: int, limit: int) -> dict[str, Any]:
    """The `limit` events just before stream position `before`, oldest first.

    Positions have no gaps, so the page is positions `before - limit` to `before - 1`; a
    `before` past the end reads as the end, so any large number asks for the latest page.
    `next` is the first position returned (the `before` of the page further back).
    """
    head = log.stream_heads([session_id.hex]).get(session_id.hex, 0)
    before = min(before, head + 1)
    first = max(1, before - limit)
    events = decoded_stream(log, session_id, after=first - 1, limit=before - first)
    rows = [event_row(event) for event in events]
    start = events[0].originator_version if events else before
    return {"session": str(session_id), "events": rows, "next": start, "more": start > 1}


def agent_methods(host: AgentHost, log: EventLog) -> dict[str, ControlMethod]:
    """The agent methods over `host`, history read through `log`."""

    async def create(_params: dict[str, Any]) -> dict[str, Any]:
        return {"session_id": str(host.create())}

    async def listing(_params: dict[str, Any]) -> dict[str, Any]:
        return {"sessions": await anyio.to_thread.run_sync(host.sessions)}

    async def send(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Send, params)
        uploads = [attachment.upload() for attachment in wanted.attachments]
        return await host.send(wanted.session_id, wanted.text, wanted.client_run_id, uploads)

    async def steer(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Steer, params)
        return {"queued": host.steer(wanted.session_id, wanted.text)}

    async def abort(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Session, params)
        return {"aborted": host.abort(wanted.session_id)}

    async def chat_history(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_History, params)
        if wanted.before is not None:
            return history_before(log, wanted.session_id, wanted.before, wanted.limit)
        return history(log, wanted.session_id, wanted.after or 0, wanted.limit)

    return {
        "sessions.create": create,
        "sessions.list": listing,
        "chat.send": send,
        "chat.steer": steer,
        "chat.abort": abort,
        "chat.history": chat_history,
        "subscribe": subscription(host, log),
        "attachments.get": attachment_fetch(log),
        **session_methods(host),
    }


def subscription(host: AgentHost, log: EventLog) -> ControlMethod:
    """`subscribe {session, after}`: the session's events after `after`, then live, pushed."""

    async def subscribe(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Subscribe, params)
        session_id, peer = wanted.session_id, current_peer()
        heads = await anyio.to_thread.run_sync(log.stream_heads, [session_id.hex])
        if session_id.hex not in heads:
            msg = f"no session {session_id} is in the journal"
            raise UnknownSessionError(msg)

        async def pump() -> None:
            cursor = wanted.after
            while True:
                changed = host.changed(session_id)
                found = await anyio.to_thread.run_sync(
                    partial(decoded_stream, log, session_id, after=cursor)
                )
                for event in found:
                    await peer.push(
                        "session.event", {"session": str(session_id), **event_row(event)}
                    )
                    cursor = event.originator_version
                # Woken by this daemon's own writes, and every poll for anyone else's.
                with anyio.move_on_after(SUBSCRIPTION_POLL):
                    await changed.wait()

        peer.start_soon(pump)
        return {"session": str(session_id), "after": wanted.after, "head": heads[session_id.hex]}

    return subscribe


def session_methods(host: AgentHost) -> dict[str, ControlMethod]:
    """`sessions.get`, `sessions.close` and `tools.list` over `host`."""

    async def get(params: dict[str, Any]) -> dict[str, Any]:
        return host.describe(_parse(_Session, params).session_id)

    async def close(params: dict[str, Any]) -> dict[str, Any]:
        return await host.close(_parse(_Session, params).session_id)

    async def tools(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Session, params)
        return {"session": wanted.session, "tools": host.tools(wanted.session_id)}

    return {"sessions.get": get, "sessions.close": close, "tools.list": tools}


def attachment_fetch(log: EventLog) -> ControlMethod:
    """`attachments.get {session, attachment}`: a file the agent attached, base64 encoded."""

    async def get(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Fetch, params)
        found = partial(fetch_attachment, log, wanted.session_id, AttachmentId(wanted.attachment))
        return await anyio.to_thread.run_sync(found)

    return get
