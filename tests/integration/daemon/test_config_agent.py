"""The `[agent]` and `[models.*]` sections: read from TOML, checked strictly, named exactly."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.config.loading import check_config, load_config
from adapters.errors import ConfigError
from adapters.settings.agent import ProviderKind
from cli.app import app

runner = CliRunner()

MODELS = """
[models.main]
provider = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:8000/v1"
profiles = ["work", "personal"]
context_window = 32000

[models.spare]
provider = "anthropic"
model = "claude-sonnet-4-5"
"""


def problem(tmp_path: Path, text: str) -> str:
    """The message load_config raises for `text` as config.toml, without its prefix."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value).removeprefix(f"config {path} is invalid: ")


def test_models_and_the_agent_section_read_from_toml(tmp_path: Path) -> None:
    """Every setting of both sections is taken from the file."""
    path = tmp_path / "config.toml"
    path.write_text(
        MODELS
        + """
[agent]
model = "main"
fallbacks = ["spare"]
retry_after_cap_seconds = 30
cooldown_seconds = 120
same_failure_limit = 4
failed_turns_limit = 6
turn_limit = 80
"""
    )

    config = load_config(path)

    main = config.models["main"]
    assert (ProviderKind.OPENAI, ("work", "personal"), 32_000, "http://127.0.0.1:8000/v1") == (
        main.provider,
        main.profiles,
        main.context_window,
        main.base_url,
    )
    assert ("default",) == config.models["spare"].profiles
    agent = config.agent
    assert ("main", ("spare",), 30.0, 120.0, 4, 6, 80) == (
        agent.model,
        agent.fallbacks,
        agent.retry_after_cap_seconds,
        agent.cooldown_seconds,
        agent.same_failure_limit,
        agent.failed_turns_limit,
        agent.turn_limit,
    )


def test_a_misspelt_model_name_is_refused_with_the_name_meant(tmp_path: Path) -> None:
    """`model = "mian"` names the key and suggests the table that exists."""
    assert 'agent.model: unknown model "mian" (did you mean main?)' == problem(
        tmp_path, MODELS + '[agent]\nmodel = "mian"\n'
    )


def test_a_fallback_without_any_models_table_says_none_is_defined(tmp_path: Path) -> None:
    """A fallback naming a model when no table exists says so."""
    assert (
        'agent.fallbacks[0]: unknown model "spare" (no [models.NAME] table defines one)'
        == problem(tmp_path, '[agent]\nfallbacks = ["spare"]\n')
    )


def test_the_first_model_cannot_also_be_its_own_fallback(tmp_path: Path) -> None:
    """Falling back to the model that just failed would ask it twice."""
    assert "agent.fallbacks[0]: the first model cannot be its own fallback" == problem(
        tmp_path, MODELS + '[agent]\nmodel = "main"\nfallbacks = ["main"]\n'
    )


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('provider = "opnai"\nmodel = "m"', "models.x.provider"),
        ('provider = "openai"\nmodel = "m"\nbase_url = "ftp://host"', "models.x.base_url"),
        ('provider = "openai"\nmodel = "m"\nprofiles = []', "models.x.profiles"),
        ('provider = "openai"\nmodel = "m"\ncontext_window = 100', "models.x.context_window"),
        ('provider = "openai"\nmodel = "m"\napi_key = "sk-1"', "models.x.api_key"),
        ('provider = "scripted"\nmodel = "m"', "script is required"),
        ('provider = "openai"\nmodel = "m"\nscript = "s.jsonl"', "script is required"),
        ('provider = "recorded"\nmodel = "m"', "recording is required"),
        ('provider = "openai"\nmodel = "m"\nrecording = "ses_1a2b"', "recording is required"),
        (
            'provider = "openai"\nmodel = "m"\ncontext_window = 2000\noutput_reserve = 2000',
            "output_reserve must be smaller",
        ),
    ],
)
def test_a_bad_model_table_is_refused_naming_what_is_wrong(
    tmp_path: Path, table: str, expected: str
) -> None:
    """Unknown providers, keys (a key in config.toml above all), and limits are typed errors."""
    assert expected in problem(tmp_path, f"[models.x]\n{table}\n")


def test_a_loop_limit_below_one_is_refused(tmp_path: Path) -> None:
    """A turn limit of zero would end every run before its first turn."""
    assert "agent.turn_limit" in problem(tmp_path, "[agent]\nturn_limit = 0\n")


def test_config_check_reports_the_agent_and_each_model(home: Path) -> None:
    """`config check` names the first model, its fallbacks and every model table."""
    home.mkdir()
    (home / "config.toml").write_text(MODELS + '[agent]\nmodel = "main"\nfallbacks = ["spare"]\n')

    result = runner.invoke(app, ["config", "check"])

    assert 0 == result.exit_code
    assert [
        "  agent: model main, fallbacks spare, at most 50 turns",
        "  models: 2",
        (
            "    main: openai gpt-4.1-mini at http://127.0.0.1:8000/v1, profiles work, personal,"
            " window 32,000"
        ),
        "    spare: anthropic claude-sonnet-4-5, profiles default, window 128,000",
    ] == [
        line
        for line in result.output.splitlines()
        if line.startswith(("  agent", "  model", "    m", "    s"))
    ]


def test_config_check_warns_of_each_profile_secrets_toml_does_not_define(tmp_path: Path) -> None:
    """A model naming a profile without a `[profiles.NAME]` table is a warning, not a refusal."""
    config_path = tmp_path / "config.toml"
    config_path.write_text(MODELS)
    secrets_path = tmp_path / "secrets.toml"
    secrets_path.write_text('[profiles.work]\napi_key_env = "OPENAI_API_KEY"\n')
    secrets_path.chmod(0o600)

    warnings = [w for w in check_config(config_path, secrets_path).warnings if "profile" in w]

    expected = [
        f"model {model} names the credential profile {profile}, which {secrets_path} does not"
        f" define: add [profiles.{profile}] with api_key or api_key_env there"
        for model, profile in (("main", "personal"), ("spare", "default"))
    ]
    assert expected == warnings
