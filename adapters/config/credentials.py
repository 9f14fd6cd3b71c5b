"""The API key of a credential profile, from `secrets.toml` or the environment; adapter layer.

Keys are read when a model is asked, never journaled, and every key `secrets.toml` holds is
also a redacted value, so no tool result or log line can show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from adapters.config.loading import secrets_file
from adapters.errors import ConfigError
from adapters.settings.secrets_file import SecretsFile
from adapters.settings.tools import MIN_SECRET_LENGTH


class CredentialMissingError(ConfigError):
    """A model names a credential profile that cannot give a key."""


def credential(path: Path, profile: str, environ: Mapping[str, str]) -> str:
    """The API key of `profile`; a missing profile, variable or key is a CredentialMissingError."""
    return profile_key(secrets_file(path), path, profile, environ)


def profile_key(
    secrets: SecretsFile | None, path: Path, profile: str, environ: Mapping[str, str]
) -> str:
    """As `credential`, from secrets.toml already read (`path` names it in messages)."""
    found = None if secrets is None else secrets.profiles.get(profile)
    if found is None:
        msg = f"credential profile {profile} is not in {path}: add [profiles.{profile}] there"
        raise CredentialMissingError(msg)
    if found.api_key is not None:
        return found.api_key
    name = found.api_key_env
    value = environ.get(name or "", "")
    if len(value) < MIN_SECRET_LENGTH:
        msg = f"credential profile {profile} reads the environment variable {name}, which is unset"
        if value:
            msg = f"credential profile {profile}: {name} is too short to be a key"
        raise CredentialMissingError(msg)
    return value


def profile_env_values(secrets: SecretsFile | None, environ: Mapping[str, str]) -> list[str]:
    """The keys profiles read from the environment, as they are now: redacted like the rest."""
    if secrets is None:
        return []
    names = [p.api_key_env for p in secrets.profiles.values() if p.api_key_env is not None]
    return [environ[n] for n in names if len(environ.get(n, "")) >= MIN_SECRET_LENGTH]
