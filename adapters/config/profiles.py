"""Warnings for models whose credential profiles secrets.toml does not define; adapter layer."""

from __future__ import annotations

from pathlib import Path

from adapters.settings.config_file import Config
from adapters.settings.secrets_file import SecretsFile


def missing_profiles(config: Config, secrets: SecretsFile | None, path: Path) -> list[str]:
    """One warning per profile a model names that `path` does not define (played ones need none)."""
    defined = set() if secrets is None else set(secrets.profiles)
    return [
        f"model {name} names the credential profile {profile}, which {path} does not define:"
        f" add [profiles.{profile}] with api_key or api_key_env there"
        for name, model in sorted(config.models.items())
        if model.provider.asks_a_server
        for profile in model.profiles
        if profile not in defined
    ]
