"""Rendering of the read models: sessions, audits, statistics and projections; CLI layer."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from typing import Any

import orjson
from rich.table import Table
from rich.text import Text

from cli.render import minute, one_line, out, short_id, shorten_middle


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
    return one_line(str(value))


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
        table.add_row(*cells, minute(row["last_activity_at"] or ""))
    out.print(table)


def catalog_session(row: dict[str, Any]) -> None:
    """One session's catalog row and working context."""
    out.print(row["session_id"], style="bold")
    summary = Table.grid(padding=(0, 2))
    summary.add_column(style="dim")
    summary.add_column(overflow="fold")
    for label, value in (
        ("key", row["session_key"]),
        ("kind", row["kind"]),
        ("audience", row["audience"]),
        ("client", _client(row)),
        ("parent", row["parent_session_id"] or "-"),
        ("status", _status(row)),
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


def _client(row: dict[str, Any]) -> str:
    """The channel, and the name and version the client declared, if any."""
    declared = " ".join(str(row.get(k)) for k in ("client_name", "client_version") if row.get(k))
    return f"{row['client']} ({declared})" if declared else str(row["client"])


def _status(row: dict[str, Any]) -> str:
    """The status, with when and why a closed session closed."""
    if row.get("close_reason"):
        return f"{row['status']}: {row['close_reason']} at {_second(row['closed_at'])}"
    return str(row["status"])


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
    """How an attempt was decided and ended, in words: rule or denial, approval, outcome.

    A rejected or expired approval's denial detail repeats the approval (`approval rejected
    by …`); it is left out, so the decision is said once.
    """
    parts = []
    decided = _decided(row)
    detail = row["detail"]
    if decided and detail == f"approval {row['approval_verdict']} by {row['decided_by']}":
        detail = None
    reason = row["failure_category"] or row["rule"] or ""
    if detail:
        reason = f"{reason}: {detail}" if reason else detail
    if reason:
        parts.append(reason)
    if decided:
        parts.append(decided)
    ending = row["outcome"] or row["remediation"]
    if ending:
        parts.append(f"-> {ending}")
    return one_line("; ".join(parts))


_REACH = {"once": "once", "session": "for the session", "directory": "for a directory"}


def _decided(row: dict[str, Any]) -> str:
    """Who answered the approval question and how: `approved once by …`, `rejected by …`."""
    who, verdict = row["decided_by"], row["approval_verdict"]
    if not who:
        return ""
    if verdict == "approved":
        reach = _REACH.get(row["approval_scope"] or "once", row["approval_scope"])
        return f"approved {reach} by {who}"
    if verdict == "expired":
        return "expired unanswered"
    return f"{verdict or 'decided'} by {who}"


def attempts(rows: Sequence[dict[str, Any]]) -> None:
    """Authorization attempts: the decision, its rule or denial, who approved, how it ended."""
    if not rows:
        _empty("authorization attempts")
        return
    title, by_session, with_day = _scope(rows, "authorization attempts", "started_at")
    table = _compact(title)
    columns = ["started", "session", "tool", "target", "decision", "why"]
    if not by_session:
        columns.remove("session")
    for column in columns:
        table.add_column(column, no_wrap=column != "why", overflow="fold")
    width = max(TARGET_MIN_WIDTH, out.width // 3)
    for row in rows:
        cells = [_when(row["started_at"], with_day=with_day)]
        if by_session:
            cells.append(short_id(row["session_id"]))
        cells += [row["tool"], shorten_middle(target(row), width), row["decision"], _why(row)]
        table.add_row(*cells)
    out.print(table)


TARGET_MIN_WIDTH = 24
"""The target column gets a third of the width, never less than this many characters."""


def target(row: dict[str, Any]) -> str:
    """What an attempt was about: its command, else its first path (and how many more)."""
    if row.get("command"):
        return one_line(str(row["command"]))
    paths = row.get("paths") or []
    if not paths:
        return ""
    more = f" (+{len(paths) - 1})" if len(paths) > 1 else ""
    return one_line(str(paths[0])) + more


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
