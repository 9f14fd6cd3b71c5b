"""`ledgerclaw config check`: the configuration, checked as a daemon start does; CLI layer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from adapters.home import check_home, resolve_home
from cli import render
from cli.common import JSON_OPTION, expected_errors, print_warnings
from domain.errors import LedgerclawError

if TYPE_CHECKING:
    from adapters.config.loading import CheckedConfig

config_app = typer.Typer(help="Check the home's configuration files.")


@config_app.command("check")
@expected_errors
def check(json_output: bool = JSON_OPTION) -> None:
    """Check config.toml and secrets.toml, and start nothing.

    The same checks `daemon run` makes at start-up.
    """
    from adapters.config.loading import check_config  # noqa: PLC0415 - loaded when used

    home = resolve_home()
    try:
        checked = check_config(check_home(home).config, home.secrets)
    except LedgerclawError as failure:
        if not json_output:
            raise
        render.emit_json(
            {
                "ok": False,
                "path": str(home.config),
                "error": str(failure),
                "warnings": [],
                "summary": None,
            }
        )
        raise typer.Exit(failure.exit_code) from None
    facts = summary(checked)
    if json_output:
        render.emit_json(
            {
                "ok": True,
                "path": str(home.config),
                "error": None,
                "warnings": list(checked.warnings),
                "summary": facts,
            }
        )
        return
    found = "" if checked.config_found else " (no file: defaults)"
    approvals = ", ".join(f"{tool}={mode}" for tool, mode in facts["approval"].items())
    secrets = facts["secret_values"]
    lines = [
        f"config ok: {home.config}{found}",
        f"  daemon: port {facts['port']}, audience {facts['audience']}",
        f"  roots: {len(facts['roots']) or 'none'}",
        *(f"    {r['path']} ({', '.join(r['operations'])}){_state(r)}" for r in facts["roots"]),
        f"  approvals: {approvals or 'defaults'}",
        f"  approval timeout: {facts['approval_timeout_seconds']}s",
        f"  inline limit: {facts['inline_limit']} characters",
        f"  secrets: {'none' if secrets is None else f'{home.secrets}, {secrets} values'}",
        f"  agent: {_agent_line(facts['agent'])}",
        f"  models: {len(facts['models']) or 'none'}",
        *(f"    {name}: {_model_line(m)}" for name, m in facts["models"].items()),
    ]
    for line in lines:
        render.out.print(Text(line), soft_wrap=True)
    print_warnings(checked.warnings)


def _agent_line(agent: dict[str, Any]) -> str:
    if agent["model"] is None:
        return "no model chosen"
    fallbacks = ", ".join(agent["fallbacks"]) or "none"
    return f"model {agent['model']}, fallbacks {fallbacks}, at most {agent['turn_limit']} turns"


def _model_line(model: dict[str, Any]) -> str:
    where = f" at {model['base_url']}" if model["base_url"] else ""
    profiles = ", ".join(model["profiles"])
    window = f"{model['context_window']:,}"
    return f"{model['provider']} {model['model']}{where}, profiles {profiles}, window {window}"


def _state(root: dict[str, Any]) -> str:
    return "" if root["exists"] else f"  ({root['problem']})"


def summary(checked: CheckedConfig) -> dict[str, Any]:
    """The settings an operator checks first, as JSON-ready values."""
    from adapters.config.roots import RootState  # noqa: PLC0415 - as the checks it reads

    config = checked.config
    return {
        "config_found": checked.config_found,
        "port": config.daemon.port,
        "audience": str(config.daemon.audience),
        "roots": [
            {
                "path": root.path,
                "operations": [str(op) for op in root.operations],
                "audiences": [str(a) for a in root.audiences],
                "exists": check.state is RootState.DIRECTORY,
                "problem": check.problem or None,
            }
            for root, check in zip(config.tools.roots, checked.roots, strict=True)
        ],
        "approval": {tool: str(mode) for tool, mode in sorted(config.tools.approval.items())},
        "approval_timeout_seconds": config.tools.approval_timeout_seconds,
        "inline_limit": config.tools.inline_limit,
        "secret_values": checked.secret_values,
        "agent": {
            "model": config.agent.model,
            "fallbacks": list(config.agent.fallbacks),
            "turn_limit": config.agent.turn_limit,
        },
        "models": {
            name: {
                "provider": str(model.provider),
                "model": model.model,
                "base_url": model.base_url,
                "profiles": list(model.profiles),
                "context_window": model.context_window,
            }
            for name, model in sorted(config.models.items())
        },
    }
