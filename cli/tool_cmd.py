"""`ledgerclaw tool`: list the tools, and call one through the governed pipeline; CLI layer."""

from __future__ import annotations

import typer

from adapters.home import resolve_home
from cli import render
from cli.common import JSON_OPTION, expected_errors
from domain.values.audience import Audience

INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C, as shells report it."""

tool_app = typer.Typer(help="List the tools, and call one through the governed pipeline.")


@tool_app.command("list")
@expected_errors
def list_tools(
    session: str | None = typer.Option(
        None,
        "--session",
        metavar="SESSION",
        help="Show exposure for this session (its audience, loaded tools).",
    ),
    audience: Audience | None = typer.Option(
        None,
        "--audience",
        metavar="AUDIENCE",
        help="Show exposure for this audience instead: personal (the default), team or public.",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """List every registered tool, whether it is exposed, and why not."""
    from adapters.api import tool_calls  # noqa: PLC0415 - loaded when used

    listing = tool_calls.list_tools(resolve_home(), session, audience)
    if json_output:
        render.emit_json(
            {
                "audience": listing.audience,
                "session_id": listing.session_id,
                "tools": listing.rows,
            }
        )
    else:
        render.tool_list(listing.audience, listing.session_id, listing.rows)


@tool_app.command("call")
@expected_errors
def call_tool(
    tool: str = typer.Argument(metavar="TOOL", help="The tool's name, as `tool list` shows it."),
    session: str | None = typer.Option(
        None,
        "--session",
        metavar="SESSION",
        help="Session id or unique prefix; a new session when omitted.",
    ),
    args: str = typer.Option(
        "{}", "--args", metavar="JSON", help="The call's arguments as a JSON object."
    ),
    approve: bool = typer.Option(
        False, "--approve", help="Approve this call if it needs an operator's consent."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Call one tool through the governed pipeline.

    The call is journaled like any other.
    """
    from adapters.api import tool_calls  # noqa: PLC0415 - loaded when used

    arguments = tool_calls.arguments_from_json(args)
    try:
        done = tool_calls.call_tool(resolve_home(), tool, arguments, session, approve=approve)
    except KeyboardInterrupt:
        render.error("interrupted: the call ended as cancelled and its run as aborted")
        raise typer.Exit(INTERRUPTED) from None
    result = done.result
    if json_output:
        render.emit_json(
            {"session_id": done.session_id, "run_id": done.run_id} | result.model_dump(mode="json")
        )
    else:
        render.tool_result(done.session_id, result)
    if result.is_error:
        raise typer.Exit(1)
