"""The `[daemon]` section of config.toml: port, default audience, limits, logging; adapter layer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from domain.values.audience import Audience

DEFAULT_PORT = 7431

LogLevel = Literal["debug", "info", "warning", "error"]


class DaemonSettings(BaseModel):
    """How `ledgerclaw daemon run` serves its home."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    port: int = Field(default=DEFAULT_PORT, ge=1, le=65_535)
    audience: Audience = Audience.PERSONAL
    """The audience of the sessions the daemon opens when a client names none."""
    grace_seconds: float = Field(default=10, ge=0, le=600)
    """How long running calls may finish after SIGINT or SIGTERM before they are cancelled."""
    idle_timeout_seconds: int = Field(default=1800, ge=5, le=86_400)
    """A handshake-era MCP session (one with an `mcp-session-id`) ends after this long idle."""
    stateless_idle_timeout_seconds: int = Field(default=300, ge=1, le=86_400)
    """A stateless-era session ends after this long without a request: its clients leave
    without a word, so it is shorter."""
    max_concurrent_calls: int = Field(default=16, ge=1, le=1024)
    """The global budget of tool calls running at once, over every connection."""
    projection_interval_seconds: float = Field(default=0.5, ge=0.05, le=60)
    """How often the read models catch up with the journal."""
    log_level: LogLevel = "info"
    pairing_code_seconds: int = Field(default=300, ge=1, le=3600)
    """How long a pairing code from `ledgerclaw daemon pair` stays valid (five minutes)."""
