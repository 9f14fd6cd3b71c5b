"""Shell escapes E1-E6 through `ledgerclaw tool call`: refused or asked about, nothing read.

`ROOT` is the configured trusted root holding `ok.txt`; `OUT` is a directory beside it, outside
every root, holding `secret.txt`; the home holds `secrets.toml` (a redaction value), and a
`keys/` file. Each escape once let a reviewed-safe command, which runs without approval,
print a file it must never read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()

OUTSIDE_TEXT = "OUTSIDE-SECRET-7Q2X"
SECRET_VALUE = "HUNTER-77-ZEBRA-42"
KEY_TEXT = "PRIVATE-KEY-9W8V"
REFUSED = {"no_approver", "outside_roots", "protected_path", "link_boundary"}
"""How a call that is denied, or needs an approval no one can give here, ends."""


@dataclass(frozen=True)
class Layout:
    """The directories of one escape scenario."""

    home: Path
    root: Path
    out: Path


@pytest.fixture
def layout(home: Path, tmp_path: Path) -> Layout:
    """A home whose config trusts ROOT for reading and writing, and a secret-holding OUT."""
    assert tmp_path / "home" == home, "the commands name the home as ../home from ROOT"
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("plain text\n")
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text(OUTSIDE_TEXT + "\n")
    home.mkdir()
    (home / "config.toml").write_text(
        f"[[tools.roots]]\npath = '{root}'\noperations = ['read', 'write']\n"
    )
    secrets = home / "secrets.toml"
    secrets.write_text(f'[redact]\nvalues = ["{SECRET_VALUE}"]\n')
    secrets.chmod(0o600)
    (home / "keys").mkdir()
    (home / "keys" / "device.key").write_text(KEY_TEXT + "\n")
    return Layout(home=home, root=root, out=out)


def shell(command: str, cwd: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """`tool call shell_execute` with `command` in `cwd`; the exit code and the JSON result."""
    arguments = json.dumps({"command": command, "cwd": str(cwd)})
    result = runner.invoke(
        app, ["tool", "call", "shell_execute", "--args", arguments, "--json", *extra]
    )
    return result.exit_code, json.loads(result.stdout)


def assert_refused_unread(code: int, result: dict[str, Any], *texts: str) -> None:
    """The call ended refused, and none of `texts` shows anywhere in its result."""
    assert (1, True) == (code, result.get("denial") in REFUSED), result
    shown = json.dumps(result)
    squeezed = "".join(shown.split())
    for text in texts:
        assert text not in shown
        assert text not in squeezed


ESCAPES_OUTSIDE = [
    "file -bm../outside/secret.txt ok.txt",
    "file -bm../outside ok.txt",
    "file -m ok.txt:../outside/secret.txt ok.txt",
    "file --magic-file=ok.txt:../outside/secret.txt ok.txt",
    "grep -cif../outside/secret.txt ok.txt",
    "grep -f ../outside/secret.txt ok.txt",
    "du -X../outside/secret.txt ok.txt",
]


@pytest.mark.parametrize("template", ESCAPES_OUTSIDE)
def test_a_file_outside_the_root_is_not_read_through_an_option(
    layout: Layout, template: str
) -> None:
    """E1, E2 and E5: a value in a cluster or a colon list is checked; nothing is printed."""
    code, result = shell(template, layout.root)
    assert_refused_unread(code, result, OUTSIDE_TEXT)


@pytest.mark.parametrize(
    "template",
    [
        "file -bm../home/secrets.toml ok.txt",
        "file -m ok.txt:../home/config.toml ok.txt",
        "file -bm../home/keys/device.key ok.txt",
        "file --magic-file=ok.txt:../home/keys ok.txt",
        "file -bm../home/secrets.toml ok.txt 2>&1 | grep -o '[A-Z0-9-]'",
    ],
    ids=["secrets", "config-in-a-list", "keys-file", "keys-directory", "one-char-per-line"],
)
def test_a_protected_file_is_not_read_through_an_option(layout: Layout, template: str) -> None:
    """E3 and E4: the secret, the keys and the config stay unread, even char by char."""
    code, result = shell(template, layout.root)
    assert_refused_unread(code, result, SECRET_VALUE, KEY_TEXT)


def test_an_approved_link_is_checked_from_the_links_directory(layout: Layout) -> None:
    """E6: `ln -s ../outside/secret.txt ../12` in `sub` names OUT's file; no link is made."""
    code, result = shell("ln -s ../outside/secret.txt ../12", layout.root / "sub", "--approve")
    assert (1, "outside_roots") == (code, result.get("denial")), result
    assert not os.path.lexists(layout.root / "12")


@pytest.mark.parametrize(
    "command",
    ["cat 12</dev/null", "cat 12>/dev/null", "file -bm12 ok.txt", "grep -f12 ok.txt"],
)
def test_a_leaving_link_is_not_read_through_a_number_or_a_cluster(
    layout: Layout, command: str
) -> None:
    """E6: digits before a redirection name a file, and so does a cluster's value."""
    (layout.root / "12").symlink_to("../outside/secret.txt")
    code, result = shell(command, layout.root)
    assert_refused_unread(code, result, OUTSIDE_TEXT)


def test_a_word_the_policy_cannot_resolve_needs_approval(layout: Layout) -> None:
    """An expansion is never taken as inside the root: the call needs an approver."""
    code, result = shell("cat $PWD/../outside/secret.txt", layout.root)
    assert (1, "no_approver") == (code, result.get("denial")), result
    assert OUTSIDE_TEXT not in json.dumps(result)


def test_reviewed_safe_commands_still_run_without_approval(layout: Layout) -> None:
    """The checks above refuse only what they must: a plain listing and search still run."""
    code, result = shell("ls -la && grep -c plain ok.txt && file -b ok.txt", layout.root)
    assert (0, "success") == (code, result["outcome"]), result
    assert "ok.txt" in result["text"]
