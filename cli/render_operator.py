"""Rendering of what an operator lists: pending approvals and paired devices; CLI layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cli import tables
from cli.render import line, minute, one_line, out, short_id

APPROVAL_COLUMNS = (
    tables.ident("id", short_id),
    tables.ident("session", short_id),
    tables.word("tool"),
    tables.text("summary"),
    tables.word("keyed by", optional=True),
    tables.ident("device", short_id, optional=True),
    tables.word("client", optional=True),
    tables.word("mode", optional=True),
    tables.word("widen", optional=True),
    tables.word("asked at", optional=True),
    tables.word("host", optional=True),
)
DEVICE_COLUMNS = (
    tables.ident("device", short_id),
    tables.text("name"),
    tables.word("status"),
    tables.word("paired", optional=True),
    tables.word("last seen", optional=True),
    tables.word("revoked", optional=True),
)


def _text(value: object) -> str:
    return one_line(str(value or ""))


def _time(value: object) -> str:
    return minute(str(value or ""))


def approvals(rows: Sequence[dict[str, Any]]) -> None:
    """Pending approvals, oldest first: whose call, what it would do, and which host asks."""
    if not rows:
        line("No approvals are pending.")
        return
    shown = [
        {
            "id": _text(row.get("id")),
            "device": _text(row.get("device") or "-"),
            "client": _text(row.get("client") or "-"),
            "session": _text(row.get("session_id")),
            "keyed by": _text(row.get("session") or "-"),
            "tool": _text(row.get("tool")),
            "summary": _text(row.get("summary")),
            "mode": _text(row.get("mode")),
            "widen": "yes" if row.get("can_widen") else "",
            "asked at": _time(row.get("asked_at")),
            "host": _text(row.get("host")),
        }
        for row in rows
    ]
    tables.listing(out, APPROVAL_COLUMNS, shown, f"{len(rows)} pending approval(s) (UTC)")
    for row in rows:
        if row.get("can_widen") and row.get("session_scope_covers"):
            line(
                f"--session-scope on {short_id(str(row['id']))} covers"
                f" {_text(row['session_scope_covers'])}"
            )


def devices(rows: Sequence[dict[str, Any]]) -> None:
    """Paired devices, oldest first, active or revoked."""
    if not rows:
        line("No devices are paired. Pair one with `ledgerclaw daemon pair`.")
        return
    shown = [
        {
            "device": _text(row.get("device_id")),
            "name": _text(row.get("name")),
            "status": _text(row.get("status")),
            "paired": _time(row.get("paired_at")),
            "last seen": _time(row.get("last_seen_at")),
            "revoked": _time(row.get("revoked_at")),
        }
        for row in rows
    ]
    tables.listing(out, DEVICE_COLUMNS, shown, f"{len(rows)} device(s) (UTC)")
