"""`ledgerclaw daemon run|pair|status` and `ledgerclaw mcp serve|list|status|tools|reload|auth`.

CLI layer. Each command loads what it calls when it runs (the daemon, the MCP SDK, the
configuration checks), so that no other command imports them.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer

from adapters.home import ensure_home, resolve_home
from cli import render
from cli.common import JSON_OPTION, expected_errors, print_warnings

daemon_app = typer.Typer(help="Run the daemon, pair devices, and ask how it is doing.")
mcp_app = typer.Typer(help="Serve the governed tools over MCP; manage upstream servers.")


@daemon_app.command("run")
@expected_errors
def run(
    port: int | None = typer.Option(
        None,
        "--port",
        min=1,
        max=65535,
        metavar="N",
        help="Listen on port N instead of the port that config.toml's [daemon] section sets.",
    ),
) -> None:
    """Run the daemon for this home in the foreground.

    It runs until SIGINT or SIGTERM.
    """
    import anyio  # noqa: PLC0415 - each command loads what it runs

    from adapters.config.loading import check_config  # noqa: PLC0415
    from adapters.daemon.logs import configure_logging  # noqa: PLC0415
    from adapters.daemon.service import Daemon  # noqa: PLC0415 - the MCP SDK is slow to import
    from adapters.wiring.hosting import HomeParts  # noqa: PLC0415 - as slow

    home = resolve_home()
    checked = check_config(home.config, home.secrets)
    config = checked.config
    print_warnings(checked.warnings)
    ensure_home(home)
    log_file = configure_logging(home, config.daemon.log_level)
    daemon = Daemon(home, config, port or config.daemon.port, HomeParts(home, config))

    def ready(_daemon: Daemon) -> None:
        render.err.print(
            f"ledgerclaw daemon for {home.root} ready on http://127.0.0.1:{daemon.port}"
            f" (log: {log_file}); stop with Ctrl-C",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    code = anyio.run(daemon.run, ready)
    raise typer.Exit(code)


@daemon_app.command("pair")
@expected_errors
def pair(
    name: str | None = typer.Option(
        None, "--name", metavar="NAME", help="The name the new device is listed by."
    ),
    scopes: str | None = typer.Option(
        None,
        "--scopes",
        metavar="LIST",
        help="What the device may do on the gateway: read, write, approvals (default read).",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Ask the running daemon for a pairing code.

    The code is single use and valid five minutes; the device it pairs gets the scopes named.
    """
    from adapters.api.operator import issue_pairing_code  # noqa: PLC0415 - loaded when used

    wanted = None if scopes is None else tuple(s.strip() for s in scopes.split(",") if s.strip())
    answer = issue_pairing_code(resolve_home(), name, wanted)
    if json_output:
        render.emit_json(answer)
        return
    render.line(answer["code"])
    seconds = int(answer["expires_in_seconds"])
    valid = f"{round(seconds / 60)} min" if seconds >= 90 else f"{seconds} s"  # noqa: PLR2004 - minutes read better
    render.line(
        f"single use, valid {valid}, and it replaces any earlier code: run"
        f" `ledgerclaw devices pair {answer['code']}` on the device (or POST it to /pair)",
        console=render.err,
    )


@daemon_app.command("status")
@expected_errors
def status(json_output: bool = JSON_OPTION) -> None:
    """Show how the running daemon is doing.

    Its sessions, calls, approvals and refusals.
    """
    from adapters.api.operator import daemon_status  # noqa: PLC0415 - loaded when used

    answer = daemon_status(resolve_home())
    if json_output:
        render.emit_json(answer)
        return
    for key, value in answer.items():
        render.line(f"{key:>20}  {value}")


@mcp_app.command("serve")
@expected_errors
def serve(
    project: Path | None = typer.Option(
        None,
        "--project",
        metavar="DIR",
        exists=True,
        file_okay=False,
        help=(
            "Declare this directory as the session's project, as set_working_directory"
            " does (same authorization, journaled the same way)."
        ),
    ),
) -> None:
    """Serve the governed tools over stdio.

    One process, one journaled session.
    """
    import anyio  # noqa: PLC0415 - each command loads what it runs

    from adapters.config.loading import check_config  # noqa: PLC0415
    from adapters.daemon.logs import configure_logging  # noqa: PLC0415
    from adapters.stdio.serve import serve_stdio  # noqa: PLC0415 - the MCP SDK is slow to import
    from adapters.wiring.hosting import HomeParts  # noqa: PLC0415 - as slow

    home = resolve_home()
    checked = check_config(home.config, home.secrets)
    config = checked.config
    print_warnings(checked.warnings)
    ensure_home(home)
    configure_logging(home, config.daemon.log_level, quiet_terminal=True)
    declared = None if project is None else project.absolute()
    raise typer.Exit(anyio.run(serve_stdio, home, config, HomeParts(home, config), declared))


SERVER = typer.Argument(metavar="SERVER", help="The name in [mcp.servers.NAME].")


@mcp_app.command("list")
@expected_errors
def mcp_list(json_output: bool = JSON_OPTION) -> None:
    """List the upstream servers: state, tools, next try, last error."""
    from adapters.api import upstream  # noqa: PLC0415 - loaded when used
    from cli import render_upstream  # noqa: PLC0415 - as the API it renders

    rows = upstream.list_servers(resolve_home())
    if json_output:
        render.emit_json(rows)
        return
    render_upstream.servers(rows)


@mcp_app.command("status")
@expected_errors
def mcp_status(server: str = SERVER, json_output: bool = JSON_OPTION) -> None:
    """Show one upstream server: state, recent changes, error log."""
    from adapters.api import upstream  # noqa: PLC0415 - loaded when used
    from cli import render_upstream  # noqa: PLC0415 - as the API it renders

    row = upstream.server_status(resolve_home(), server)
    if json_output:
        render.emit_json(row)
        return
    render_upstream.status(row)


@mcp_app.command("tools")
@expected_errors
def mcp_tools(server: str = SERVER, json_output: bool = JSON_OPTION) -> None:
    """List an upstream server's tools as offered (SERVER/TOOL)."""
    from adapters.api import upstream  # noqa: PLC0415 - loaded when used
    from cli import render_upstream  # noqa: PLC0415 - as the API it renders

    rows = upstream.server_tools(resolve_home(), server)
    if json_output:
        render.emit_json(rows)
        return
    render_upstream.tools(server, rows)


@mcp_app.command("reload")
@expected_errors
def mcp_reload(
    server: str | None = typer.Argument(None, metavar="[SERVER]", help="One server; all if unset."),
    json_output: bool = JSON_OPTION,
) -> None:
    """Reconnect an upstream server (or all) now, back-off reset."""
    from adapters.api import upstream  # noqa: PLC0415 - loaded when used

    names = upstream.reload_servers(resolve_home(), server)
    if json_output:
        render.emit_json({"reloaded": names})
        return
    render.line(f"reloading {', '.join(names)}" if names else "no upstream server to reload")


@mcp_app.command("auth")
@expected_errors
def mcp_auth(
    server: str = SERVER,
    timeout: int = typer.Option(
        300, min=5, max=3600, metavar="SECONDS", help="How long to wait for the browser."
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Authorize an http server with OAuth; tokens kept owner-only."""

    def show(url: str) -> None:
        import webbrowser  # noqa: PLC0415 - only an authorization opens a browser

        render.line(f"Open this address to authorize {server}:\n  {url}", console=render.err)
        with contextlib.suppress(Exception):
            webbrowser.open(url)

    from adapters.api import upstream  # noqa: PLC0415 - loaded when used

    row = upstream.authorize_server(resolve_home(), server, show, float(timeout))
    if json_output:
        render.emit_json(row)
        return
    done = "; the daemon reconnects it now" if row["reloaded"] else ""
    render.line(f"authorized {server}: its tokens are stored{done}")
