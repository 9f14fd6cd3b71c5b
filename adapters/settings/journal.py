"""The `[journal]` section of config.toml: durability and lock waits; adapter layer."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Durability(StrEnum):
    """How hard each commit is flushed; see docs/adr/0003."""

    FULL = "full"
    NORMAL = "normal"


class JournalSettings(BaseModel):
    """Tunable journal behaviour (never its location)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    durability: Durability = Durability.FULL
    busy_timeout_seconds: int = Field(default=5, ge=1, le=120)
