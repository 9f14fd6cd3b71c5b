"""The `[agent]` and `[models.*]` sections of config.toml: models, failover, limits; adapters."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Where an `openai` model without a `base_url` is asked."""
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
"""Where an `anthropic` model without a `base_url` is asked (the SDK adds `/v1`)."""

Name = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")]


class ProviderKind(StrEnum):
    """The wire a model is asked over."""

    OPENAI = "openai"
    """OpenAI's chat completions, and every server compatible with it (vLLM, llama.cpp,
    Ollama, LM Studio, OpenRouter), through `base_url`."""
    ANTHROPIC = "anthropic"
    SCRIPTED = "scripted"
    """A JSONL script played back: for tests and offline demonstrations."""
    RECORDED = "recorded"
    """A journaled session's replies played back: its conversation re-driven offline."""

    @property
    def asks_a_server(self) -> bool:
        """Whether requests go to a server (and need credentials)."""
        return self not in {ProviderKind.SCRIPTED, ProviderKind.RECORDED}


class ModelSettings(BaseModel):
    """One `[models.NAME]` table: a provider's model and the credentials that may ask it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: ProviderKind
    model: str = Field(min_length=1, max_length=200)
    """The provider's own name for the model."""
    base_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    profiles: tuple[Name, ...] = Field(default=("default",), min_length=1)
    """Credential profiles in `secrets.toml`, tried in this order."""
    context_window: int = Field(default=128_000, ge=1_024, le=10_000_000)
    output_reserve: int = Field(default=4_096, ge=1, le=1_000_000)
    """Tokens kept free for the reply when deciding whether a request fits."""
    script: str | None = Field(default=None, min_length=1)
    """The JSONL script a `scripted` model plays."""
    recording: str | None = Field(default=None, min_length=4, max_length=64)
    """The session (id or unique prefix) whose replies a `recorded` model plays."""

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.output_reserve >= self.context_window:
            msg = "output_reserve must be smaller than context_window"
            raise ValueError(msg)
        if (self.provider is ProviderKind.SCRIPTED) != (self.script is not None):
            msg = "script is required for a scripted model and allowed for no other"
            raise ValueError(msg)
        if (self.provider is ProviderKind.RECORDED) != (self.recording is not None):
            msg = "recording is required for a recorded model and allowed for no other"
            raise ValueError(msg)
        return self


class AgentSettings(BaseModel):
    """The `[agent]` section: which models to ask, how to fail over, and the loop's limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: Name | None = None
    """The `[models.NAME]` asked first."""
    fallbacks: tuple[Name, ...] = ()
    """The models asked next, in order, when the first cannot answer."""
    retry_after_cap_seconds: float = Field(default=60.0, ge=0, le=600)
    cooldown_seconds: float = Field(default=60.0, ge=0, le=3_600)
    same_failure_limit: int = Field(default=3, ge=1, le=100)
    failed_turns_limit: int = Field(default=5, ge=1, le=100)
    turn_limit: int = Field(default=50, ge=1, le=10_000)
    concurrent_model_requests: int = Field(default=8, ge=1, le=1_024)
    """Model requests the daemon's hosted sessions may have open at once, all together."""
    concurrent_tool_calls: int = Field(default=16, ge=1, le=1_024)
    """Tool calls the daemon's hosted sessions may run at once, all together."""
    session_tool_calls: int = Field(default=4, ge=1, le=1_024)
    """Tool calls one hosted session may run at once, within `concurrent_tool_calls`."""
