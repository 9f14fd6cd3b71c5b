"""What kind of stream a session is and whom it serves; domain layer."""

from __future__ import annotations

from enum import StrEnum


class SessionKind(StrEnum):
    """Whether a stream is the user's conversation or one delegated child run."""

    MAIN = "main"
    SUBAGENT = "subagent"


class Audience(StrEnum):
    """Who the session serves; it selects exposure and trusted roots."""

    PERSONAL = "personal"
    TEAM = "team"
    PUBLIC = "public"
