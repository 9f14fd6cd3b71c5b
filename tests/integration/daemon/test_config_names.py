"""Names the configuration takes from a closed set: registered tools, gates, enumerated words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adapters.config.loading import load_config
from adapters.errors import ConfigError
from adapters.settings.config_file import Config
from adapters.tools.catalog import tool_catalog
from adapters.wiring.tools import first_party_tools
from cli.app import app

runner = CliRunner()


def problem(tmp_path: Path, text: str) -> str:
    """The message load_config raises for `text` as config.toml."""
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    prefix = f"config {path} is invalid: "
    assert str(caught.value).startswith(prefix)
    return str(caught.value).removeprefix(prefix)


def test_the_catalog_names_every_tool_the_runtime_registers() -> None:
    """Configuration is checked against exactly the tools `wiring` builds, in their order."""
    built = [d.name for d in first_party_tools(Config()).registry]

    assert built == [d.name for d in tool_catalog()]


def test_a_misspelt_tool_in_the_approval_map_is_refused_by_the_command(home: Path) -> None:
    """`shell_exec = "deny"` exits 4 naming the key, the file and the tool meant."""
    home.mkdir()
    path = home / "config.toml"
    path.write_text('[tools.approval]\nshell_exec = "deny"\n')

    result = runner.invoke(app, ["config", "check"])

    assert (4, "") == (result.exit_code, result.stdout)
    expected = (
        f"error: config {path} is invalid: tools.approval.shell_exec: unknown tool"
        " (did you mean shell_execute?)"
    )
    assert expected == result.stderr.strip()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[tools.audiences.public]\ndeny = ["shel_execute"]\n',
            (
                'tools.audiences.public.deny[0]: unknown tool "shel_execute"'
                " (did you mean shell_execute?)"
            ),
        ),
        (
            '[tools.audiences.team]\nallow = ["read_file", "read_files"]\n',
            'tools.audiences.team.allow[1]: unknown tool "read_files" (did you mean read_file?)',
        ),
        (
            '[tools.approval]\nbrowser = "request"\n',
            (
                "tools.approval.browser: unknown tool (known tools: read_file, list_directory,"
                " find_files, grep, write_file, edit_file, attach_file, shell_execute,"
                " set_working_directory, tool_output_read, load_tool)"
            ),
        ),
        (
            '[tools]\nfeatures = ["web"]\n',
            'tools.features[0]: unknown feature gate "web" (no registered tool has feature gates)',
        ),
    ],
    ids=["deny-list", "allow-list", "no-close-match", "feature-gate"],
)
def test_every_tool_name_must_be_registered(tmp_path: Path, text: str, expected: str) -> None:
    """Approval keys, allow and deny lists and feature gates accept registered names only."""
    assert expected == problem(tmp_path, text)


def test_every_unknown_name_is_reported_at_once(tmp_path: Path) -> None:
    """Two unknown names in two places are listed together, in file order."""
    text = '[tools]\napproval = { grpe = "report" }\n[tools.audiences.public]\ndeny = ["shel"]\n'

    message = problem(tmp_path, text)

    assert message.startswith("tools.approval.grpe: unknown tool (did you mean grep?); ")
    assert 'tools.audiences.public.deny[0]: unknown tool "shel"' in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[tools.approval]\nread_file = "requested"\n',
            (
                'tools.approval.read_file: expected one of "request", "defer", "report" or "deny",'
                ' got "requested" (did you mean "request"?)'
            ),
        ),
        (
            "[tools.audiences.teams]\n",
            (
                'tools.audiences.teams: expected the key to be one of "personal", "team" or'
                ' "public", got "teams" (did you mean "team"?)'
            ),
        ),
        (
            "[[tools.roots]]\npath = '/srv'\noperations = ['reads']\n",
            (
                'tools.roots[0].operations[0]: expected one of "read", "write", "attach" or'
                ' "declare_project_scope", got "reads" (did you mean "read"?)'
            ),
        ),
        (
            "[[tools.roots]]\npath = '/srv'\naudiences = ['publik']\n",
            (
                'tools.roots[0].audiences[0]: expected one of "personal", "team" or "public",'
                ' got "publik" (did you mean "public"?)'
            ),
        ),
        (
            "[daemon]\naudience = 'personnal'\n",
            (
                'daemon.audience: expected one of "personal", "team" or "public",'
                ' got "personnal" (did you mean "personal"?)'
            ),
        ),
        (
            "[daemon]\nlog_level = 'warn'\n",
            (
                'daemon.log_level: expected one of "debug", "info", "warning" or "error",'
                ' got "warn" (did you mean "warning"?)'
            ),
        ),
        (
            "[journal]\ndurability = 'fulll'\n",
            (
                'journal.durability: expected one of "full" or "normal", got "fulll"'
                ' (did you mean "full"?)'
            ),
        ),
    ],
    ids=[
        "approval-mode",
        "audience-key",
        "root-operation",
        "root-audience",
        "daemon-audience",
        "log-level",
        "durability",
    ],
)
def test_every_enumerated_word_suggests_the_one_meant(
    tmp_path: Path, text: str, expected: str
) -> None:
    """A closed set of words lists its choices and, when one is close, names it."""
    assert expected == problem(tmp_path, text)


def test_registered_names_pass_and_take_effect(home: Path) -> None:
    """Correct names are accepted, and a denied tool is hidden from `tool list`."""
    home.mkdir()
    (home / "config.toml").write_text(
        '[tools.approval]\nshell_execute = "deny"\n'
        '[tools.audiences.team]\nallow = ["read_file", "grep"]\ndeny = ["grep"]\n'
    )

    result = runner.invoke(app, ["tool", "list", "--json"])

    assert 0 == result.exit_code
    rows = {row["name"]: row for row in json.loads(result.stdout)["tools"]}
    assert (False, "approval mode is deny") == (
        rows["shell_execute"]["policy_visible"],
        rows["shell_execute"]["reason"],
    )
