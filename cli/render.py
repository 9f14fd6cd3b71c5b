"""Terminal and JSON rendering for the `ledgerclaw` command; CLI layer.

Every command imports it, so what it renders is named for the type checker only, and the
progress bar loads when a command shows one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console
from rich.text import Text

from cli import tables

if TYPE_CHECKING:
    from adapters.api.doctor import DoctorReport
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


def line(text: str, style: str | None = None, *, console: Console = out) -> None:
    """Print one line as it is: never wrapped, so a command or a path in it stays whole."""
    console.print(Text(text, style=style or ""), soft_wrap=True)


def pairs(rows: Sequence[tuple[str, str]]) -> None:
    """Labelled values, one per line, the values aligned and never wrapped."""
    width = max((len(label) for label, _ in rows), default=0) + 2
    for label, value in rows:
        shown = Text(f"{label:<{width}}", style="dim")
        shown.append(value)
        shown.rstrip()
        out.print(shown, soft_wrap=True)


@contextmanager
def progress_bar(label: str) -> Iterator[Any]:
    """A progress bar on stderr, shown only on a terminal; yields an `update(done, total)`."""
    from rich.progress import (  # noqa: PLC0415 - loaded by the commands that show one
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

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


def cut_middle(text: str, width: int) -> str:
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
        text = cut_middle(text, TIMELINE_VALUE)
    return f"{key}={text}"


def _fields(fields: dict[str, Any]) -> str:
    return "  ".join(_field(key, value) for key, value in fields.items())


def timeline(session_id: str, entries: Sequence[TimelineEntry]) -> None:
    """A session's events, exactly one line each, in aligned columns.

    Plain lines rather than a table: a long session prints in a blink, and every event
    stays on its own line for grep and less.
    """
    span = f"{entries[0].recorded_at[:10]} .. {entries[-1].recorded_at[:10]}" if entries else ""
    line(f"{session_id}: {len(entries)} events, {span} UTC", "bold")
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


def _state_summary(state: SessionState) -> list[tuple[str, str]]:
    storage = state.storage
    context = state.working_context
    return [
        ("key", one_line(state.session_key)),
        ("kind", state.kind.value),
        ("audience", state.audience.value),
        ("parent", state.parent_session_id or "-"),
        ("storage", f"v{storage.layout_version} {storage.envelope_root}" if storage else "unbound"),
        ("writer", state.writer or "-"),
        ("project", context.project_directory or "-"),
        ("recent files", ", ".join(context.recent_files) or "-"),
        ("messages", str(state.message_count)),
    ]


RUN_COLUMNS = (
    tables.ident("run", short_id),
    tables.word("client run", optional=True),
    tables.word("writer"),
    tables.word("ended"),
)


def _runs(state: SessionState) -> None:
    rows = [
        {
            "run": str(run.run_id),
            "client run": one_line(run.client_run_id or ""),
            "writer": "yes" if run.run_id == state.writer else "",
            "ended": _value(run.ended),
        }
        for run in state.runs.values()
    ]
    tables.listing(out, RUN_COLUMNS, rows, "runs")


def _value(member: StrEnum | None) -> str:
    return member.value if member is not None else ""


ATTEMPT_COLUMNS = (
    tables.ident("attempt", short_id),
    tables.word("call", optional=True),
    tables.word("tool"),
    tables.word("status"),
    tables.word("decision"),
    tables.word("end", optional=True),
    tables.word("outcome"),
)


def _attempts(state: SessionState) -> None:
    earlier = state.ended_attempts - sum(1 for a in state.attempts.values() if a.end is not None)
    title = "authorization attempts" + (
        f" ({earlier} earlier ended ones not shown)" if earlier else ""
    )
    rows = [
        {
            "attempt": str(a.attempt_id),
            "call": one_line(a.call_id),
            "tool": a.tool_name,
            "status": a.status.value,
            "decision": _value(a.decision),
            "end": _value(a.end),
            "outcome": _value(a.outcome),
        }
        for a in state.attempts.values()
    ]
    tables.listing(out, ATTEMPT_COLUMNS, rows, title)


TRANSCRIPT_COLUMNS = (tables.number("#"), tables.word("role"), tables.text("content"))


def _transcript(messages: Sequence[dict[str, Any]]) -> None:
    shown = messages[-TRANSCRIPT_TAIL:]
    skipped = len(messages) - len(shown)
    title = "transcript"
    if skipped:
        title = f"transcript: last {len(shown)} of {len(messages)} messages (--json has all)"
    rows = []
    for index, message in enumerate(shown, start=skipped + 1):
        content = str(message.get("content", ""))
        if len(content) > MESSAGE_PREVIEW:
            content = content[:MESSAGE_PREVIEW] + "…"
        calls = ", ".join(f"{c['name']}({c['call_id']})" for c in message.get("tool_calls", ()))
        answers = f"[{message['call_id']}] " if message.get("call_id") else ""
        text = (answers + content + (f" -> {calls}" if calls else "")).strip()
        rows.append(
            {"#": str(index), "role": str(message.get("role", "")), "content": one_line(text)}
        )
    tables.listing(out, TRANSCRIPT_COLUMNS, rows, title)


def session_state(
    state: SessionState, transcript: Sequence[dict[str, Any]], position: int, head: int
) -> None:
    """A session's state rebuilt at one position of its stream."""
    line(f"{state.session_id} at event {position} of {head}", "bold")
    pairs(_state_summary(state))
    if state.runs:
        _runs(state)
    if state.attempts:
        _attempts(state)
    if transcript:
        _transcript(transcript)


DOCTOR_COLUMNS = (tables.word("check"), tables.word("result"), tables.text("detail"))


def doctor(report: DoctorReport) -> None:
    """The doctor's checks as a table."""
    rows: list[dict[str, tables.Cell]] = [
        {
            "check": check.name,
            "result": _verdict(check.ok, warning=check.warning, skipped=check.skipped),
            "detail": one_line(check.detail),
        }
        for check in report.checks
    ]
    tables.listing(out, DOCTOR_COLUMNS, rows, f"ledgerclaw doctor: {report.home}")
    summary = "healthy" if report.ok else "problems found"
    line(f"{report.events} events, {report.snapshots} snapshots: {summary}")


def _verdict(ok: bool, *, warning: bool, skipped: bool = False) -> Text:
    if not ok:
        return Text("FAIL", style="bold red")
    if skipped:
        return Text("skip", style="dim")
    return Text("warn", style="yellow") if warning else Text("ok", style="green")


TOOL_COLUMNS = (
    tables.word("tool"),
    tables.word("loading", optional=True),
    tables.word("concurrency", optional=True),
    tables.word("approval"),
    tables.word("exposed"),
    tables.text("why"),
)


def tool_list(audience: str, session_id: str | None, rows: Sequence[dict[str, Any]]) -> None:
    """One row per tool: how it loads and runs, its approval mode, and its exposure."""
    title = f"tools for {audience} sessions" + (f" (session {session_id})" if session_id else "")
    shown: list[dict[str, tables.Cell]] = [
        {
            "tool": row["name"],
            "loading": row["loading"],
            "concurrency": row["concurrency"],
            "approval": row["approval"],
            "exposed": "yes"
            if row["in_request"]
            else ("loadable" if row["policy_visible"] else "no"),
            "why": one_line(row["reason"]),
        }
        for row in rows
    ]
    tables.listing(out, TOOL_COLUMNS, shown, title)


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
