"""The shape of `secrets.toml`: redacted values, models' and upstreams' credentials; adapters."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from adapters.settings.agent import Name
from adapters.settings.mcp import HeaderName, ServerName
from adapters.settings.tools import MIN_SECRET_LENGTH

Secret = Annotated[str, Field(min_length=MIN_SECRET_LENGTH)]


class RedactSettings(BaseModel):
    """`[redact]`: exact values no tool result or log may show."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    values: tuple[Secret, ...] = ()


class CredentialProfile(BaseModel):
    """`[profiles.NAME]`: one credential a model may ask with, given or from the environment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    api_key: Secret | None = None
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    """The environment variable that holds the key, read when the profile is used."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.api_key is None) == (self.api_key_env is None):
            msg = "a profile needs exactly one of api_key and api_key_env"
            raise ValueError(msg)
        return self


class UpstreamSecrets(BaseModel):
    """`[mcp.NAME]`: the credentials one upstream http server is reached with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    bearer_token: Secret | None = None
    """Sent as `Authorization: Bearer ...` on every request."""
    headers: dict[HeaderName, Secret] = {}
    """Secret headers, such as an API key header."""


class SecretsFile(BaseModel):
    """The whole of secrets.toml."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    redact: RedactSettings = RedactSettings()
    profiles: dict[Name, CredentialProfile] = {}
    mcp: dict[ServerName, UpstreamSecrets] = {}

    def redacted_values(self) -> tuple[str, ...]:
        """Every value this file keeps secret: the `[redact]` values and the profiles' keys."""
        keys = tuple(p.api_key for p in self.profiles.values() if p.api_key is not None)
        upstream = tuple(
            value
            for server in self.mcp.values()
            for value in (server.bearer_token, *server.headers.values())
            if value is not None
        )
        return (*self.redact.values, *keys, *upstream)
