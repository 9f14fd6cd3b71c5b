"""The `[tools]` section of config.toml: roots, approvals, exposure, shell; adapter layer."""

from __future__ import annotations

import difflib
from enum import StrEnum
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from domain.authorization.facts import canonical
from domain.shell.confinement import SandboxMode
from domain.shell.policy import Phrase
from domain.values.audience import Audience
from domain.values.authorization import ApprovalMode, FileOperation

DEFAULT_SHELL_TIMEOUT = 60
MIN_SECRET_LENGTH = 4
"""Shorter values would redact ordinary words; they are refused in configuration."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RootSetting(_Section):
    """A configured trusted root: a directory, the operations it allows and for whom."""

    path: str
    operations: tuple[FileOperation, ...] = (FileOperation.READ,)
    audiences: tuple[Audience, ...] = (Audience.PERSONAL,)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        expanded = str(Path(value).expanduser())
        if not expanded.startswith("/"):
            msg = f"root {value!r} must be an absolute path (or start with ~)"
            raise ValueError(msg)
        return canonical(expanded)


class AudienceSetting(_Section):
    """Which tools one audience sees: all (allow unset) or the named ones, minus deny."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()


_Word = TypeVar("_Word", bound=StrEnum)


class NetworkAccess(StrEnum):
    """Whether sandboxed commands may bind and connect over TCP."""

    DENY = "deny"
    ALLOW = "allow"


def _choice(vocabulary: type[_Word], value: object, what: str) -> _Word:
    """`value` as a member of `vocabulary`, or a ValueError that suggests the closest one."""
    words = [member.value for member in vocabulary]
    if isinstance(value, str) and value in words:
        return vocabulary(value)
    close = difflib.get_close_matches(str(value), words, n=1)
    hint = f' (did you mean "{close[0]}"?)' if close else ""
    msg = f"expected {what}, got {value!r}{hint}"
    raise ValueError(msg)


class ShellSettings(_Section):
    """Hard-deny rules, reviewed-safe phrases (None keeps the defaults), timeouts, sandbox.

    `network` is one choice for every audience, or a table of audiences (unnamed: denied).
    """

    hard_deny: tuple[Phrase, ...] = ()
    reviewed_safe: tuple[Phrase, ...] | None = None
    default_timeout_seconds: int = Field(default=DEFAULT_SHELL_TIMEOUT, ge=1, le=600)
    sandbox: SandboxMode = SandboxMode.REQUIRED
    network: NetworkAccess | dict[Audience, NetworkAccess] = NetworkAccess.DENY

    @field_validator("network", mode="before")
    @classmethod
    def _one_network_choice(cls, value: object) -> object:
        """`deny`, `allow`, or a table of audiences: one plain error, not one per reading."""
        if isinstance(value, dict):
            return {
                _choice(Audience, key, "an audience (personal, team or public)"): _choice(
                    NetworkAccess, access, '"deny" or "allow"'
                )
                for key, access in value.items()
            }
        return _choice(NetworkAccess, value, '"deny", "allow" or a table of audiences')

    def network_for(self, audience: Audience) -> bool:
        """Whether commands of `audience` keep TCP open (an audience not named: denied)."""
        if isinstance(self.network, dict):
            return self.network.get(audience, NetworkAccess.DENY) is NetworkAccess.ALLOW
        return self.network is NetworkAccess.ALLOW


class ToolSettings(_Section):
    """Everything configurable about the tool pipeline."""

    roots: tuple[RootSetting, ...] = ()
    approval: dict[str, ApprovalMode] = Field(default_factory=dict)
    features: tuple[str, ...] = ()
    audiences: dict[Audience, AudienceSetting] = Field(default_factory=dict)
    redact_env: tuple[str, ...] = ()
    """Names of environment variables whose values are redacted from every result."""
    inline_limit: int = Field(default=16_000, ge=1_000, le=1_000_000)
    approval_timeout_seconds: int = Field(default=300, ge=1, le=86_400)
    shell: ShellSettings = ShellSettings()
