"""Checking a database file for damage, cheaply on every open and fully on demand; adapter layer.

`probe` is what every open runs: it reads the schema and the first row of every table and
index, so a damaged root page (the usual sign of an overwritten or torn file) is found before
anything reads or writes the journal. It touches a few pages whatever the journal's size.
`integrity_failures` is the full check (`PRAGMA integrity_check`, every page), for the doctor
and for anyone who must know that a file is whole, such as a backup of it.

Both read through `read_only`, which leaves nothing beside a file that has no `-wal` or
`-shm` yet: such a file is read as immutable, since nobody has it open and everything it
holds is in the main file. A file with companions is read in the usual read-only mode.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from adapters.errors import NotAJournalError
from adapters.journal.failures import is_damage, sqlite_error_text
from adapters.journal.header import companions, read_header, truncation, wal_has_content

MAX_FAILURES = 20
"""How many problems the full check reports at most."""


@contextmanager
def read_only(path: Path, *, timeout: float = 5.0) -> Iterator[sqlite3.Connection]:
    """A read-only connection to `path` that creates no `-wal` or `-shm` beside it."""
    # Without companions no connection is open: the main file is all there is, and opening it
    # as immutable creates none. A writer that starts meanwhile commits to its new WAL, not to
    # the main file, until its first checkpoint (a thousand pages later by default).
    mode = "ro" if companions(path) else "ro&immutable=1"
    uri = f"{path.absolute().as_uri()}?mode={mode}"
    with closing(sqlite3.connect(uri, uri=True, timeout=timeout)) as db:
        yield db


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _probe_queries(db: sqlite3.Connection) -> Iterator[tuple[str, str]]:
    """(what, SQL) for reading the first entry of every table and index of the schema."""
    objects = db.execute(
        "SELECT type, name, tbl_name FROM sqlite_master"
        " WHERE rootpage > 0 AND type IN ('table', 'index') ORDER BY rootpage"
    ).fetchall()
    for kind, name, table in objects:
        if kind == "table":
            # A scan for every column reads the table's own tree, from its root down.
            yield f"table {name}", f"SELECT * FROM {_quoted(name)} LIMIT 1"  # noqa: S608 - names from the schema
            continue
        columns = [row[2] for row in db.execute(f"PRAGMA index_info({_quoted(name)})")]
        if not columns or columns[0] is None:
            continue  # an expression index: its root is checked by the full check only
        first = _quoted(columns[0])
        sql = (
            f"SELECT {first} FROM {_quoted(table)} INDEXED BY {_quoted(name)}"  # noqa: S608 - names from the schema
            f" ORDER BY {first} LIMIT 1"
        )
        yield f"index {name}", sql


def probe(db: sqlite3.Connection) -> str | None:
    """What fails when the schema and the root of every table and index are read, else None."""
    what = "the schema"
    try:
        for what, sql in _probe_queries(db):  # noqa: B007 - `what` names the failing read
            try:
                db.execute(sql).fetchall()
            except sqlite3.OperationalError as error:
                if "no query solution" not in str(error):
                    raise
                # A partial index this query cannot use; the full check covers it.
    except sqlite3.DatabaseError as error:
        if not is_damage(error):
            raise  # held or refused, not damaged: the caller says so
        return f"reading {what}: {sqlite_error_text(error)}"
    return None


def integrity_failures(path: Path, *, limit: int = MAX_FAILURES) -> list[str]:
    """What is wrong with the database file `path`; an empty list when it is whole.

    Runs `PRAGMA integrity_check` over every page (plus a check that the file is as long as
    its header says). Reads only: nothing is written to `path` and nothing is created beside
    it. A file that is not SQLite at all is reported as such.
    """
    try:
        header = read_header(path)
    except NotAJournalError as error:
        return [str(error)]
    if header is None:
        return []
    if not wal_has_content(path) and (cut := truncation(path, header)):
        return [cut]
    try:
        with read_only(path) as db:
            rows = db.execute(f"PRAGMA integrity_check({limit})").fetchall()
    except sqlite3.DatabaseError as error:
        return [sqlite_error_text(error)]
    # One row may hold several lines, under a heading that names the schema.
    problems = [line for (row,) in rows for line in str(row).splitlines() if line[:3] != "***"]
    return [] if problems == ["ok"] else problems
