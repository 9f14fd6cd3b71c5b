"""`ledgerclaw backup create|verify|restore`: copies of the journal, checked; CLI layer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.text import Text

from adapters.home import resolve_home
from cli import render
from cli.common import JSON_OPTION, expected_errors
from domain.errors import LedgerclawError

if TYPE_CHECKING:
    from adapters.backup.manifest import Manifest

backup_app = typer.Typer(help="Back up the journal online, verify a copy, restore one.")

BACKUP_ARGUMENT = typer.Argument(
    help="The backup copy (its manifest is the same path plus .manifest.json)."
)


def _line(text: str) -> None:
    render.out.print(Text(text), soft_wrap=True)


def _facts(manifest: Manifest) -> str:
    return (
        f"{manifest.events} events, journal position {manifest.journal_position},"
        f" schema {manifest.schema_version}, taken {manifest.created_at}"
    )


@backup_app.command("create")
@expected_errors
def create(
    path: Path | None = typer.Argument(
        None,
        help="Where to write the copy: a new file, or a directory to put it in."
        " Default: backups/ in the home, named for the time.",
    ),
    json_output: bool = JSON_OPTION,
) -> None:
    """Copy the journal online, check the copy, and write its manifest.

    The daemon may keep running meanwhile.
    """
    from adapters.backup.copy import create_backup  # noqa: PLC0415 - loaded when used

    with render.progress_bar("copying pages") as update:
        created = create_backup(resolve_home(), path, update)
    if json_output:
        render.emit_json(
            {"path": str(created.path), "manifest_path": str(created.manifest_path)}
            | created.manifest.model_dump(mode="json")
        )
        return
    _line(f"backup written: {created.path}")
    _line(f"  {_facts(created.manifest)}")
    _line(f"  manifest: {created.manifest_path}")


@backup_app.command("verify")
@expected_errors
def verify(path: Path = BACKUP_ARGUMENT, json_output: bool = JSON_OPTION) -> None:
    """Check a copy against its manifest and as a journal.

    Size and sha256 first, then identity, schema and integrity.
    """
    from adapters.backup.verify import verify_backup  # noqa: PLC0415 - loaded when used

    try:
        with render.progress_bar("checking") as update:
            verified = verify_backup(path, update)
    except LedgerclawError as failure:
        if not json_output:
            raise
        render.emit_json({"ok": False, "path": str(path), "error": str(failure)})
        raise typer.Exit(failure.exit_code) from None
    if json_output:
        render.emit_json(
            {"ok": True, "path": str(verified.path)} | verified.manifest.model_dump(mode="json")
        )
        return
    _line(f"backup ok: {verified.path}")
    _line(f"  {_facts(verified.manifest)}")


@backup_app.command("restore")
@expected_errors
def restore(path: Path = BACKUP_ARGUMENT, json_output: bool = JSON_OPTION) -> None:
    """Replace the journal by a verified copy, keeping the old one aside.

    Refused while a daemon or mcp serve holds the home.
    """
    from adapters.backup.restore import restore_backup  # noqa: PLC0415 - loaded when used

    with render.progress_bar("restoring") as update:
        restored = restore_backup(resolve_home(), path, update)
    replaced = None if restored.replaced is None else str(restored.replaced)
    if json_output:
        render.emit_json(
            {"journal": str(restored.journal), "backup": str(restored.backup), "replaced": replaced}
            | {"manifest": restored.manifest.model_dump(mode="json")}
        )
        return
    _line(f"restored {restored.backup} as {restored.journal}")
    _line(f"  {_facts(restored.manifest)}")
    _line(
        "  the home had no journal before"
        if replaced is None
        else f"  the replaced journal is kept at {replaced}"
    )
