"""Credential profiles in secrets.toml: read strictly, resolved when used, redacted everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from adapters.config.credentials import CredentialMissingError, credential
from adapters.config.loading import check_secrets
from adapters.config.secrets import load_secrets
from adapters.errors import ConfigError
from tests.cli_runner import invoke

KEY = "sk-test-0123456789abcdef"
ENV_KEY = "sk-env-fedcba9876543210"
PROFILES = f"""
[profiles.work]
api_key = "{KEY}"

[profiles.personal]
api_key_env = "LEDGERCLAW_TEST_KEY"
"""


def write_secrets(directory: Path, text: str) -> Path:
    """An owner-only secrets.toml with `text` in `directory`."""
    directory.mkdir(exist_ok=True)
    path = directory / "secrets.toml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_a_profile_gives_its_key_from_the_file_or_from_the_environment(tmp_path: Path) -> None:
    """`api_key` is used as it is; `api_key_env` is read from the environment when used."""
    path = write_secrets(tmp_path, PROFILES)

    assert (KEY, ENV_KEY) == (
        credential(path, "work", {}),
        credential(path, "personal", {"LEDGERCLAW_TEST_KEY": ENV_KEY}),
    )


@pytest.mark.parametrize(
    ("profile", "environ", "expected"),
    [
        ("team", {}, "credential profile team is not in .*: add \\[profiles.team\\] there"),
        ("personal", {}, "reads the environment variable LEDGERCLAW_TEST_KEY, which is unset"),
        ("personal", {"LEDGERCLAW_TEST_KEY": "x"}, "LEDGERCLAW_TEST_KEY is too short to be a key"),
    ],
)
def test_a_profile_that_cannot_give_a_key_says_which_and_why(
    tmp_path: Path, profile: str, environ: dict[str, str], expected: str
) -> None:
    """A missing profile, an unset variable and a too-short value are typed errors."""
    path = write_secrets(tmp_path, PROFILES)

    with pytest.raises(CredentialMissingError, match=expected):
        credential(path, profile, environ)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f'[profiles.work]\napi_key = "{KEY}"\napi_key_env = "X"\n', "exactly one of"),
        ("[profiles.work]\n", "exactly one of"),
        ('[profiles.work]\napi_key_env = "not a name"\n', "profiles.work.api_key_env"),
        ('[profiles.work]\ntoken = "abcdefgh"\n', "profiles.work.token"),
    ],
)
def test_a_malformed_profile_is_refused_without_showing_its_value(
    tmp_path: Path, text: str, expected: str
) -> None:
    """Bad profiles are ConfigErrors naming the key; no secret value is echoed."""
    path = write_secrets(tmp_path, text)

    with pytest.raises(ConfigError, match=expected) as caught:
        check_secrets(path)
    assert KEY not in str(caught.value)
    assert "abcdefgh" not in str(caught.value)


def test_every_profile_key_is_a_redacted_value(tmp_path: Path) -> None:
    """Keys given in the file and keys read from the environment are both redacted."""
    path = write_secrets(tmp_path, '[redact]\nvalues = ["hunter22"]\n' + PROFILES)

    values = load_secrets(path, (), {"LEDGERCLAW_TEST_KEY": ENV_KEY})

    assert {"hunter22", KEY, ENV_KEY} == set(values)
    assert 2 == check_secrets(path)


def test_a_tool_result_never_shows_a_profile_key(home: Path) -> None:
    """A file holding a profile's key is read back with the key redacted."""
    write_secrets(home, PROFILES)
    code, out, _ = invoke(
        "tool",
        "call",
        "write_file",
        "--args",
        json.dumps({"path": "k.txt", "content": KEY}),
        "--json",
    )
    assert 0 == code
    session = json.loads(out)["session_id"]

    code, out, _ = invoke(
        "tool", "call", "read_file", "--session", session, "--args", '{"path": "k.txt"}', "--json"
    )

    assert 0 == code
    assert KEY not in out
    assert "[redacted]" in json.loads(out)["text"]
