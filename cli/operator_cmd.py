"""`ledgerclaw approvals ...` and `ledgerclaw devices ...`; CLI layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from adapters import wiring
from adapters.daemon import operator
from adapters.daemon.control_client import exchange_pairing_code
from adapters.daemon.control_methods import BadControlRequestError
from cli import render
from cli.common import JSON_OPTION, expected_errors
from domain.session.values import ApprovalScope, ApprovalVerdict

approvals_app = typer.Typer(help="List and decide the approvals running calls wait for.")
devices_app = typer.Typer(help="Pair, list and revoke the devices that may use /mcp.")


def _table(title: str, columns: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(render.one_line(str(row.get(c) or "")) for c in columns))
    render.out.print(table)


@approvals_app.command("list")
@expected_errors
def approvals_list(json_output: bool = JSON_OPTION) -> None:
    """Every approval a running call is waiting for, oldest first."""
    rows = operator.pending_approvals(wiring.current_home())
    if json_output:
        render.emit_json(rows)
        return
    if not rows:
        render.out.print("No approvals are pending.")
        return
    shown = [
        {
            **row,
            "session": _session_cell(row),
            "device": render.short_id(row.get("device") or "-"),
            "client": row.get("client") or "-",
            "widen": "yes" * row["can_widen"],
        }
        for row in rows
    ]
    _table(
        f"{len(rows)} pending approval(s)",
        (
            "id",
            "device",
            "client",
            "session",
            "tool",
            "summary",
            "mode",
            "widen",
            "asked_at",
            "host",
        ),
        shown,
    )
    for row in rows:
        if row["can_widen"] and row.get("session_scope_covers"):
            render.out.print(
                f"--session-scope on {render.short_id(row['id'])} covers"
                f" {row['session_scope_covers']}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )


def _session_cell(row: dict[str, Any]) -> str:
    """The session's id, and what sets it apart within its device and client."""
    short = render.short_id(row["session_id"])
    return f"{short} ({row['session']})" if row.get("session") else short


def _decide(
    approval_id: str,
    verdict: ApprovalVerdict,
    session_scope: bool,
    directory: str | None,
    json_output: bool,
) -> None:
    if session_scope and directory is not None:
        msg = "choose --session-scope or --directory, not both"
        raise BadControlRequestError(msg)
    scope = ApprovalScope.ONCE
    if session_scope:
        scope = ApprovalScope.SESSION
    if directory is not None:
        scope = ApprovalScope.DIRECTORY
        directory = str(Path(directory).expanduser().absolute())
    answer = operator.decide_approval(wiring.current_home(), approval_id, verdict, scope, directory)
    if json_output:
        render.emit_json(answer)
        return
    call = f"{answer['id']} ({answer['tool']}: {answer['summary']})"
    if answer["verdict"] != "approved":
        # A denial has no reach: it ends the one waiting call.
        render.out.print(f"denied {call}; it will not run")
        return
    session = "the rest of the session"
    if answer.get("session_scope_covers"):
        session += f": {answer['session_scope_covers']}"
    reach = {"once": "this call only", "session": session}.get(
        answer["scope"], f"paths under {directory}"
    )
    render.out.print(f"approved {call} for {reach}")


SESSION_SCOPE = typer.Option(
    False, "--session-scope", help="Also approve the same call for the rest of the session."
)
DIRECTORY_SCOPE = typer.Option(
    None, "--directory", help="Also approve the same call on paths under this directory."
)
APPROVAL_ID = typer.Argument(help="The approval's id (its attempt id) or a unique prefix.")


@approvals_app.command("approve")
@expected_errors
def approve(
    approval_id: str = APPROVAL_ID,
    session_scope: bool = SESSION_SCOPE,
    directory: str | None = DIRECTORY_SCOPE,
    json_output: bool = JSON_OPTION,
) -> None:
    """Approve a pending call; it runs at once."""
    _decide(approval_id, ApprovalVerdict.APPROVED, session_scope, directory, json_output)


@approvals_app.command("deny")
@expected_errors
def deny(approval_id: str = APPROVAL_ID, json_output: bool = JSON_OPTION) -> None:
    """Deny a pending call; it does not run and the client is told why."""
    _decide(approval_id, ApprovalVerdict.REJECTED, False, None, json_output)


@devices_app.command("list")
@expected_errors
def devices_list(json_output: bool = JSON_OPTION) -> None:
    """Every paired device, active or revoked."""
    journal = wiring.open_journal(wiring.current_home())
    try:
        rows = operator.device_rows(journal)
    finally:
        journal.close()
    if json_output:
        render.emit_json(rows)
        return
    if not rows:
        render.out.print("No devices are paired. Pair one with `ledgerclaw daemon pair`.")
        return
    _table(
        f"{len(rows)} device(s)",
        ("device_id", "name", "status", "paired_at", "last_seen_at", "revoked_at"),
        rows,
    )


@devices_app.command("revoke")
@expected_errors
def devices_revoke(
    device: str = typer.Argument(help="The device's id or a unique prefix."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Revoke a device: its token is refused on its very next request."""
    journal = wiring.open_journal(wiring.current_home())
    try:
        row = operator.revoke_device(journal, device)
    finally:
        journal.close()
    if json_output:
        render.emit_json(row)
        return
    render.out.print(f"revoked {row['device_id']} ({row['name']})")


@devices_app.command("pair")
@expected_errors
def devices_pair(
    code: str = typer.Argument(help="The code `ledgerclaw daemon pair` printed."),
    name: str | None = typer.Option(None, "--name", help="The name to list this device by."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Exchange a pairing code for a device token, shown once: store it as a secret."""
    device_id, token = exchange_pairing_code(wiring.current_home(), code, name)
    if json_output:
        render.emit_json({"device_id": device_id, "token": token})
        return
    render.out.print(token)
    render.err.print(
        f"paired {device_id}. This token is shown once; give it to the MCP client as"
        " `Authorization: Bearer TOKEN`.",
        markup=False,
        highlight=False,
    )
