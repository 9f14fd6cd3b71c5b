"""The exact secret values every tool result is redacted of; adapter layer.

They come from `secrets.toml` in the home (`[redact] values = [...]`), a protected file
no tool can read, and from the environment variables named in `[tools] redact_env`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

from adapters.config import check_secrets
from adapters.errors import ConfigError
from adapters.tools.settings import MIN_SECRET_LENGTH


def load_secrets(path: Path, env_names: Iterable[str], environ: Mapping[str, str]) -> list[str]:
    """Every configured secret value; a malformed or too-short entry is a ConfigError."""
    values = [
        environ[name] for name in env_names if len(environ.get(name, "")) >= MIN_SECRET_LENGTH
    ]
    # The same checks as `config check` and a daemon start: owner-only, known keys only.
    if check_secrets(path) is None:
        return values
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return values
    except OSError as error:
        msg = f"cannot read {path}: {error.strerror or error}"
        raise ConfigError(msg) from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        msg = f"{path} is not valid TOML: {error}"
        raise ConfigError(msg) from None
    listed = data.get("redact", {}).get("values", [])
    if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
        msg = f"{path}: [redact] values must be a list of strings"
        raise ConfigError(msg)
    short = [v for v in listed if len(v) < MIN_SECRET_LENGTH]
    if short:
        msg = f"{path}: secret values must be at least {MIN_SECRET_LENGTH} characters"
        raise ConfigError(msg)
    return [*values, *listed]
