"""The options of every command, `--home` and `--version`, and where they may stand; CLI layer."""

from __future__ import annotations

import typer
from typer import _click as click_core  # typer bundles click; parse_args takes its Context
from typer.core import TyperGroup

from adapters.home import select_home
from cli import render
from cli.common import expected_errors

HOME = "--home"


def hoisted(args: list[str]) -> list[str]:
    """`args` with every `--home PATH` moved to the front, where the root's options go.

    So `ledgerclaw mcp serve --home PATH` works like `ledgerclaw --home PATH mcp serve`, as a
    client's configuration is often written. Nothing after `--` is moved.
    """
    front: list[str] = []
    rest: list[str] = []
    at = 0
    while at < len(args):
        arg = args[at]
        if arg == "--":
            rest.extend(args[at:])
            break
        if arg == HOME and at + 1 < len(args):
            front += args[at : at + 2]
            at += 2
            continue
        (front if arg.startswith(HOME + "=") else rest).append(arg)
        at += 1
    return front + rest


class GlobalOptionsAnywhere(TyperGroup):
    """The root command group: it also takes `--home` after a command's name."""

    def parse_args(self, ctx: click_core.Context, args: list[str]) -> list[str]:
        """Parse the root's options wherever `--home` stands, then the command's."""
        return super().parse_args(ctx, hoisted(args))


def _print_version(asked: bool) -> None:
    if asked:
        from importlib import metadata  # noqa: PLC0415 - slow to import; --version only

        render.line(f"ledgerclaw {metadata.version('ledgerclaw')}")
        raise typer.Exit


@expected_errors
def global_options(
    home: str | None = typer.Option(
        None,
        HOME,
        metavar="PATH",
        help="Work on the home at PATH; it wins over $LEDGERCLAW_HOME and is passed on to"
        " every process the command starts. A relative PATH is taken from the current"
        " directory.",
    ),
    _version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        expose_value=False,
        callback=_print_version,
        help="Print ledgerclaw's version and exit.",
    ),
) -> None:
    """Options that apply to every command."""
    if home is not None:
        select_home(home)
