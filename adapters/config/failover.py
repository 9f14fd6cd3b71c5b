"""The failover chain and loop limits a run takes from `[agent]` and `[models.*]`; adapter layer."""

from __future__ import annotations

import difflib

from adapters.errors import ConfigError
from adapters.settings.config_file import Config
from domain.agent.decider import LoopSettings
from domain.agent.failover import FailoverPolicy, ModelChoice
from domain.agent.loop_guard import LoopLimits


class ModelNotConfiguredError(ConfigError):
    """No model was chosen, or the one asked for has no `[models.NAME]` table."""


def failover_chain(
    config: Config, explicit: str | None = None
) -> tuple[tuple[ModelChoice, ...], FailoverPolicy]:
    """The models to ask, in order, and the failover policy.

    A model named explicitly (`--model`) is asked alone: its profiles rotate, but nothing
    falls back to another model. Otherwise `[agent] model` comes first, then its fallbacks.
    """
    agent = config.agent
    names = (explicit,) if explicit is not None else (agent.model, *agent.fallbacks)
    if names[0] is None:
        msg = f"no model is chosen: set [agent] model = NAME{_defined(config)}, or pass --model"
        raise ModelNotConfiguredError(msg)
    chosen = [name for name in names if name is not None]
    for name in chosen:
        if name not in config.models:
            close = difflib.get_close_matches(name, sorted(config.models), n=1)
            hint = f" (did you mean {close[0]}?)" if close else _defined(config)
            msg = f"no [models.{name}] table defines the model {name}{hint}"
            raise ModelNotConfiguredError(msg)
    chain = tuple(
        ModelChoice(str(model.provider), model.model, model.profiles)
        for model in (config.models[name] for name in chosen)
    )
    policy = FailoverPolicy(
        retry_after_cap=agent.retry_after_cap_seconds,
        cooldown=agent.cooldown_seconds,
        fall_back=explicit is None,
    )
    return chain, policy


def loop_limits(config: Config) -> LoopLimits:
    """The loop protection limits of every run."""
    agent = config.agent
    return LoopLimits(
        same_failure=agent.same_failure_limit,
        failed_turns=agent.failed_turns_limit,
        turns=agent.turn_limit,
    )


def loop_settings(config: Config, explicit: str | None = None) -> LoopSettings:
    """What a run decides with: the chain, failover, limits and the first model's window."""
    chain, failover = failover_chain(config, explicit)
    lead = chain[0]
    first = next(
        m
        for m in config.models.values()
        if (str(m.provider), m.model) == (lead.provider, lead.model)
    )
    return LoopSettings(
        chain=chain,
        policy=failover,
        limits=loop_limits(config),
        context_window=first.context_window,
        output_reserve=first.output_reserve,
        max_output_tokens=first.output_reserve,
    )


def _defined(config: Config) -> str:
    known = sorted(config.models)
    return f" (defined: {', '.join(known)})" if known else " (no [models.NAME] table exists)"
