"""An empty journal answers every read command as a home without a journal; CLI runner.

`doctor` on a new home stamps a journal file but creates no table; such a file must behave
exactly like a fresh home, on real homes in temporary directories.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from tests.integration.sqlite_helpers import table_names

runner = CliRunner()

READ_COMMANDS = [
    ["session", "list"],
    ["session", "list", "--json"],
    ["session", "list", "--csv"],
    ["session", "show", "abcd1234"],
    ["session", "replay", "abcd1234"],
    ["audit", "attempts", "--json"],
    ["audit", "files"],
    ["audit", "attempts", "--session", "abcd1234"],
    ["stats", "daily"],
    ["stats", "daily", "--json"],
    ["tool", "list", "--session", "abcd1234"],
    ["projections", "status", "--json"],
    ["projections", "verify"],
    ["devices", "list", "--json"],
]


def invoke(home: Path, command: list[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of `command` on `home`, with the home's path blanked."""
    result = runner.invoke(app, command, env={"LEDGERCLAW_HOME": str(home), "COLUMNS": "200"})
    return (
        result.exit_code,
        result.stdout.replace(str(home), "HOME"),
        result.stderr.replace(str(home), "HOME"),
    )


def test_doctor_on_a_new_home_leaves_a_journal_without_tables(tmp_path: Path) -> None:
    """The doctor stamps a new journal but creates no table: the state the tests below read."""
    home = tmp_path / "home"

    assert 0 == invoke(home, ["doctor"])[0]

    assert [] == table_names(home / "ledgerclaw.db")


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a_read_command_on_an_empty_journal_answers_as_on_a_fresh_home(
    tmp_path: Path, command: list[str]
) -> None:
    """The same exit code and output with a journal `doctor` created as with none at all."""
    fresh, empty = tmp_path / "fresh" / "home", tmp_path / "empty" / "home"
    fresh.mkdir(parents=True)
    assert 0 == invoke(empty, ["doctor"])[0]

    assert invoke(fresh, command) == invoke(empty, command)
