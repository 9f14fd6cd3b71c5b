"""The `ledgerclaw` command line: parse, call the adapters, render; CLI layer.

Every command starts by importing this module, so it loads only typer and the command
modules' declarations; each command imports the adapters it calls when it runs. A read
command then loads only what it reads with (see tests/integration/test_cli_imports.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ParamSpec, TypeVar

import typer

from adapters.api.audit_terms import DECISIONS, DEFAULT_LIMIT, OPERATIONS
from adapters.home import resolve_home
from cli import render, render_read_models
from cli.backup_cmd import backup_app
from cli.chat_cmd import chat as chat_command
from cli.common import JSON_OPTION, expected_errors
from cli.config_cmd import config_app
from cli.daemon_cmd import daemon_app, mcp_app
from cli.global_options import GlobalOptionsAnywhere, global_options
from cli.help_format import name_arguments_plainly
from cli.models_cmd import models_app
from cli.operator_cmd import approvals_app, devices_app
from cli.run_cmd import run as run_command
from cli.tool_cmd import tool_app

if TYPE_CHECKING:
    from adapters.api import queries

P = ParamSpec("P")
R = TypeVar("R")

app = typer.Typer(
    name="ledgerclaw",
    help="An event-sourced runtime around an AI agent, journaled in one SQLite file."
    "\n\nEvery command works on one home: the directory --home names, else $LEDGERCLAW_HOME"
    " (an absolute path), else ~/.ledgerclaw. The home holds the journal (ledgerclaw.db),"
    " config.toml and secrets.toml. --home may stand before or after"
    " the command: ledgerclaw --home /srv/agent session list.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Plain help: what the source says is what a reader sees (rich markup would eat
    # "[daemon]"), and flags show no placeholder.
    rich_markup_mode=None,
    cls=GlobalOptionsAnywhere,
)
session_app = typer.Typer(help="Inspect sessions: list, show and replay them.")
app.add_typer(session_app, name="session")
app.add_typer(tool_app, name="tool")

audit_app = typer.Typer(help="Audit tool calls: authorization attempts and file activity.")
app.add_typer(audit_app, name="audit")
stats_app = typer.Typer(help="Statistics over tool calls.")
app.add_typer(stats_app, name="stats")
projections_app = typer.Typer(help="Show, rebuild and verify the read models of the journal.")
app.add_typer(projections_app, name="projections")
app.add_typer(config_app, name="config")
app.add_typer(models_app, name="models")
app.command("run")(run_command)
app.command("chat")(chat_command)
app.add_typer(daemon_app, name="daemon")
app.add_typer(mcp_app, name="mcp")
app.add_typer(approvals_app, name="approvals")
app.add_typer(devices_app, name="devices")
app.add_typer(backup_app, name="backup")


app.callback()(global_options)


CSV_OPTION = typer.Option(False, "--csv", help="Print CSV: a header row, then one line per row.")
SINCE_OPTION = typer.Option(
    None,
    "--since",
    metavar="T",
    help="Only from this time on: 2026-11-30, 2026-11-30T10:00 (UTC unless an offset is"
    " given), or an age such as 7d, 24h, 90m.",
)
UNTIL_OPTION = typer.Option(
    None,
    "--until",
    metavar="T",
    help="Only before this time (same forms; a date includes its whole day).",
)
SESSION_FILTER = typer.Option(
    None,
    "--session",
    metavar="SESSION",
    help="Only this session: its id or a unique prefix (4+ hex digits).",
)
SESSION_ARGUMENT = typer.Argument(
    metavar="SESSION", help="Session id, or a unique prefix of it (4+ hex digits)."
)
LIMIT_OPTION = typer.Option(
    DEFAULT_LIMIT,
    "--limit",
    metavar="N",
    help="At most this many rows, newest first; 0 for all.",
)


def _filters(
    since: str | None, until: str | None, session: str | None, limit: int
) -> queries.Filters:
    from adapters.api.filters import Filters  # noqa: PLC0415 - loaded by the listings only

    return Filters(since=since, until=until, session=session, limit=limit)


def _one_format(json_output: bool, csv_output: bool) -> None:
    if json_output and csv_output:
        from adapters.api.filters import AuditQueryError  # noqa: PLC0415 - on this error only

        msg = "--json and --csv cannot be combined; choose one"
        raise AuditQueryError(msg)


def _audit() -> queries.Audit:
    """The home's read models, caught up with its journal (a bar on a terminal)."""
    from adapters.api import queries  # noqa: PLC0415 - the read models' whole query path

    with render.progress_bar("catching up") as update:
        return queries.open_audit(resolve_home(), update)


def _sessions(filters: queries.Filters) -> queries.Rows:
    """The session list: straight from the catalog when it is current, else caught up first."""
    from adapters.api.current_catalog import current_sessions  # noqa: PLC0415 - this listing's

    rows = current_sessions(resolve_home(), filters, oldest_first=True)
    if rows is None:
        rows = _audit().sessions(filters, oldest_first=True)
    return rows


def _listing(
    rows: queries.Rows,
    json_output: bool,
    csv_output: bool,
    human: Callable[[queries.Rows], None],
) -> None:
    if json_output:
        render.emit_json(list(rows))
    elif csv_output:
        render_read_models.csv_rows(rows, rows.columns)
    else:
        human(rows)


@session_app.command("list")
@expected_errors
def list_sessions(  # noqa: PLR0913, PLR0917 - typer reads each option as a parameter
    since: str | None = SINCE_OPTION,
    until: str | None = UNTIL_OPTION,
    session: str | None = SESSION_FILTER,
    limit: int = LIMIT_OPTION,
    json_output: bool = JSON_OPTION,
    csv_output: bool = CSV_OPTION,
) -> None:
    """List sessions, oldest first.

    One row per session from the session catalog: the newest --limit of them.
    """
    _one_format(json_output, csv_output)
    filters = _filters(since, until, session, limit)
    rows = _sessions(filters)
    if json_output:
        render.emit_json([render_read_models.session_json(row) for row in rows])
    elif csv_output:
        render_read_models.csv_rows(rows, rows.columns)
    else:
        render_read_models.catalog_sessions(rows)


@session_app.command("show")
@expected_errors
def show_session(
    session: str = SESSION_ARGUMENT,
    json_output: bool = JSON_OPTION,
) -> None:
    """Show a session's catalog row and working context."""
    row = _audit().session(session)
    if json_output:
        render.emit_json(render_read_models.session_json(row))
    else:
        render_read_models.catalog_session(row)


@session_app.command("replay")
@expected_errors
def replay(
    session: str = SESSION_ARGUMENT,
    at: int | None = typer.Option(
        None,
        "--at",
        min=1,
        metavar="N",
        help="Print the state rebuilt from the first N events instead.",
    ),
    verify: bool = typer.Option(
        False,
        "--verify",
        help="Replay each agent run through the decider (no model, no tool) and compare.",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Show a session's timeline or its state at event N, or verify it.

    The timeline has one line per event; --at N rebuilds the state from the first N events;
    --verify replays every agent run from its journaled replies and results, prints
    `identical` or the first divergent event, and exits 1 on a divergence.
    """
    if verify:
        from adapters.api.agent_verify import verify_session  # noqa: PLC0415 - --verify only
        from cli import render_verify  # noqa: PLC0415 - --verify only

        check = verify_session(resolve_home(), session)
        if json_output:
            render.emit_json(render_verify.verify_json(check))
        else:
            render_verify.verify_report(check)
        raise typer.Exit(0 if check.identical else 1)
    if at is None:
        from adapters.api.replay import timeline  # noqa: PLC0415 - the timeline reader

        found = timeline(resolve_home(), session)
        if json_output:
            events = [e._asdict() for e in found.entries]
            render.emit_json({"session_id": found.session_id, "events": events})
        else:
            render.timeline(found.session_id, found.entries)
        return
    from adapters.api.replay import state_at  # noqa: PLC0415 - rebuilding loads the journal

    rebuilt = state_at(resolve_home(), session, at)
    if json_output:
        render.emit_json(
            {
                "session_id": rebuilt.session_id,
                "position": rebuilt.position,
                "head": rebuilt.head,
                "state": rebuilt.state.model_dump(mode="json"),
                "transcript": rebuilt.transcript,
            }
        )
    else:
        render.session_state(rebuilt.state, rebuilt.transcript, rebuilt.position, rebuilt.head)


@app.command("doctor")
@expected_errors
def doctor(
    offline: bool = typer.Option(
        False, "--offline", help="Ask no model's server for its catalog: skip those checks."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Check the home, configuration, models and journal.

    Creates the home and an empty journal when they are missing.
    """
    from adapters.api.doctor import run_doctor  # noqa: PLC0415 - the doctor loads everything

    home = resolve_home()
    with render.progress_bar("decoding events") as update:
        report = run_doctor(home, update, offline=offline)
    if json_output:
        render.emit_json(report.model_dump(mode="json") | {"ok": report.ok})
    else:
        render.doctor(report)
    if not report.ok:
        raise typer.Exit(1)


@audit_app.command("attempts")
@expected_errors
def audit_attempts(  # noqa: PLR0913, PLR0917 - typer reads each option as a parameter
    decision: str | None = typer.Option(
        None,
        "--decision",
        metavar="DECISION",
        help="Only attempts with this decision: " + ", ".join(DECISIONS) + ".",
    ),
    tool: str | None = typer.Option(
        None, "--tool", metavar="TOOL", help="Only calls of this tool."
    ),
    path: str | None = typer.Option(
        None,
        "--path",
        metavar="GLOB",
        help="Only attempts about a path matching this glob (SQLite GLOB: *, ?, [...]).",
    ),
    since: str | None = SINCE_OPTION,
    until: str | None = UNTIL_OPTION,
    session: str | None = SESSION_FILTER,
    limit: int = LIMIT_OPTION,
    json_output: bool = JSON_OPTION,
    csv_output: bool = CSV_OPTION,
) -> None:
    """List authorization attempts, newest first.

    Each with its decision, the rule or denial behind it, who approved, and how it ended.
    """
    _one_format(json_output, csv_output)
    filters = _filters(since, until, session, limit)
    rows = _audit().attempts(filters, decision=decision, tool=tool, path_glob=path)
    _listing(rows, json_output, csv_output, render_read_models.attempts)


@audit_app.command("files")
@expected_errors
def audit_files(  # noqa: PLR0913, PLR0917 - typer reads each option as a parameter
    path: str | None = typer.Option(
        None,
        "--path",
        metavar="GLOB",
        help="Only paths matching this glob (SQLite GLOB: *, ?, [...]).",
    ),
    operation: str | None = typer.Option(
        None,
        "--operation",
        metavar="OP",
        help="Only this operation: " + ", ".join(OPERATIONS) + ".",
    ),
    since: str | None = SINCE_OPTION,
    until: str | None = UNTIL_OPTION,
    session: str | None = SESSION_FILTER,
    limit: int = LIMIT_OPTION,
    json_output: bool = JSON_OPTION,
    csv_output: bool = CSV_OPTION,
) -> None:
    """List the files that tool calls used, newest first.

    The files successful calls read, wrote, attached or declared.
    """
    _one_format(json_output, csv_output)
    filters = _filters(since, until, session, limit)
    rows = _audit().files(filters, path_glob=path, operation=operation)
    _listing(rows, json_output, csv_output, render_read_models.file_activity)


@stats_app.command("daily")
@expected_errors
def stats_daily(  # noqa: PLR0913, PLR0917 - typer reads each option as a parameter
    since: str | None = SINCE_OPTION,
    until: str | None = UNTIL_OPTION,
    session: str | None = typer.Option(
        None,
        "--session",
        metavar="SESSION",
        help="Only this session's calls: its id or a unique prefix (4+ hex digits).",
    ),
    limit: int = LIMIT_OPTION,
    json_output: bool = JSON_OPTION,
    csv_output: bool = CSV_OPTION,
) -> None:
    """Count tool calls per day, tool and outcome.

    With total and p95 durations, denials and approvals asked, granted and timed out.
    """
    _one_format(json_output, csv_output)
    filters = _filters(since, until, session, limit)
    _listing(_audit().daily(filters), json_output, csv_output, render_read_models.daily_stats)


@projections_app.command("status")
@expected_errors
def projections_status(json_output: bool = JSON_OPTION) -> None:
    """Show each projection's position and its lag behind the journal.

    With its code and stored versions and the journal's head; it does not catch up.
    """
    from adapters.api import queries  # noqa: PLC0415 - the read models' status

    rows = queries.status(resolve_home())
    if json_output:
        render.emit_json(list(rows))
    else:
        render_read_models.projection_status(rows)


@projections_app.command("rebuild")
@expected_errors
def projections_rebuild(
    names: list[str] | None = typer.Argument(
        None,
        metavar="NAME",
        help="The projections to rebuild (see `projections status`); all when omitted.",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Rebuild projections from the whole journal.

    Drops their tables and applies every event again.
    """
    from adapters.api import queries  # noqa: PLC0415 - rebuilding loads the projections

    with render.progress_bar("rebuilding") as update:
        rows = queries.rebuild(resolve_home(), names or (), update)
    if json_output:
        render.emit_json(list(rows))
    else:
        render_read_models.projection_status(
            rows, f"rebuilt {', '.join(names or ('every projection',))}"
        )


@projections_app.command("verify")
@expected_errors
def projections_verify(json_output: bool = JSON_OPTION) -> None:
    """Compare every projection with a rebuild from the journal.

    The rebuild goes to a scratch file; the live tables are left as they are.
    """
    from adapters.api.verify import verify  # noqa: PLC0415 - verifying loads the projections

    with render.progress_bar("rebuilding to compare") as update:
        found = [difference.as_dict() for difference in verify(resolve_home(), update)]
    if json_output:
        render.emit_json({"clean": not found, "differences": found})
    else:
        render_read_models.differences(found)
    if found:
        raise typer.Exit(1)


name_arguments_plainly(app)


def main() -> None:
    """Entry point of the `ledgerclaw` console script."""
    app()
