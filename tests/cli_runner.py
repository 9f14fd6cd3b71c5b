"""The ledgerclaw command run in process through typer's test runner, for the CLI tests."""

from __future__ import annotations

from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()


def invoke(*args: str) -> tuple[int, str, str]:
    """Run the command; return exit code, stdout and stderr."""
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr
