"""The `ledgerclaw` command line: parse, call the adapters, render; CLI layer."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import orjson
import typer

from adapters import wiring
from adapters.doctor import run_doctor
from adapters.errors import InvalidToolCallError, PositionOutOfRangeError
from adapters.tools import native
from cli import render
from domain.errors import LedgerclawError
from domain.session.values import Audience

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(
    name="ledgerclaw",
    help="An event-sourced runtime around an AI agent, journaled in one SQLite file.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
session_app = typer.Typer(help="Inspect sessions: list them, replay their timelines and states.")
app.add_typer(session_app, name="session")
tool_app = typer.Typer(help="See which tools are exposed, and call one through the pipeline.")
app.add_typer(tool_app, name="tool")

INTERRUPTED = 130
"""The exit code of a command stopped by Ctrl-C, as shells report it."""
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


@session_app.command("list")
@expected_errors
def list_sessions(json_output: bool = JSON_OPTION) -> None:
    """List every session in the journal, oldest first."""
    sessions = wiring.open_reader(wiring.current_home()).sessions()
    if json_output:
        render.emit_json([s._asdict() for s in sessions])
    else:
        render.session_list(sessions)


@session_app.command("replay")
@expected_errors
def replay(
    session: str = typer.Argument(help="Session id, or a unique prefix of it (4+ hex digits)."),
    at: int | None = typer.Option(
        None, "--at", min=1, help="Print the state rebuilt from the first N events instead."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Show a session's timeline, one line per event, or its state at event N."""
    home = wiring.current_home()
    reader = wiring.open_reader(home)
    session_id = reader.resolve_session(session)
    if at is None:
        entries = reader.timeline(session_id)
        if json_output:
            render.emit_json({"session_id": session_id, "events": [e._asdict() for e in entries]})
        else:
            render.timeline(session_id, entries)
        return
    head = reader.head(session_id)
    if at > head:
        msg = f"--at {at} is past the end of {session_id}, which has {head} events"
        raise PositionOutOfRangeError(msg)
    journal = wiring.open_journal(home)
    try:
        state = journal.session(session_id, version=at).state()
    finally:
        journal.close()
    transcript = reader.transcript(session_id, upto=at)
    if json_output:
        render.emit_json(
            {
                "session_id": session_id,
                "position": at,
                "head": head,
                "state": state.model_dump(mode="json"),
                "transcript": transcript,
            }
        )
    else:
        render.session_state(state, transcript, at, head)


@app.command("doctor")
@expected_errors
def doctor(json_output: bool = JSON_OPTION) -> None:
    """Check the home, its configuration and the journal; create them if missing."""
    home = wiring.current_home()
    with render.progress_bar("decoding events") as update:
        report = run_doctor(home, update)
    if json_output:
        render.emit_json(report.model_dump(mode="json") | {"ok": report.ok})
    else:
        render.doctor(report)
    if not report.ok:
        raise typer.Exit(1)


@tool_app.command("list")
@expected_errors
def list_tools(
    session: str | None = typer.Option(
        None, "--session", help="Show exposure for this session (its audience, loaded tools)."
    ),
    audience: Audience | None = typer.Option(
        None, "--audience", help="Show exposure for this audience instead (default personal)."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """List every registered tool, whether it is exposed, and why not."""
    listing = native.list_tools(wiring.current_home(), session, audience)
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
    tool: str = typer.Argument(help="The tool's name, as `tool list` shows it."),
    session: str | None = typer.Option(
        None, "--session", help="Session id or unique prefix; a new session when omitted."
    ),
    args: str = typer.Option("{}", "--args", help="The call's arguments as a JSON object."),
    approve: bool = typer.Option(
        False, "--approve", help="Approve this call if it needs an operator's consent."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Call one tool through the governed pipeline; the call is journaled like any other."""
    try:
        arguments = orjson.loads(args)
    except orjson.JSONDecodeError as error:
        msg = f"--args is not valid JSON: {error}"
        raise InvalidToolCallError(msg) from None
    if not isinstance(arguments, dict):
        msg = "--args must be a JSON object"
        raise InvalidToolCallError(msg)
    try:
        done = native.call_tool(wiring.current_home(), tool, arguments, session, approve=approve)
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


def main() -> None:
    """Entry point of the `ledgerclaw` console script."""
    app()
