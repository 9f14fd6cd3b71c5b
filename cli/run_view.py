"""How a run shows in the terminal: the streamed answer and a line per call; CLI layer.

`ledgerclaw run` and the in-process `ledgerclaw chat` print through these views; they are
loaded only by those commands, with the agent's records they render.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import orjson

from adapters.api.agent_run import RunView, record_json
from cli import render
from domain.agent import records
from domain.values.conversation import ToolCallRequest


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


def json_view() -> RunView:
    """The view that prints every record of the run as one JSON line."""

    def emit(entries: Sequence[records.AgentRecord]) -> None:
        for entry in entries:
            sys.stdout.write(orjson.dumps(record_json(entry)).decode() + "\n")
        sys.stdout.flush()

    return RunView(on_records=emit)


def terminal_view() -> RunView:
    """The view that streams the answer and prints a line per call and outcome."""
    view = TerminalView()
    return RunView(on_text=view.text, on_records=view.outcomes, on_calls=view.calls)
