"""The exact secret values every tool result is redacted of; adapter layer.

They come from `secrets.toml` in the home (`[redact] values = [...]`), a protected file
no tool can read (`[redact] values` and the profiles' API keys), and from the environment
variables named in `[tools] redact_env` or by a profile's `api_key_env`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from adapters.config.credentials import profile_env_values
from adapters.config.loading import secrets_file
from adapters.settings.tools import MIN_SECRET_LENGTH


def load_secrets(path: Path, env_names: Iterable[str], environ: Mapping[str, str]) -> list[str]:
    """Every configured secret value; a malformed or too-short entry is a ConfigError."""
    values = [
        environ[name] for name in env_names if len(environ.get(name, "")) >= MIN_SECRET_LENGTH
    ]
    # The same reading and checks as `config check` and a daemon start: owner-only, known
    # keys only, nothing nested beyond what a setting needs.
    secrets = secrets_file(path)
    redacted = () if secrets is None else secrets.redacted_values()
    return [*values, *redacted, *profile_env_values(secrets, environ)]
