"""Whether each configured model's server lists it, asked live and concurrently; adapter layer.

One `GET /models` per distinct (provider, base_url, credential profile), each given a few
seconds, all at once; `models list` and the doctor read the same answers.
"""

from __future__ import annotations

import difflib
import functools
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable

import anyio

from adapters.config.credentials import CredentialMissingError
from adapters.home import Home
from adapters.settings.agent import (
    ANTHROPIC_BASE_URL,
    OPENAI_BASE_URL,
    ModelSettings,
    ProviderKind,
)
from adapters.settings.config_file import Config
from adapters.wiring.providers import ProviderSet
from domain.agent.replies import ModelFailure
from domain.ports import ModelProvider

CATALOG_TIMEOUT = 5.0
"""Seconds one server has to list its models."""
CLOSE_NAMES = 5
"""How many similar ids a model missing from its catalog is shown."""
CAUSE_DEPTH = 12
"""How far down an error's causes the words for a failed connection are looked for."""


class Resolution(StrEnum):
    """What asking a model's server for its catalog found out about the model."""

    OK = "ok"
    NOT_IN_CATALOG = "not in the provider's catalog"
    CREDENTIAL_MISSING = "credential missing"
    NO_SUCH_PROVIDER = "no such provider"
    NOT_CHECKED = "not checked"


@dataclass(frozen=True)
class ModelResolution:
    """One model's resolution and the words that explain it."""

    resolution: Resolution
    detail: str = ""
    """Close names (`close: a, b`), how the server failed (`HTTP 401: …`, `connection
    refused`), why no key resolved, or why nothing was asked."""
    catalog_size: int | None = None
    """How many models the server listed; None when it was not asked or did not answer."""
    address: str = ""
    """The server asked (or that would be), for messages."""


@runtime_checkable
class _Catalogued(Protocol):
    """A provider that can list its server's models."""

    async def catalog(self, profile: str) -> list[str]:
        """The model ids the server lists; a ModelFailure when it cannot."""
        ...


@dataclass(frozen=True)
class _Refused:
    """A catalog request that got no list, and how."""

    how: str


_Ask = tuple[ProviderKind, str | None, str]
"""One catalog request: provider, configured base URL and credential profile."""


def not_checked(config: Config, why: str) -> dict[str, ModelResolution]:
    """Every model as `not checked`, for `why` (`--offline`)."""
    return {
        name: ModelResolution(Resolution.NOT_CHECKED, why, address=address_of(model))
        for name, model in config.models.items()
    }


def resolve_models(
    config: Config,
    home: Home,
    environ: Mapping[str, str] | None = None,
    per_server: float = CATALOG_TIMEOUT,
) -> dict[str, ModelResolution]:
    """Each `[models.NAME]` table's resolution, by name, asking every server at once."""
    env = os.environ if environ is None else environ
    return anyio.run(functools.partial(resolve_models_async, config, home, env, per_server))


async def resolve_models_async(
    config: Config,
    home: Home,
    environ: Mapping[str, str] | None = None,
    per_server: float = CATALOG_TIMEOUT,
) -> dict[str, ModelResolution]:
    """As `resolve_models`, inside a running event loop; `per_server` seconds per request."""
    providers = ProviderSet(config, home, environ)
    found: dict[str, ModelResolution] = {}
    asks: dict[_Ask, list[str]] = {}
    for name, model in config.models.items():
        if not model.provider.asks_a_server:
            detail = f"{model.provider}: no server to ask"
            found[name] = ModelResolution(Resolution.NOT_CHECKED, detail)
            continue
        profile, why = _first_key(providers, model.profiles)
        if profile is None:
            found[name] = ModelResolution(
                Resolution.CREDENTIAL_MISSING, why, address=address_of(model)
            )
            continue
        asks.setdefault((model.provider, model.base_url, profile), []).append(name)
    answers = await _ask_all(providers, config, asks, per_server)
    for ask, names in asks.items():
        for name in names:
            found[name] = _judged(config.models[name], answers[ask])
    return {name: found[name] for name in config.models}


def address_of(model: ModelSettings) -> str:
    """The server a model's requests go to."""
    if model.base_url is not None:
        return model.base_url
    if model.provider is ProviderKind.ANTHROPIC:
        return ANTHROPIC_BASE_URL
    if model.provider is ProviderKind.OPENAI:
        return OPENAI_BASE_URL
    return "(no server)"


def _first_key(providers: ProviderSet, profiles: Sequence[str]) -> tuple[str | None, str]:
    """The first profile whose key resolves, else None and why the first one does not."""
    reasons: list[str] = []
    for profile in profiles:
        try:
            providers.key_for(profile)
        except CredentialMissingError as error:
            reasons.append(str(error))
        else:
            return profile, ""
    return None, reasons[0] if reasons else "no credential profile"


async def _ask_all(
    providers: ProviderSet, config: Config, asks: Mapping[_Ask, list[str]], per_server: float
) -> dict[_Ask, list[str] | _Refused]:
    """Every catalog request at once, one provider per (provider, base_url), all closed after."""
    answers: dict[_Ask, list[str] | _Refused] = {}
    made: dict[tuple[ProviderKind, str | None], ModelProvider] = {}

    async def ask(provider: ModelProvider, key: _Ask) -> None:
        answers[key] = await _catalog(provider, key[2], per_server)

    try:
        async with anyio.create_task_group() as group:
            for key, names in asks.items():
                server = key[:2]
                if server not in made:
                    made[server] = providers.make(config.models[names[0]])
                group.start_soon(ask, made[server], key)
    finally:
        for provider in made.values():
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
    return answers


async def _catalog(
    provider: ModelProvider, profile: str, per_server: float
) -> list[str] | _Refused:
    if not isinstance(provider, _Catalogued):
        return _Refused("the provider offers no catalog")
    try:
        with anyio.fail_after(per_server):
            return await provider.catalog(profile)
    except TimeoutError:
        return _Refused(f"no answer within {per_server:g} s")
    except ModelFailure as failure:
        return _Refused(_how(failure))


def _how(failure: ModelFailure) -> str:
    """How a catalog request failed, in a few words: its status, or what the socket said."""
    if failure.status is not None:
        prefix = f"HTTP {failure.status}"
        if failure.message.startswith(prefix):
            return failure.message
        return f"{prefix}: {failure.message}"
    # The providers raise their failures `from None` so that messages stay clean, yet the
    # suppressed context still holds the socket's own error: the one an operator can act on.
    error: BaseException | None = failure
    for _ in range(CAUSE_DEPTH):
        if error is None:
            break
        if isinstance(error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(error, socket.gaierror):
            return "the host name does not resolve"
        error = error.__cause__ or error.__context__
    return failure.message


def _judged(model: ModelSettings, answer: list[str] | _Refused) -> ModelResolution:
    address = address_of(model)
    if isinstance(answer, _Refused):
        return ModelResolution(Resolution.NO_SUCH_PROVIDER, answer.how, address=address)
    size = len(answer)
    if model.model in answer:
        return ModelResolution(Resolution.OK, catalog_size=size, address=address)
    close = difflib.get_close_matches(model.model, answer, n=CLOSE_NAMES)
    detail = f"close: {', '.join(close)}" if close else "nothing close"
    return ModelResolution(Resolution.NOT_IN_CATALOG, detail, size, address)
