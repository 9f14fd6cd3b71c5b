"""`ledgerclaw run`: one agent run in the terminal, streamed; CLI layer."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import orjson
import typer

from adapters.api.agent_run import RunView, record_json, run_agent
from adapters.wiring.home import current_home
from cli import render
from cli.common import expected_errors
from domain.agent import records
from domain.values.conversation import ToolCallRequest


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


class TerminalView:
    """Streams the answer and prints one line per tool call with its outcome."""

    def __init__(self) -> None:
        self._streaming = False
        self._calls: tuple[ToolCallRequest, ...] = ()
        self._together = False

    def text(self, piece: str) -> None:
        """Write a streamed piece of the answer as it comes."""
        self._streaming = True
        sys.stdout.write(piece)
        sys.stdout.flush()

    def calls(self, calls: Sequence[ToolCallRequest], together: bool) -> None:
        """Note a batch about to run: its calls' lines are printed with their outcomes."""
        del calls
        self._end_text()
        self._together = together

    def outcomes(self, entries: Sequence[records.AgentRecord]) -> None:
        """A line for each outcome a person should see."""
        for entry in entries:
            line = self._line(entry)
            if line is not None:
                self._end_text()
                render.line(*line)

    def _line(self, entry: records.AgentRecord) -> tuple[str, str] | None:
        if isinstance(entry, records.Appended) and entry.message.tool_calls:
            self._calls, self._together = entry.message.tool_calls, False
        if isinstance(entry, records.CallAnswered):
            return self._call_line(entry)
        if isinstance(entry, records.ModelAttemptFailed):
            status = f" HTTP {entry.status}" if entry.status is not None else ""
            who = f"{entry.provider}/{entry.model} ({entry.profile})"
            return f"! {who} failed: {entry.kind}{status}; {entry.action}", "yellow"
        if isinstance(entry, records.ModelAnswered):
            self._end_text()
        if isinstance(entry, records.RunClosed):
            detail = f": {entry.detail}" if entry.detail else ""
            return f"[run ended: {entry.reason}{detail}]", "dim"
        return None

    def _call_line(self, entry: records.CallAnswered) -> tuple[str, str]:
        """`→ NAME ARGUMENTS  OUTCOME`, one line per call (`⇉` when its batch ran together)."""
        call = self._calls[entry.position] if entry.position < len(self._calls) else None
        name = call.name if call is not None else entry.call_id
        arguments = "" if call is None else orjson.dumps(call.arguments).decode()
        shown = render.cut_middle(render.one_line(arguments), 80)
        mark = "⇉" if self._together else "→"
        if entry.not_run is not None:
            return f"{mark} {name} {shown}  not run: {entry.not_run}", "yellow"
        return f"{mark} {name} {shown}  {entry.outcome}", "red" if entry.failed else "green"

    def _end_text(self) -> None:
        if self._streaming:
            sys.stdout.write("\n")
            sys.stdout.flush()
            self._streaming = False


def _json_view() -> RunView:
    def emit(entries: Sequence[records.AgentRecord]) -> None:
        for entry in entries:
            sys.stdout.write(orjson.dumps(record_json(entry)).decode() + "\n")
        sys.stdout.flush()

    return RunView(on_records=emit)


def terminal_view() -> RunView:
    """The view that streams the answer and prints a line per call and outcome."""
    view = TerminalView()
    return RunView(on_text=view.text, on_records=view.outcomes, on_calls=view.calls)


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
    view = _json_view() if json_output else terminal_view()
    outcome = run_agent(
        current_home(), prompt, session=session, model=model, approve=approve, view=view
    )
    if not json_output:
        render.line(
            f"session {outcome.session_id}  run {outcome.run_id}", "dim", console=render.err
        )
    raise typer.Exit(outcome.exit_code)
