"""The facts a session is opened with, as one value; domain layer.

A session's opening names its id, its key, its kind and audience, the session that started
it (a subagent only) and what the connecting client declared about itself. The journal port,
the journal and `Session.open` all take this one value, so a new opening fact is added in
one place. The links between the facts are checked by `Session.open`, and the field shapes
by the `SessionOpened` event it triggers.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from domain.ids import SessionId
from domain.values.audience import Audience, SessionKind


@dataclass(frozen=True)
class SessionOpening:
    """What a new session stream starts from."""

    session_id: SessionId
    session_key: str
    kind: SessionKind
    audience: Audience
    parent_session_id: SessionId | None = None
    """The session that started this one; set for a subagent, never for a main session."""
    _: KW_ONLY
    client_name: str | None = None
    """The name the connecting client declared (self-declared: not an identity)."""
    client_version: str | None = None
