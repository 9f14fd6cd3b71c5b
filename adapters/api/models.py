"""The configured models, whether their keys resolve and their servers list them; adapters."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from adapters.api.model_checks import not_checked, resolve_models
from adapters.config.credentials import CredentialMissingError, profile_key
from adapters.config.loading import load_config, secrets_file
from adapters.home import Home
from adapters.settings.agent import ProviderKind
from adapters.settings.secrets_file import SecretsFile


def list_models(
    home: Home, environ: Mapping[str, str] | None = None, *, live: bool = False
) -> list[dict[str, Any]]:
    """Every `[models.NAME]` table: its role, wire, address, credentials and resolution.

    The chain's models come first in their order, then the others by name. A credential is
    `ok` when its key resolves now; keys themselves are never shown. With `live`, each
    server is asked for its catalog (see `model_checks`); else every model is `not checked`.
    """
    config = load_config(home.config)
    secrets = secrets_file(home.secrets)
    env = os.environ if environ is None else environ
    resolved = resolve_models(config, home, env) if live else not_checked(config, "--offline")
    chain = [name for name in (config.agent.model, *config.agent.fallbacks) if name is not None]
    names = [*chain, *sorted(set(config.models) - set(chain))]
    rows = []
    for name in names:
        model = config.models[name]
        role = "unused"
        if name in chain:
            index = chain.index(name)
            role = "first" if index == 0 else f"fallback {index}"
        rows.append(
            {
                "name": name,
                "role": role,
                "provider": str(model.provider),
                "model": model.model,
                "base_url": model.base_url,
                "context_window": model.context_window,
                "credentials": {
                    profile: _credential_state(secrets, home, model.provider, profile, env)
                    for profile in model.profiles
                },
                "resolution": str(resolved[name].resolution),
                "resolution_detail": resolved[name].detail,
                "catalog_size": resolved[name].catalog_size,
            }
        )
    return rows


def _credential_state(
    secrets: SecretsFile | None,
    home: Home,
    kind: ProviderKind,
    profile: str,
    env: Mapping[str, str],
) -> str:
    if not kind.asks_a_server:
        return "not needed"
    try:
        profile_key(secrets, home.secrets, profile, env)
    except CredentialMissingError:
        return "missing"
    return "ok"
