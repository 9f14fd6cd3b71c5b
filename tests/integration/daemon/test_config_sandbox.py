"""The shell sandbox's settings: validated, shown by doctor, and warned about when off."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from adapters.sandbox.launch import abi_version
from tests.cli_runner import invoke
from tests.daemon_harness import CLI, environment, write_config

OFF_WARNING = 'sandbox = "off"'


def sandbox_row() -> dict[str, object]:
    """The doctor's `sandbox` check."""
    _, out, _ = invoke("doctor", "--json")
    checks: list[dict[str, object]] = json.loads(out)["checks"]
    [row] = [check for check in checks if check["name"] == "sandbox"]
    return row


@pytest.mark.skipif(abi_version() < 4, reason="needs Landlock ABI 4")
def test_the_default_sandbox_is_required_and_doctor_says_on_which_kernel(home: Path) -> None:
    """With no setting, doctor shows `required`, the kernel's ABI and a denied network."""
    write_config(home, "")
    row = sandbox_row()
    assert (True, False) == (row["ok"], row["warning"])
    assert f"required, Landlock ABI {abi_version()}, network denied" == row["detail"]


def test_sandbox_off_is_warned_about_by_config_check_and_doctor(home: Path) -> None:
    """`off` passes validation, but config check warns on stderr and in JSON, doctor warns."""
    write_config(home, '[tools.shell]\nsandbox = "off"\n')
    code, _, err = invoke("config", "check")
    assert 0 == code
    assert any(OFF_WARNING in line for line in err.splitlines() if line.startswith("warning:"))
    code, out, _ = invoke("config", "check", "--json")
    assert any(OFF_WARNING in warning for warning in json.loads(out)["warnings"])
    row = sandbox_row()
    assert (True, True) == (row["ok"], row["warning"])
    assert "unconfined" in str(row["detail"])


def test_mcp_serve_warns_once_when_the_sandbox_is_off(home: Path, tmp_path: Path) -> None:
    """A stdio server started with the sandbox off says so in one warning line."""
    root = tmp_path / "root"
    root.mkdir()
    write_config(
        home,
        f'[tools]\nroots = [{{ path = "{root}" }}]\n\n[tools.shell]\nsandbox = "off"\n',
    )
    done = subprocess.run(
        [*CLI, "mcp", "serve"],
        env=environment(home),
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert 1 == len([line for line in warnings if OFF_WARNING in line]), done.stderr


@pytest.mark.parametrize(
    ("setting", "complaint"),
    [
        ('sandbox = "of"', "tools.shell.sandbox"),
        ('network = "allowed"', "tools.shell.network"),
        ('network = { persnal = "allow" }', "tools.shell.network"),
    ],
    ids=["mode", "network", "audience"],
)
def test_a_bad_sandbox_setting_is_refused_by_key(home: Path, setting: str, complaint: str) -> None:
    """A mode, network choice or audience outside its vocabulary exits 4 naming the key."""
    write_config(home, f"[tools.shell]\n{setting}\n")
    code, out, err = invoke("config", "check")
    assert (4, "") == (code, out)
    assert complaint in err
    assert 1 == len(err.strip().splitlines())
