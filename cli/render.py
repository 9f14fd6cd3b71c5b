"""Terminal and JSON rendering for the `ledgerclaw` command; CLI layer."""

from __future__ import annotations

import csv
import re
import sys
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

out = Console(highlight=False, soft_wrap=False)
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


def _minute(stamp: str) -> str:
    return stamp.replace("T", " ")[:16]


def _clock(stamp: str) -> str:
    return stamp[11:23]


def _one_line(text: str) -> str:
    """`text`, JSON-quoted if it holds a character (a newline, say) that would break the line."""
    if not text.isprintable():
        return orjson.dumps(text).decode()
    return text


def _fields(fields: dict[str, Any]) -> str:
    return "  ".join(f"{key}={_one_line(short_id(value))}" for key, value in fields.items())


def timeline(session_id: str, entries: Sequence[TimelineEntry]) -> None:
    """A session's events, exactly one line each, in aligned columns.

    Plain lines rather than a table: a long session prints in a blink, and every event
    stays on its own line for grep and less.
    """
    span = f"{entries[0].recorded_at[:10]} .. {entries[-1].recorded_at[:10]}" if entries else ""
    out.print(f"[bold]{session_id}[/bold]: {len(entries)} events, {span} UTC")
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
    out.print(f"[bold]{state.session_id}[/bold] at event {position} of {head}")
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


# -- read models: sessions, audits, statistics, projections --------------------------------


def csv_rows(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """`rows` as CSV on stdout: a header row, then one line per row (lists as JSON text)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_csv_cell(row.get(column)) for column in columns])


def _csv_cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, list | dict):
        return orjson.dumps(value).decode()
    return value


def _second(stamp: object) -> str:
    return str(stamp or "").replace("T", " ")[:19]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(str(item) for item in value)
    return _one_line(str(value))


def _empty(what: str) -> None:
    out.print(f"No {what} match.")


def session_json(row: dict[str, Any]) -> dict[str, Any]:
    """A catalog row for --json, also under the names `session list` used before the catalog."""
    return row | {"opened_at": row["created_at"], "last_event_at": row["last_activity_at"]}


def catalog_sessions(rows: Sequence[dict[str, Any]]) -> None:
    """Sessions from the catalog as a table (`session show` and --json have every column)."""
    if not rows:
        out.print("No sessions in the journal yet.")
        return
    table = _compact(f"{len(rows)} sessions (UTC)")
    has_parents = any(row["parent_session_id"] for row in rows)
    columns = ["session", "key", "kind", "audience", "parent", "status"]
    if not has_parents:
        columns.remove("parent")
    for column in columns:
        table.add_column(column, no_wrap=column != "key", min_width=8 if column == "key" else None)
    table.add_column("events", justify="right")
    table.add_column("last activity", no_wrap=True)
    for row in rows:
        cells = [short_id(row["session_id"]), row["session_key"], row["kind"], row["audience"]]
        if has_parents:
            cells.append(short_id(row["parent_session_id"] or ""))
        cells += [row["status"], str(row["events"] or 0)]
        table.add_row(*cells, _minute(row["last_activity_at"] or ""))
    out.print(table)


def catalog_session(row: dict[str, Any]) -> None:
    """One session's catalog row and working context."""
    out.print(f"[bold]{row['session_id']}[/bold]")
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="dim")
    summary.add_column(overflow="fold")
    for label, value in (
        ("key", row["session_key"]),
        ("kind", row["kind"]),
        ("audience", row["audience"]),
        ("client", row["client"]),
        ("parent", row["parent_session_id"] or "-"),
        ("status", row["status"]),
        ("created", _second(row["created_at"])),
        ("last activity", _second(row["last_activity_at"])),
        ("runs", f"{row['runs']} ({row['live_runs']} live)"),
        ("messages", row["messages"]),
        ("tool calls", row["tool_calls"]),
        ("denials", row["denials"]),
        ("events", row["events"]),
        ("storage", row["storage_root"] or "unbound"),
        ("project", row["project_directory"] or "-"),
    ):
        summary.add_row(label, _cell(value))
    recent = row["recent_files"] or ["-"]
    for index, path in enumerate(recent):
        summary.add_row("recent files" if index == 0 else "", _cell(path))
    out.print(summary)


def _compact(title: str) -> Table:
    """A borderless table, so more of a narrow terminal is left for the text columns."""
    return Table(title=title, title_justify="left", box=None, pad_edge=False)


def _common(rows: Sequence[dict[str, Any]], column: str) -> str | None:
    """The one value every row has in `column`, if they all share one."""
    values = {row[column] for row in rows}
    return str(values.pop()) if len(values) == 1 else None


def _scope(rows: Sequence[dict[str, Any]], what: str, at: str) -> tuple[str, bool, bool]:
    """A title, whether a session column is needed, and whether times need their day."""
    session = _common(rows, "session_id")
    day = _common([{"day": str(row[at] or "")[:10]} for row in rows], "day")
    title = f"{len(rows)} {what}" + (f" of {session}" if session else "")
    title += f" on {day} (UTC)" if day else " (UTC)"
    return title, session is None, day is None


def _when(stamp: object, *, with_day: bool) -> str:
    text = _second(stamp)
    return text if with_day else text[11:]


def _why(row: dict[str, Any]) -> str:
    """How an attempt was decided and ended, in words: rule or denial, approval, outcome."""
    parts = []
    reason = row["failure_category"] or row["rule"] or ""
    if row["detail"]:
        reason = f"{reason}: {row['detail']}" if reason else row["detail"]
    if reason:
        parts.append(reason)
    if row["decided_by"]:
        verdict = row["approval_verdict"] or "decided"
        scope = f", {row['approval_scope']}" if row["approval_scope"] else ""
        parts.append(f"{verdict} by {row['decided_by']}{scope}")
    ending = row["outcome"] or row["remediation"]
    if ending:
        parts.append(f"-> {ending}")
    return _one_line("; ".join(parts))


def attempts(rows: Sequence[dict[str, Any]]) -> None:
    """Authorization attempts: the decision, its rule or denial, who approved, how it ended."""
    if not rows:
        _empty("authorization attempts")
        return
    title, by_session, with_day = _scope(rows, "authorization attempts", "started_at")
    table = _compact(title)
    columns = ["started", "session", "tool", "decision", "why"]
    if not by_session:
        columns.remove("session")
    for column in columns:
        table.add_column(column, no_wrap=column != "why", overflow="fold")
    for row in rows:
        cells = [_when(row["started_at"], with_day=with_day)]
        if by_session:
            cells.append(short_id(row["session_id"]))
        cells += [row["tool"], row["decision"], _why(row)]
        table.add_row(*cells)
    out.print(table)


def file_activity(rows: Sequence[dict[str, Any]]) -> None:
    """Which files tools read, wrote, attached or declared."""
    if not rows:
        _empty("file activity records")
        return
    title, by_session, with_day = _scope(rows, "file activity records", "at")
    table = _compact(title)
    columns = ["at", "session", "operation", "tool", "path"]
    if not by_session:
        columns.remove("session")
    for column in columns:
        table.add_column(column, no_wrap=column != "path", overflow="fold")
    for row in rows:
        cells = [_when(row["at"], with_day=with_day)]
        if by_session:
            cells.append(short_id(row["session_id"]))
        cells += [row["operation"], row["tool"] or "", _cell(row["path"])]
        table.add_row(*cells)
    out.print(table)


def _number(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def daily_stats(rows: Sequence[dict[str, Any]]) -> None:
    """Calls per day, tool and outcome, with durations, denials and approvals."""
    if not rows:
        _empty("daily statistics")
        return
    table = _compact("tool calls per day (UTC); approvals asked/granted/timed out")
    for column in ("day", "tool", "outcome"):
        table.add_column(column, no_wrap=True)
    for column in ("calls", "total ms", "p95 ms", "denied", "approvals"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in rows:
        approvals = "/".join(
            _number(row[c]) for c in ("approvals_asked", "approvals_granted", "approvals_timed_out")
        )
        table.add_row(
            row["day"],
            row["tool"],
            _cell(row["outcome"]),
            _number(row["calls"]),
            _number(row["total_duration_ms"]),
            _number(row["p95_duration_ms"]),
            _number(row["denials"]),
            approvals,
        )
    out.print(table)


def projection_status(rows: Sequence[dict[str, Any]], title: str = "projections") -> None:
    """Each projection's version, position, the log's head and how far behind it is."""
    table = Table(title=title, title_justify="left")
    for column in ("projection", "version", "stored", "position", "head", "lag"):
        table.add_column(column, justify="left" if column == "projection" else "right")
    for row in rows:
        stored = row["stored_version"]
        table.add_row(
            row["name"],
            str(row["version"]),
            "-" if stored is None else str(stored),
            str(row["position"]),
            str(row["head"]),
            Text(str(row["lag"]), style="yellow" if row["lag"] else "green"),
        )
    out.print(table)


def differences(rows: Sequence[dict[str, Any]]) -> None:
    """How the live read models disagree with their rebuild (one table per table), or `clean`."""
    if not rows:
        out.print("clean: every projection table matches its rebuild from the journal")
        return
    out.print(f"{len(rows)} differences between the live tables and a rebuild from the journal")
    for name in dict.fromkeys(row["table"] for row in rows):
        mine = [row for row in rows if row["table"] == name]
        keys = {tuple(row["key"]) for row in mine}
        single = next(iter(keys))[0] if len(keys) == 1 and len(next(iter(keys))) == 1 else None
        table = _compact(name)
        table.add_column(single or "key", no_wrap=single is not None, overflow="fold")
        table.add_column("kind", no_wrap=True)
        for column in ("column", "live", "rebuilt"):
            table.add_column(column, overflow="fold")
        for row in mine:
            key = ", ".join(
                _cell(value) if single else f"{column}={_cell(value)}"
                for column, value in row["key"].items()
            )
            table.add_row(
                key, row["kind"], row["column"] or "", _cell(row["live"]), _cell(row["rebuilt"])
            )
        out.print(table)
