"""Rendering of the read models: sessions, audits, statistics and projections; CLI layer."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from typing import Any

import orjson
from rich.text import Text

from cli import tables
from cli.render import line, minute, one_line, out, pairs, short_id


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
    line(f"No {what} match.")


def session_json(row: dict[str, Any]) -> dict[str, Any]:
    """A catalog row for --json, also under the names `session list` used before the catalog."""
    return row | {"opened_at": row["created_at"], "last_event_at": row["last_activity_at"]}


SESSION_COLUMNS = (
    tables.ident("session", short_id),
    tables.word("key"),
    tables.word("kind", optional=True),
    tables.word("audience", optional=True),
    tables.ident("parent", short_id, optional=True),
    tables.word("status"),
    tables.number("events", optional=True),
    tables.word("last activity"),
)


def catalog_sessions(rows: Sequence[dict[str, Any]]) -> None:
    """Sessions from the catalog as a table (`session show` and --json have every column)."""
    if not rows:
        line("No sessions in the journal yet.")
        return
    has_parents = any(row["parent_session_id"] for row in rows)
    columns = [c for c in SESSION_COLUMNS if has_parents or c.header != "parent"]
    shown = [
        {
            "session": row["session_id"],
            "key": one_line(row["session_key"]),
            "kind": row["kind"],
            "audience": row["audience"],
            "parent": row["parent_session_id"] or "",
            "status": row["status"],
            "events": str(row["events"] or 0),
            "last activity": minute(row["last_activity_at"] or ""),
        }
        for row in rows
    ]
    tables.listing(out, columns, shown, f"{len(rows)} sessions (UTC)")


def catalog_session(row: dict[str, Any]) -> None:
    """One session's catalog row and working context."""
    line(row["session_id"], "bold")
    summary: list[tuple[str, str]] = []
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
        ("last run end", row.get("last_run_end") or "-"),
        ("model requests", row.get("model_requests") or 0),
        ("messages", row["messages"]),
        ("tool calls", row["tool_calls"]),
        ("denials", row["denials"]),
        ("events", row["events"]),
        ("storage", row["storage_root"] or "unbound"),
        ("project", row["project_directory"] or "-"),
    ):
        summary.append((label, _cell(value)))
    recent = row["recent_files"] or ["-"]
    for index, path in enumerate(recent):
        summary.append(("recent files" if index == 0 else "", _cell(path)))
    pairs(summary)


def _client(row: dict[str, Any]) -> str:
    """The channel, and the name and version the client declared, if any."""
    declared = " ".join(str(row.get(k)) for k in ("client_name", "client_version") if row.get(k))
    return f"{row['client']} ({declared})" if declared else str(row["client"])


def _status(row: dict[str, Any]) -> str:
    """The status, with when and why a closed session closed."""
    if row.get("close_reason"):
        return f"{row['status']}: {row['close_reason']} at {_second(row['closed_at'])}"
    return str(row["status"])


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


ATTEMPT_COLUMNS = (
    tables.word("started"),
    tables.ident("session", short_id),
    tables.word("tool"),
    tables.path("target", optional=True),
    tables.word("decision"),
    tables.text("why"),
)


def attempts(rows: Sequence[dict[str, Any]]) -> None:
    """Authorization attempts: the decision, its rule or denial, who approved, how it ended."""
    if not rows:
        _empty("authorization attempts")
        return
    title, by_session, with_day = _scope(rows, "authorization attempts", "started_at")
    columns = [c for c in ATTEMPT_COLUMNS if by_session or c.header != "session"]
    shown = [
        {
            "started": _when(row["started_at"], with_day=with_day),
            "session": row["session_id"],
            "tool": row["tool"],
            "target": one_line(target(row)),
            "decision": row["decision"],
            "why": _why(row),
        }
        for row in rows
    ]
    tables.listing(out, columns, shown, title)


FILE_COLUMNS = (
    tables.word("at"),
    tables.ident("session", short_id),
    tables.word("operation"),
    tables.word("tool"),
    tables.path("path"),
)


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
    columns = [c for c in FILE_COLUMNS if by_session or c.header != "session"]
    shown = [
        {
            "at": _when(row["at"], with_day=with_day),
            "session": row["session_id"],
            "operation": row["operation"],
            "tool": row["tool"] or "",
            "path": _cell(row["path"]),
        }
        for row in rows
    ]
    tables.listing(out, columns, shown, title)


def _number(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


DAILY_COLUMNS = (
    tables.word("day"),
    tables.word("tool"),
    tables.word("outcome"),
    tables.number("calls"),
    tables.number("total ms", optional=True),
    tables.number("p95 ms", optional=True),
    tables.number("denied", optional=True),
    tables.number("approvals", optional=True),
)


def daily_stats(rows: Sequence[dict[str, Any]]) -> None:
    """Calls per day, tool and outcome, with durations, denials and approvals."""
    if not rows:
        _empty("daily statistics")
        return
    shown = [
        {
            "day": row["day"],
            "tool": one_line(row["tool"]),
            "outcome": _cell(row["outcome"]),
            "calls": _number(row["calls"]),
            "total ms": _number(row["total_duration_ms"]),
            "p95 ms": _number(row["p95_duration_ms"]),
            "denied": _number(row["denials"]),
            "approvals": "/".join(
                _number(row[c])
                for c in ("approvals_asked", "approvals_granted", "approvals_timed_out")
            ),
        }
        for row in rows
    ]
    title = "tool calls per day (UTC); approvals asked/granted/timed out"
    tables.listing(out, DAILY_COLUMNS, shown, title)


PROJECTION_COLUMNS = (
    tables.word("projection"),
    tables.number("version"),
    tables.number("stored"),
    tables.number("position"),
    tables.number("head"),
    tables.number("lag"),
)


def projection_status(rows: Sequence[dict[str, Any]], title: str = "projections") -> None:
    """Each projection's version, position, the log's head and how far behind it is."""
    shown: list[dict[str, tables.Cell]] = [
        {
            "projection": row["name"],
            "version": str(row["version"]),
            "stored": "-" if row["stored_version"] is None else str(row["stored_version"]),
            "position": str(row["position"]),
            "head": str(row["head"]),
            "lag": Text(str(row["lag"]), style="yellow" if row["lag"] else "green"),
        }
        for row in rows
    ]
    tables.listing(out, PROJECTION_COLUMNS, shown, title)


def differences(rows: Sequence[dict[str, Any]]) -> None:
    """How the live read models disagree with their rebuild (one table per table), or `clean`."""
    if not rows:
        line("clean: every projection table matches its rebuild from the journal")
        return
    line(f"{len(rows)} differences between the live tables and a rebuild from the journal")
    for name in dict.fromkeys(row["table"] for row in rows):
        mine = [row for row in rows if row["table"] == name]
        keys = {tuple(row["key"]) for row in mine}
        single = next(iter(keys))[0] if len(keys) == 1 and len(next(iter(keys))) == 1 else None
        columns = (
            tables.word(single) if single else tables.text("key"),
            tables.word("kind"),
            tables.word("column"),
            tables.text("live"),
            tables.text("rebuilt"),
        )
        shown = [
            {
                columns[0].header: ", ".join(
                    _cell(value) if single else f"{column}={_cell(value)}"
                    for column, value in row["key"].items()
                ),
                "kind": row["kind"],
                "column": row["column"] or "",
                "live": _cell(row["live"]),
                "rebuilt": _cell(row["rebuilt"]),
            }
            for row in mine
        ]
        tables.listing(out, columns, shown, name)
