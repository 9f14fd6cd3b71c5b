"""Rendering of upstream servers: their states, one server's story, its tools; CLI layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cli import tables
from cli.render import line, minute, one_line, out, pairs

SERVER_COLUMNS = (
    tables.word("server"),
    tables.word("state"),
    tables.number("tools"),
    tables.word("next try", optional=True),
    tables.text("last error", optional=True),
    tables.word("transport", optional=True),
    tables.word("since", optional=True),
)
TOOL_COLUMNS = (
    tables.word("tool"),
    tables.word("approval"),
    tables.word("read-only", optional=True),
    tables.text("description", optional=True),
    tables.word("digest", optional=True),
)


def _retry(row: dict[str, Any]) -> str:
    seconds = row.get("next_retry_seconds")
    return "-" if seconds is None else f"in {round(float(seconds))} s"


def servers(rows: Sequence[dict[str, Any]]) -> None:
    """Every configured server: its state, tool count, next retry and last error."""
    if not rows:
        line("No upstream servers are configured. Add [mcp.servers.NAME] to config.toml.")
        return
    shown = [
        {
            "server": row["name"],
            "state": row["state"],
            "tools": str(row["tools"]),
            "next try": _retry(row),
            "last error": one_line(row.get("last_error") or "-"),
            "transport": row["transport"],
            "since": minute(str(row.get("since") or "")) or "-",
        }
        for row in rows
    ]
    tables.listing(out, SERVER_COLUMNS, shown, f"{len(rows)} upstream server(s) (UTC)")
    if rows and not rows[0].get("daemon"):
        line("No daemon is running: these are the last states the journal holds.")


def status(row: dict[str, Any]) -> None:
    """One server: its settings' gist, its state, its recent changes and its log's tail."""
    pairs(
        [
            ("server", row["name"]),
            ("transport", f"{row['transport']} {row.get('target') or ''}".strip()),
            ("state", row["state"]),
            ("reason", one_line(row.get("reason") or "-")),
            ("tools", str(row["tools"])),
            ("next try", _retry(row)),
            ("last error", one_line(row.get("last_error") or "-")),
            ("oauth tokens", "stored" if row.get("oauth_tokens") else "none"),
        ]
    )
    history = row.get("history") or []
    if history:
        line("")
        line("State changes (UTC), newest last:", "bold")
        for change in history:
            failure = f" [{change['failure']}]" if change.get("failure") else ""
            reason = one_line(change["reason"])
            line(f"  {minute(change['at'])}  {change['state']:<10}{failure} {reason}")
    tail = row.get("stderr_tail") or []
    if tail:
        line("")
        line("Its standard error, last lines:", "bold")
        for text in tail:
            line(f"  {one_line(text)}")


def tools(server: str, rows: Sequence[dict[str, Any]]) -> None:
    """The server's last good catalog, as ledgerclaw offers it."""
    if not rows:
        line(f"{server} has listed no tools yet.")
        return
    shown = [
        {
            "tool": row["name"],
            "approval": row["approval"],
            "read-only": "yes" if row["read_only"] else "",
            "description": one_line(row.get("description") or ""),
            "digest": row["digest"],
        }
        for row in rows
    ]
    tables.listing(out, TOOL_COLUMNS, shown, f"{len(rows)} tool(s) of {server}")
