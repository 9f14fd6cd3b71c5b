"""`ledgerclaw models list`: the configured model candidates and their resolution; CLI layer."""

from __future__ import annotations

import typer

from adapters.home import resolve_home
from cli import render, tables
from cli.common import JSON_OPTION, expected_errors

models_app = typer.Typer(help="The models the agent may ask.")

OFFLINE_OPTION = typer.Option(
    False, "--offline", help="Ask no server for its catalog: every resolution is not checked."
)

MODEL_COLUMNS = (
    tables.word("name"),
    tables.word("role"),
    tables.word("provider"),
    tables.text("model"),
    tables.text("credentials"),
    tables.text("resolution"),
    tables.number("window", optional=True),
    tables.text("address", optional=True),
)


@models_app.command("list")
@expected_errors
def list_(
    offline: bool = OFFLINE_OPTION,
    json_output: bool = JSON_OPTION,
) -> None:
    """List the configured models and whether each resolves.

    Each model's server is asked for its catalog (5 s each, all at once) unless --offline.
    """
    from adapters.api.models import list_models  # noqa: PLC0415 - loaded when used

    rows = list_models(resolve_home(), live=not offline)
    if json_output:
        render.emit_json(rows)
        return
    if not rows:
        render.line("No model is configured. Add a [models.NAME] table (see docs/agent.md).")
        return
    shown = [
        {
            "name": row["name"],
            "role": row["role"],
            "provider": row["provider"],
            "model": row["model"],
            "credentials": ", ".join(f"{p} {s}" for p, s in row["credentials"].items()),
            "resolution": row["resolution"]
            + (f" ({row['resolution_detail']})" if row["resolution_detail"] else ""),
            "window": f"{row['context_window']:,}",
            "address": row["base_url"] or "",
        }
        for row in rows
    ]
    tables.listing(render.out, MODEL_COLUMNS, shown, f"{len(rows)} model(s)")
