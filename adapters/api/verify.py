"""Checking the live read models against a rebuild from the whole journal; adapter layer.

Every projection is rebuilt into a scratch SQLite file in a temporary directory, reading the
live journal, then each table is compared row by row (by primary key) with the live table.
The live tables are caught up first and both sides are brought to the same log position, so
a journal that is being written to does not show up as differences. The scratch file is
removed afterwards; the live tables are only caught up, never changed otherwise.
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.api.queries import overall_progress
from adapters.errors import JournalBusyError
from adapters.home import Home
from adapters.journal.failures import translated
from adapters.projections.runner import Progress, ProjectionRunner
from adapters.wiring.home import open_event_log, open_reader
from projections.contract import Projection, Table
from projections.registry import ALL_PROJECTIONS

ALIGN_ATTEMPTS = 5
"""How often the live and rebuilt positions are brought level before giving up."""

MISSING = "missing"
"""The rebuild has the row, the live table does not."""
EXTRA = "extra"
"""The live table has a row the rebuild does not."""
DIFFERENT = "different"
"""Both have the row, with a different value in one column."""


@dataclass(frozen=True)
class Difference:
    """One way a live table disagrees with its rebuild."""

    table: str
    key: dict[str, Any]
    """The row's primary key, column by column."""
    kind: str
    """`missing`, `extra` or `different`."""
    column: str | None = None
    """The differing column (`different` only)."""
    live: Any = None
    rebuilt: Any = None

    def as_dict(self) -> dict[str, Any]:
        """The difference as a JSON-ready dict."""
        return {
            "table": self.table,
            "key": self.key,
            "kind": self.kind,
            "column": self.column,
            "live": self.live,
            "rebuilt": self.rebuilt,
        }


def verify(
    home: Home,
    progress: Progress | None = None,
    projections: Sequence[Projection] | None = None,
) -> list[Difference]:
    """Rebuild every projection into a scratch file and compare it with the live tables."""
    chosen = tuple(ALL_PROJECTIONS if projections is None else projections)
    if not open_reader(home).exists:
        return []
    live = ProjectionRunner(home.database, chosen)
    with tempfile.TemporaryDirectory(prefix="ledgerclaw-verify-") as scratch_dir:
        scratch = Path(scratch_dir) / "rebuilt.db"
        rebuilt = ProjectionRunner(scratch, chosen, log=open_event_log(home))
        live.catch_up()
        for index, projection in enumerate(chosen):
            rebuilt.rebuild([projection.name], overall_progress(progress, index, len(chosen)))
        _align(live, rebuilt)
        return _compare(home.database, scratch, chosen)


def _positions(runner: ProjectionRunner) -> dict[str, int]:
    return {status.name: status.position for status in runner.status()}


def _align(live: ProjectionRunner, rebuilt: ProjectionRunner) -> None:
    """Catch both sides up until every projection stands at the same position in both."""
    for _ in range(ALIGN_ATTEMPTS):
        live_at, rebuilt_at = _positions(live), _positions(rebuilt)
        if live_at == rebuilt_at:
            return
        if any(live_at[name] < rebuilt_at[name] for name in live_at):
            live.catch_up()
        else:
            rebuilt.catch_up()
    msg = "the journal kept growing while the projections were verified; try again"
    raise JournalBusyError(msg)


def _compare(live: Path, rebuilt: Path, projections: Sequence[Projection]) -> list[Difference]:
    uri = f"{live.as_uri()}?mode=ro"
    with (
        translated(live, "comparing its read models"),
        closing(sqlite3.connect(uri, uri=True, timeout=5)) as db,
    ):
        db.execute("ATTACH DATABASE ? AS rebuilt", (f"{rebuilt.as_uri()}?mode=ro",))
        differences: list[Difference] = []
        for projection in projections:
            for table in projection.tables:
                differences.extend(_compare_table(db, table))
        db.execute("DETACH DATABASE rebuilt")
        return differences


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _compare_table(db: sqlite3.Connection, table: Table) -> list[Difference]:
    """Rows only in the rebuild, only in the live table, and rows whose columns differ."""
    columns = list(table.columns)
    key = list(table.pk) or columns
    name = _quoted(table.name)
    keys = ", ".join(_quoted(c) for c in key)
    joined = " AND ".join(f"l.{_quoted(c)} IS r.{_quoted(c)}" for c in key)
    differences: list[Difference] = []
    for kind, first, second in ((MISSING, "rebuilt", "main"), (EXTRA, "main", "rebuilt")):
        rows = db.execute(
            f"SELECT {keys} FROM {first}.{name} EXCEPT SELECT {keys} FROM {second}.{name}"  # noqa: S608 - names from the projection's table
            f" ORDER BY {keys}"
        ).fetchall()
        differences.extend(
            Difference(table.name, dict(zip(key, row, strict=True)), kind) for row in rows
        )
    others = [c for c in columns if c not in key]
    if not others:
        return differences
    changed = " OR ".join(f"l.{_quoted(c)} IS NOT r.{_quoted(c)}" for c in others)
    live_cols = ", ".join(f"l.{_quoted(c)}" for c in columns)
    rebuilt_cols = ", ".join(f"r.{_quoted(c)}" for c in others)
    rows = db.execute(
        f"SELECT {live_cols}, {rebuilt_cols} FROM main.{name} l"  # noqa: S608 - names from the projection's table
        f" JOIN rebuilt.{name} r ON {joined} WHERE {changed}"
        f" ORDER BY {', '.join(f'l.{_quoted(c)}' for c in key)}"
    ).fetchall()
    for row in rows:
        live_row = dict(zip(columns, row[: len(columns)], strict=True))
        rebuilt_row = dict(zip(others, row[len(columns) :], strict=True))
        row_key = {c: live_row[c] for c in key}
        differences.extend(
            Difference(table.name, row_key, DIFFERENT, c, live_row[c], rebuilt_row[c])
            for c in others
            if live_row[c] != rebuilt_row[c] or (live_row[c] is None) != (rebuilt_row[c] is None)
        )
    return differences
