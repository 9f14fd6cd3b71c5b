"""What a copy of the journal holds: identity, schema, integrity, position; adapter layer.

A copy is opened read-only and only after its bytes were produced or checked by this
package, so reading it changes nothing and leaves no companion file beside it.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from adapters.journal.event_log import EVENTS_TABLE, SqliteEventLog
from adapters.journal.header import APPLICATION_ID, SCHEMA_VERSION
from adapters.journal.integrity import integrity_failures

MAX_REPORTED_PROBLEMS = 3


@dataclass(frozen=True)
class CopyFacts:
    """What one read-only look at a copy found; `problems` is empty for an intact journal."""

    application_id: int = 0
    schema_version: int = 0
    journal_position: int = 0
    events: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def summary(self) -> str:
        """The first problems, in one line."""
        return "; ".join(self.problems[:MAX_REPORTED_PROBLEMS])


def examine_copy(path: Path) -> CopyFacts:
    """Check `path` as a ledgerclaw journal, without writing to it."""
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)) as conn:
            return _examine(conn, path)
    except sqlite3.DatabaseError as error:
        return CopyFacts(problems=[f"not a readable SQLite database ({error})"])


def _examine(conn: sqlite3.Connection, path: Path) -> CopyFacts:
    application_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
    schema_version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    problems: list[str] = []
    if application_id != APPLICATION_ID:
        problems.append(f"not a ledgerclaw journal (application id {application_id:#x})")
    if not 1 <= schema_version <= SCHEMA_VERSION:
        problems.append(
            f"schema version {schema_version}, which this ledgerclaw cannot read"
            f" (it reads 1 to {SCHEMA_VERSION})"
        )
    integrity = integrity_failures(path, limit=MAX_REPORTED_PROBLEMS)
    if integrity:
        problems.append("integrity check failed: " + "; ".join(integrity))
        return CopyFacts(application_id, schema_version, problems=problems)
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    position = events = 0
    if EVENTS_TABLE in tables:
        log = SqliteEventLog(path)
        position, events = log.head(), log.count()
    return CopyFacts(application_id, schema_version, int(position), int(events), problems)
