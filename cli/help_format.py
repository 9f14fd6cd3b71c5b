"""How every command's help lists its arguments: by the name the usage line gives; CLI layer."""

from __future__ import annotations

import typer
from typer import _click as click_core  # typer bundles click; help formatting takes its types
from typer.core import TyperCommand


class NamedArguments(TyperCommand):
    """A command whose help names each argument plainly: `SESSION`, not `{SESSION}` or `<str>`."""

    def collect_usage_pieces(self, ctx: click_core.Context) -> list[str]:
        """The usage line, a required argument written bare: `SESSION`, not `{SESSION}`."""
        return [
            piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece
            for piece in super().collect_usage_pieces(ctx)
        ]

    def format_options(self, ctx: click_core.Context, formatter: click_core.HelpFormatter) -> None:
        """The Arguments and Options sections, with no type placeholder beside an argument."""
        arguments: list[tuple[str, str]] = []
        options: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "").upper()
                arguments.append((name + ("..." if param.nargs != 1 else ""), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def name_arguments_plainly(app: typer.Typer) -> None:
    """Give every command of `app` and of its groups that help, unless it chose its own."""
    for command in app.registered_commands:
        if command.cls in {None, TyperCommand}:
            command.cls = NamedArguments
    for group in app.registered_groups:
        if group.typer_instance is not None:
            name_arguments_plainly(group.typer_instance)
