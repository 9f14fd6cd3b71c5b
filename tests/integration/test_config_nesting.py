"""Deeply nested configuration files: one line and exit 4 from the real command, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.config.loading import MAX_DEPTH, check_secrets, load_config
from adapters.errors import ConfigError

LEVELS = 2000
SHAPES = {
    "inline-tables": "x = " + "{a=" * LEVELS + "1" + "}" * LEVELS + "\n",
    "arrays": "x = " + "[" * LEVELS + "1" + "]" * LEVELS + "\n",
}
"""2,000 levels: far past tomllib's recursion, orjson's and pydantic's nesting limits."""


def ledgerclaw(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the console entry point as its own process on `home`."""
    return subprocess.run(
        [sys.executable, "-c", "from cli.app import main; main()", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "LEDGERCLAW_HOME": str(home)},
    )


def assert_one_line_error(done: subprocess.CompletedProcess[str], path: Path) -> None:
    """Exit 4, nothing on stdout, one `error:` line on stderr naming the file."""
    assert (4, "") == (done.returncode, done.stdout)
    assert 1 == len(done.stderr.splitlines()), done.stderr
    assert done.stderr.startswith(f"error: {path.stem} {path} is invalid: ")
    assert "nested more than" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_deeply_nested_config_is_one_line_in_every_command(home: Path, shape: str) -> None:
    """Every command exits 4 with one line, starting nothing; doctor reports it in its row."""
    home.mkdir()
    path = home / "config.toml"
    path.write_text(SHAPES[shape])

    for command in (
        ["config", "check"],
        ["session", "list"],
        ["tool", "list"],
        ["daemon", "run"],
        ["mcp", "serve"],
    ):
        assert_one_line_error(ledgerclaw(home, *command), path)
    doctor = ledgerclaw(home, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert (1, "", False) == (doctor.returncode, doctor.stderr, checks["config"]["ok"])
    assert f"config {path} is invalid: " in checks["config"]["detail"]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_deeply_nested_secrets_file_is_one_line_in_every_command(home: Path, shape: str) -> None:
    """Every command that reads secrets.toml exits 4 with one line; doctor reports it."""
    home.mkdir()
    path = home / "secrets.toml"
    path.write_text(SHAPES[shape])
    path.chmod(0o600)

    for command in (["config", "check"], ["tool", "list"], ["daemon", "run"]):
        assert_one_line_error(ledgerclaw(home, *command), path)
    doctor = ledgerclaw(home, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert (1, "", False) == (doctor.returncode, doctor.stderr, checks["secrets"]["ok"])
    assert f"secrets {path} is invalid: " in checks["secrets"]["detail"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x = " + "[" * 40 + "1" + "]" * 40, f"x[0][0][0]…: nested more than {MAX_DEPTH} levels"),
        (
            "[tools]\nx = " + "{a=" * 40 + "1" + "}" * 40,
            f"tools.x.a.a…: nested more than {MAX_DEPTH} levels",
        ),
    ],
    ids=["arrays", "tables"],
)
def test_nesting_that_tomllib_reads_is_refused_by_key(
    tmp_path: Path, text: str, expected: str
) -> None:
    """Nesting the parser survives is refused before validation, naming where it starts."""
    path = tmp_path / "config.toml"
    path.write_text(text + "\n")

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert f"config {path} is invalid: {expected} deep" == str(caught.value)


def test_nesting_in_secrets_never_echoes_a_value(tmp_path: Path) -> None:
    """A too-deep secrets file is refused by key, without any of its values."""
    path = tmp_path / "secrets.toml"
    path.write_text("[redact]\nvalues = " + "[" * 40 + "'hunter22'" + "]" * 40 + "\n")
    path.chmod(0o600)

    with pytest.raises(ConfigError) as caught:
        check_secrets(path)

    assert f"secrets {path} is invalid: redact.values[0][0]…" in str(caught.value)
    assert "hunter22" not in str(caught.value)
