"""`ledgerclaw approvals ...` and `ledgerclaw devices ...`; CLI layer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from adapters.home import resolve_home
from cli import render, render_operator
from cli.common import JSON_OPTION, expected_errors

if TYPE_CHECKING:
    from domain.values.authorization import ApprovalVerdict

approvals_app = typer.Typer(help="List and decide the approvals running calls wait for.")
devices_app = typer.Typer(help="Pair, list and revoke the devices that may use /mcp.")


@approvals_app.command("list")
@expected_errors
def approvals_list(json_output: bool = JSON_OPTION) -> None:
    """List the approvals running calls wait for, oldest first."""
    from adapters.api import operator  # noqa: PLC0415 - loaded when used

    rows = operator.pending_approvals(resolve_home())
    if json_output:
        render.emit_json(rows)
        return
    render_operator.approvals(rows)


def _decide(
    approval_id: str,
    verdict: ApprovalVerdict,
    session_scope: bool,
    directory: str | None,
    json_output: bool,
) -> None:
    from adapters.api import operator  # noqa: PLC0415 - loaded when used
    from adapters.control.methods import BadControlRequestError  # noqa: PLC0415
    from domain.values.authorization import ApprovalScope  # noqa: PLC0415

    if session_scope and directory is not None:
        msg = "choose --session-scope or --directory, not both"
        raise BadControlRequestError(msg)
    scope = ApprovalScope.ONCE
    if session_scope:
        scope = ApprovalScope.SESSION
    if directory is not None:
        scope = ApprovalScope.DIRECTORY
        directory = str(Path(directory).expanduser().absolute())
    answer = operator.decide_approval(resolve_home(), approval_id, verdict, scope, directory)
    if json_output:
        render.emit_json(answer)
        return
    call = f"{answer['id']} ({answer['tool']}: {answer['summary']})"
    if answer["verdict"] != "approved":
        # A denial has no reach: it ends the one waiting call.
        render.line(f"denied {call}; it will not run")
        return
    session = "the rest of the session"
    if answer.get("session_scope_covers"):
        session += f": {answer['session_scope_covers']}"
    reach = {"once": "this call only", "session": session}.get(
        answer["scope"], f"paths under {directory}"
    )
    render.line(f"approved {call} for {reach}")


SESSION_SCOPE = typer.Option(
    False, "--session-scope", help="Also approve the same call for the rest of the session."
)
DIRECTORY_SCOPE = typer.Option(
    None,
    "--directory",
    metavar="DIR",
    help="Also approve the same call on paths under this directory.",
)
APPROVAL_ID = typer.Argument(
    metavar="ID", help="The approval's id (its attempt id) or a unique prefix."
)


@approvals_app.command("approve")
@expected_errors
def approve(
    approval_id: str = APPROVAL_ID,
    session_scope: bool = SESSION_SCOPE,
    directory: str | None = DIRECTORY_SCOPE,
    json_output: bool = JSON_OPTION,
) -> None:
    """Approve a pending call; it runs at once."""
    from domain.values.authorization import ApprovalVerdict  # noqa: PLC0415 - loaded when used

    _decide(approval_id, ApprovalVerdict.APPROVED, session_scope, directory, json_output)


@approvals_app.command("deny")
@expected_errors
def deny(approval_id: str = APPROVAL_ID, json_output: bool = JSON_OPTION) -> None:
    """Deny a pending call; it does not run and the client is told why."""
    from domain.values.authorization import ApprovalVerdict  # noqa: PLC0415 - loaded when used

    _decide(approval_id, ApprovalVerdict.REJECTED, False, None, json_output)


@devices_app.command("list")
@expected_errors
def devices_list(json_output: bool = JSON_OPTION) -> None:
    """List every paired device, active or revoked."""
    from adapters.api import operator  # noqa: PLC0415 - loaded when used

    rows = operator.list_devices(resolve_home())
    if json_output:
        render.emit_json(rows)
        return
    render_operator.devices(rows)


@devices_app.command("revoke")
@expected_errors
def devices_revoke(
    device: str = typer.Argument(metavar="ID", help="The device's id or a unique prefix."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Revoke a device: its token is refused on its very next request."""
    from adapters.api import operator  # noqa: PLC0415 - loaded when used

    row = operator.revoke(resolve_home(), device)
    if json_output:
        render.emit_json(row)
        return
    render.line(f"revoked {row['device_id']} ({row['name']})")


@devices_app.command("pair")
@expected_errors
def devices_pair(
    code: str = typer.Argument(metavar="CODE", help="The code `ledgerclaw daemon pair` printed."),
    name: str | None = typer.Option(
        None, "--name", metavar="NAME", help="The name to list this device by."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Exchange a pairing code for a device token.

    The token is shown once: store it as a secret.
    """
    from adapters.control.client import exchange_pairing_code  # noqa: PLC0415 - when used

    device_id, token = exchange_pairing_code(resolve_home(), code, name)
    if json_output:
        render.emit_json({"device_id": device_id, "token": token})
        return
    render.line(token)
    render.line(
        f"paired {device_id}. This token is shown once; give it to the MCP client as"
        " `Authorization: Bearer TOKEN`.",
        console=render.err,
    )
