"""The configuration file `$LEDGERCLAW_HOME/config.toml`; adapter layer.

The journal's location and store are fixed: a `persistence` section is refused outright, so
no configuration can point the runtime at another database or an in-memory store.
"""

from __future__ import annotations

import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.errors import ConfigError, PersistenceNotConfigurableError
from adapters.tools.settings import ToolSettings


class Durability(StrEnum):
    """How hard each commit is flushed; see docs/adr/0003."""

    FULL = "full"
    NORMAL = "normal"


class JournalSettings(BaseModel):
    """Tunable journal behaviour (never its location)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    durability: Durability = Durability.FULL
    busy_timeout_seconds: int = Field(default=5, ge=1, le=120)


class Config(BaseModel):
    """The whole configuration file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    journal: JournalSettings = JournalSettings()
    tools: ToolSettings = ToolSettings()


def load_config(path: Path) -> Config:
    """Read and validate `path`; a missing file means the defaults."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Config()
    except OSError as error:
        msg = f"cannot read config {path}: {error.strerror or error}"
        raise ConfigError(msg) from None
    try:
        data: dict[str, Any] = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        msg = f"config {path} is not valid TOML: {error}"
        raise ConfigError(msg) from None
    if "persistence" in data:
        msg = (
            f"config {path} has a [persistence] section, which is not allowed: the journal "
            "always lives in the home as ledgerclaw.db. Remove the section."
        )
        raise PersistenceNotConfigurableError(msg)
    try:
        return Config.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        msg = f"config {path} is invalid: {problems}"
        raise ConfigError(msg) from None
