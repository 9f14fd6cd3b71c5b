"""What every command module shares: turning expected errors into a line and a code; CLI layer."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import ParamSpec, TypeVar

import typer
from rich.text import Text

from cli import render
from domain.errors import LedgerclawError

P = ParamSpec("P")
R = TypeVar("R")

JSON_OPTION = typer.Option(False, "--json", help="Print machine-readable JSON only.")


def expected_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn an expected ledgerclaw error into a one-line message and its exit code."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except LedgerclawError as failure:
            render.error(str(failure))
            raise typer.Exit(failure.exit_code) from None

    return wrapper


def print_warnings(messages: Iterable[str]) -> None:
    """Print each warning as one `warning: …` line on stderr; it stops nothing."""
    for message in messages:
        render.err.print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)
