"""`ledgerclaw models list`: the configured candidates, their roles and credential states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_runner import invoke

CONFIG = """
[models.main]
provider = "openai"
model = "gpt-4.1-mini"
base_url = "http://127.0.0.1:8000/v1"
profiles = ["work", "personal"]

[models.spare]
provider = "anthropic"
model = "claude-sonnet-4-5"

[models.demo]
provider = "scripted"
model = "demo"
script = "demo.jsonl"

[agent]
model = "main"
fallbacks = ["spare"]
"""
KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def configured(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home with three models, one profile in the file and one read from the environment."""
    home.mkdir()
    (home / "config.toml").write_text(CONFIG)
    secrets = home / "secrets.toml"
    secrets.write_text(
        f'[profiles.work]\napi_key = "{KEY}"\n[profiles.personal]\napi_key_env = "LC_TEST_KEY"\n'
    )
    secrets.chmod(0o600)
    monkeypatch.delenv("LC_TEST_KEY", raising=False)
    return home


@pytest.mark.usefixtures("configured")
def test_models_list_json_names_each_models_role_and_credential_state() -> None:
    """The chain comes first in its order; unset or undefined profiles say `missing`."""
    code, out, _ = invoke("models", "list", "--json", "--offline")

    assert 0 == code
    rows = json.loads(out)
    assert [
        ("main", "first", {"work": "ok", "personal": "missing"}),
        ("spare", "fallback 1", {"default": "missing"}),
        ("demo", "unused", {"default": "not needed"}),
    ] == [(r["name"], r["role"], r["credentials"]) for r in rows]
    assert [("not checked", "--offline", None)] * 3 == [
        (r["resolution"], r["resolution_detail"], r["catalog_size"]) for r in rows
    ]
    assert KEY not in out


@pytest.mark.usefixtures("configured")
def test_models_list_prints_a_table_that_never_shows_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the variable set, both of main's profiles are ok; the table holds no key."""
    monkeypatch.setenv("LC_TEST_KEY", "sk-env-fedcba9876543210")
    monkeypatch.setenv("COLUMNS", "160")

    code, out, _ = invoke("models", "list", "--offline")

    assert 0 == code
    lines = out.splitlines()
    assert "3 model(s)" == lines[0]
    assert "work ok, personal ok" in lines[2]
    assert "not checked (--offline)" in lines[2]
    assert KEY not in out


@pytest.mark.usefixtures("home")
def test_models_list_without_models_says_how_to_add_one() -> None:
    """An empty configuration is answered with the way to configure a model."""
    code, out, _ = invoke("models", "list")

    assert 0 == code
    assert "No model is configured. Add a [models.NAME] table (see docs/agent.md)." == out.strip()


def test_models_list_with_a_bad_config_exits_4_naming_the_problem(home: Path) -> None:
    """A misspelt model name is the usual ConfigError, not a trace."""
    home.mkdir()
    (home / "config.toml").write_text('[agent]\nmodel = "main"\n')

    code, out, err = invoke("models", "list")

    assert 4 == code
    assert 'agent.model: unknown model "main"' in out + err
