"""The failover chain and loop limits a run takes from config.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.config.failover import ModelNotConfiguredError, failover_chain, loop_limits
from adapters.config.loading import load_config
from adapters.settings.config_file import Config
from domain.agent.failover import ModelChoice
from domain.agent.loop_guard import LoopLimits

MODELS = """
[models.main]
provider = "openai"
model = "gpt-4.1-mini"
profiles = ["work", "personal"]

[models.spare]
provider = "anthropic"
model = "claude-sonnet-4-5"
"""


def config_of(tmp_path: Path, text: str) -> Config:
    """config.toml with `text`, loaded as a start loads it."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    return load_config(path)


def test_the_chosen_model_comes_first_then_its_fallbacks_with_the_configured_policy(
    tmp_path: Path,
) -> None:
    """`[agent] model` and `fallbacks` make the chain; the waits come from the section."""
    config = config_of(
        tmp_path,
        MODELS
        + '[agent]\nmodel = "main"\nfallbacks = ["spare"]\n'
        + "retry_after_cap_seconds = 20\ncooldown_seconds = 90\n",
    )

    chain, policy = failover_chain(config)

    assert (
        ModelChoice("openai", "gpt-4.1-mini", ("work", "personal")),
        ModelChoice("anthropic", "claude-sonnet-4-5", ("default",)),
    ) == chain
    assert (20.0, 90.0, True) == (policy.retry_after_cap, policy.cooldown, policy.fall_back)


def test_a_model_named_explicitly_is_asked_alone_and_never_falls_back(tmp_path: Path) -> None:
    """`--model spare` asks spare only, even though main and a fallback are configured."""
    config = config_of(tmp_path, MODELS + '[agent]\nmodel = "main"\nfallbacks = ["spare"]\n')

    chain, policy = failover_chain(config, explicit="spare")

    assert ((ModelChoice("anthropic", "claude-sonnet-4-5", ("default",)),), False) == (
        chain,
        policy.fall_back,
    )


@pytest.mark.parametrize(
    ("text", "explicit", "expected"),
    [
        (MODELS, None, r"no model is chosen: set \[agent\] model = NAME \(defined: main, spare\)"),
        ("", None, r"\(no \[models.NAME\] table exists\), or pass --model"),
        (
            MODELS,
            "mian",
            r"no \[models.mian\] table defines the model mian \(did you mean main\?\)",
        ),
    ],
)
def test_a_missing_or_unknown_model_is_a_typed_error_that_names_the_way_out(
    tmp_path: Path, text: str, explicit: str | None, expected: str
) -> None:
    """Without a model, or with a misspelt one, the error says what exists and what to set."""
    config = config_of(tmp_path, text)

    with pytest.raises(ModelNotConfiguredError, match=expected):
        failover_chain(config, explicit)


def test_loop_limits_come_from_the_agent_section(tmp_path: Path) -> None:
    """The three limits are read as configured, defaults otherwise."""
    config = config_of(tmp_path, "[agent]\nturn_limit = 12\nsame_failure_limit = 2\n")

    assert LoopLimits(same_failure=2, failed_turns=5, turns=12) == loop_limits(config)
