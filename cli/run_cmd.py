"""`ledgerclaw run`: one agent run in the terminal, streamed; CLI layer."""

from __future__ import annotations

from typing import Any

import typer

from adapters.home import resolve_home
from cli import render
from cli.common import expected_errors


def session_option() -> Any:  # noqa: ANN401 - typer's option marker
    """`--session S`, made anew for each command that takes it."""
    return typer.Option(
        None,
        "--session",
        metavar="S",
        help="Continue this session (id or unique prefix); default: a new one.",
    )


def model_option() -> Any:  # noqa: ANN401 - typer's option marker
    """`--model M`, made anew for each command that takes it."""
    return typer.Option(
        None,
        "--model",
        metavar="M",
        help="Ask this [models.NAME] alone; its profiles rotate, nothing falls back.",
    )


def approve_option() -> Any:  # noqa: ANN401 - typer's option marker
    """`--approve`, made anew for each command that takes it."""
    return typer.Option(
        False, "--approve", help="Approve every call that asks for consent, without asking."
    )


@expected_errors
def run(
    prompt: str = typer.Argument(..., help="What to ask the agent."),
    session: str | None = session_option(),
    model: str | None = model_option(),
    approve: bool = approve_option(),
    json_output: bool = typer.Option(
        False, "--json", help="Print the run's events as JSON lines instead of the answer."
    ),
) -> None:
    """Run the agent once on PROMPT and stream its answer.

    Each tool call is shown with its outcome on one line; the exit code says how the run
    ended (0 natural, 10 provider_error, 11 tool_loop_terminated, 12 strategy_stop, 13
    context_exhausted, 14 crashed, 130 abort).
    """
    from adapters.api.agent_run import run_agent  # noqa: PLC0415 - the agent loads when it runs
    from cli.run_view import json_view, terminal_view  # noqa: PLC0415 - as the agent

    view = json_view() if json_output else terminal_view()
    outcome = run_agent(
        resolve_home(), prompt, session=session, model=model, approve=approve, view=view
    )
    if not json_output:
        render.line(
            f"session {outcome.session_id}  run {outcome.run_id}", "dim", console=render.err
        )
    raise typer.Exit(outcome.exit_code)
