"""Terminal and JSON rendering for the `ledgerclaw` command; CLI layer."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import Any

import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from adapters.doctor import DoctorReport
from adapters.journal.reader import TimelineEntry
from domain.session.state import SessionState
from domain.tools.result import ToolResult

out = Console(highlight=False, soft_wrap=False, markup=False)
"""Markup is off: paths, details and keys come from agents and users, so `[...]` in them
must print as written, never be read as styling."""
err = Console(stderr=True, highlight=False)

MESSAGE_PREVIEW = 120
TRANSCRIPT_TAIL = 50
"""How many of the latest messages the human state view shows."""


def emit_json(value: Any) -> None:  # noqa: ANN401 - any JSON-ready value
    """Print `value` as JSON on stdout and nothing else."""
    data = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS)
    print(data.decode())  # noqa: T201 - machine output bypasses rich markup


def error(message: str) -> None:
    """Print an expected error on stderr, without a stack trace."""
    err.print(Text(f"error: {message}", style="bold red"), soft_wrap=True)


@contextmanager
def progress_bar(label: str) -> Iterator[Any]:
    """A progress bar on stderr, shown only on a terminal; yields an `update(done, total)`."""
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
    task = bar.add_task(label, total=None)
    with bar:

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


_OPAQUE_ID = re.compile(r"^((?:ses|run|att|dev|spl)_[0-9a-f]{8})[0-9a-f]{24}$")


def short_id(value: object) -> str:
    """An opaque id cut to its prefix and 8 hex digits (still a usable prefix); else as is."""
    text = str(value)
    match = _OPAQUE_ID.match(text)
    return match.group(1) if match else text


def minute(stamp: str) -> str:
    """An ISO time cut to the minute, with a space instead of the T."""
    return stamp.replace("T", " ")[:16]


def _clock(stamp: str) -> str:
    return stamp[11:23]


def one_line(text: str) -> str:
    """`text`, JSON-quoted if it holds a character (a newline, say) that would break the line."""
    if not text.isprintable():
        return orjson.dumps(text).decode()
    return text


def shorten_middle(text: str, width: int) -> str:
    """`text` cut to `width` characters by taking out its middle (an ellipsis marks where).

    The end keeps two thirds: a path's file name and a command's last words say the most.
    """
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 3
    tail = width - 1 - head
    return f"{text[:head]}…{text[len(text) - tail :]}"


TIMELINE_VALUE = 240
"""The most characters a timeline shows of an attempt's arguments or a command."""
_LONG_FIELDS = frozenset({"arguments", "command"})


def _field(key: str, value: Any) -> str:  # noqa: ANN401 - any stored JSON value
    if isinstance(value, dict | list):
        text = orjson.dumps(value).decode()
    else:
        text = one_line(short_id(value))
    if key in _LONG_FIELDS:
        text = shorten_middle(text, TIMELINE_VALUE)
    return f"{key}={text}"


def _fields(fields: dict[str, Any]) -> str:
    return "  ".join(_field(key, value) for key, value in fields.items())


def timeline(session_id: str, entries: Sequence[TimelineEntry]) -> None:
    """A session's events, exactly one line each, in aligned columns.

    Plain lines rather than a table: a long session prints in a blink, and every event
    stays on its own line for grep and less.
    """
    span = f"{entries[0].recorded_at[:10]} .. {entries[-1].recorded_at[:10]}" if entries else ""
    out.print(f"{session_id}: {len(entries)} events, {span} UTC", style="bold")
    names = [e.event.partition(".")[2] or e.event for e in entries]
    pos_width = max(len("#"), *(len(str(e.position)) for e in entries))
    log_width = max(len("log"), *(len(str(e.log_position)) for e in entries))
    name_width = max(len("event"), *(len(name) for name in names))
    header = (
        f"{'#':>{pos_width}}  {'log':>{log_width}}  {'time':<12}  {'event':<{name_width}}  fields"
    )
    out.print(header, style="bold", soft_wrap=True)
    lines = [
        f"{e.position:>{pos_width}}  {e.log_position:>{log_width}}  {_clock(e.recorded_at):<12}  "
        f"{name:<{name_width}}  {_fields(e.fields)}".rstrip()
        for e, name in zip(entries, names, strict=True)
    ]
    out.file.write("\n".join(lines) + "\n")


def _state_summary(state: SessionState) -> Table:
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="dim")
    summary.add_column()
    storage = state.storage
    context = state.working_context
    for label, value in (
        ("key", state.session_key),
        ("kind", state.kind.value),
        ("audience", state.audience.value),
        ("parent", state.parent_session_id or "-"),
        ("storage", f"v{storage.layout_version} {storage.envelope_root}" if storage else "unbound"),
        ("writer", state.writer or "-"),
        ("project", context.project_directory or "-"),
        ("recent files", ", ".join(context.recent_files) or "-"),
        ("messages", str(state.message_count)),
    ):
        summary.add_row(label, value)
    return summary


def _runs(state: SessionState) -> Table:
    runs = Table(title="runs", title_justify="left")
    for column in ("run", "client run", "ended"):
        runs.add_column(column)
    for run in state.runs.values():
        writer = " (writer)" if run.run_id == state.writer else ""
        runs.add_row(short_id(run.run_id) + writer, run.client_run_id or "", _value(run.ended))
    return runs


def _value(member: StrEnum | None) -> str:
    return member.value if member is not None else ""


def _attempts(state: SessionState) -> Table:
    earlier = state.ended_attempts - sum(1 for a in state.attempts.values() if a.end is not None)
    title = "authorization attempts" + (
        f" ({earlier} earlier ended ones not shown)" if earlier else ""
    )
    attempts = Table(title=title, title_justify="left")
    for column in ("attempt", "call", "tool", "status", "decision", "end", "outcome"):
        attempts.add_column(column, no_wrap=column in ("attempt", "status"))
    for a in state.attempts.values():
        attempts.add_row(
            short_id(a.attempt_id),
            a.call_id,
            a.tool_name,
            a.status.value,
            _value(a.decision),
            _value(a.end),
            _value(a.outcome),
        )
    return attempts


def _transcript(messages: Sequence[dict[str, Any]]) -> Table:
    shown = messages[-TRANSCRIPT_TAIL:]
    skipped = len(messages) - len(shown)
    if skipped:
        out.print(f"transcript: last {len(shown)} of {len(messages)} messages (--json has all)")
    transcript = Table(title=None if skipped else "transcript", title_justify="left")
    transcript.add_column("#", justify="right")
    transcript.add_column("role")
    transcript.add_column("content", overflow="fold")
    for index, message in enumerate(shown, start=skipped + 1):
        content = str(message.get("content", ""))
        if len(content) > MESSAGE_PREVIEW:
            content = content[:MESSAGE_PREVIEW] + "…"
        calls = ", ".join(f"{c['name']}({c['call_id']})" for c in message.get("tool_calls", ()))
        answers = f"[{message['call_id']}] " if message.get("call_id") else ""
        text = answers + content + (f" -> {calls}" if calls else "")
        transcript.add_row(str(index), str(message.get("role", "")), text)
    return transcript


def session_state(
    state: SessionState, transcript: Sequence[dict[str, Any]], position: int, head: int
) -> None:
    """A session's state rebuilt at one position of its stream."""
    out.print(f"{state.session_id} at event {position} of {head}", style="bold")
    out.print(_state_summary(state))
    if state.runs:
        out.print(_runs(state))
    if state.attempts:
        out.print(_attempts(state))
    if transcript:
        out.print(_transcript(transcript))


def doctor(report: DoctorReport) -> None:
    """The doctor's checks as a table."""
    table = Table(title=f"ledgerclaw doctor: {report.home}", title_justify="left")
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail", overflow="fold")
    for check in report.checks:
        verdict = Text("ok", style="green") if check.ok else Text("FAIL", style="bold red")
        if check.ok and check.warning:
            verdict = Text("warn", style="yellow")
        table.add_row(check.name, verdict, check.detail)
    out.print(table)
    summary = "healthy" if report.ok else "problems found"
    out.print(f"{report.events} events, {report.snapshots} snapshots: {summary}")


def tool_list(audience: str, session_id: str | None, rows: Sequence[dict[str, Any]]) -> None:
    """One row per tool: how it loads and runs, its approval mode, and its exposure."""
    title = f"tools for {audience} sessions" + (f" (session {session_id})" if session_id else "")
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for column in ("tool", "loading", "concurrency", "approval", "exposed", "why"):
        table.add_column(column)
    for row in rows:
        exposed = "yes" if row["in_request"] else ("loadable" if row["policy_visible"] else "no")
        table.add_row(
            row["name"],
            row["loading"],
            row["concurrency"],
            row["approval"],
            exposed,
            row["reason"],
        )
    out.print(table)


def tool_result(session_id: str, result: ToolResult) -> None:
    """The result's text, then one line on how the attempt ended."""
    print(result.text)  # noqa: T201 - tool output is printed as it is, without markup
    ending = result.outcome or result.denial or result.remediation or ""
    err.print(
        f"session {session_id}  call {result.call_id}  attempt {short_id(result.attempt_id)}  "
        f"{result.end}: {ending}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
