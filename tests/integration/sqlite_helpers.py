"""Helpers shared by the SQLite journal tests."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eventsourcing.application import project_aggregate
from eventsourcing.sqlite import SQLiteDatastore, SQLiteFactory

from adapters.journal.journal import SqliteJournal
from domain.ids import RunId, SessionId
from domain.session.aggregate import Session
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage, MessageRole

PAIRED_AT = datetime(2026, 1, 1, tzinfo=UTC)


def query(path: Path, sql: str, params: tuple[object, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of `sql` run on its own short-lived connection to `path`."""
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(sql, params).fetchall()


def pragma(path: Path, name: str) -> object:
    """The value of `PRAGMA name` in `path`."""
    return query(path, f"PRAGMA {name}")[0][0]


def fingerprint(path: Path) -> tuple[bytes, int, int, list[str]]:
    """The bytes, size, mtime and sibling file names of `path`, to show it was not touched."""
    status = path.stat()
    return (
        path.read_bytes(),
        status.st_size,
        status.st_mtime_ns,
        sorted(p.name for p in path.parent.iterdir()),
    )


def user_message(text: str) -> ChatMessage:
    """A user message with `text`."""
    return ChatMessage(role=MessageRole.USER, content=text)


def open_with_writer(
    journal: SqliteJournal, session_id: SessionId | None = None, key: str = "main:test"
) -> tuple[SessionId, RunId]:
    """Open a main session whose writer is a fresh run; the stream is then at version 3."""
    session_id = session_id or SessionId.new()
    run_id = RunId.new()
    journal.open_session(session_id, key, SessionKind.MAIN, Audience.PERSONAL)
    journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
    return session_id, run_id


def start_and_claim(session: Session, run_id: RunId) -> None:
    """Start `run_id` and make it the writer."""
    session.start_run(run_id)
    session.claim_writer(run_id)


def datastore_of(journal: SqliteJournal) -> SQLiteDatastore:
    """The eventsourcing datastore (and so the connection pool) behind `journal`."""
    factory = journal.app.factory
    assert isinstance(factory, SQLiteFactory)
    return factory.datastore


def grow(journal: SqliteJournal, session_id: SessionId, run_id: RunId, until: int) -> None:
    """Append messages, ten per command, until the stream reaches version `until`."""

    def append_batch(session: Session) -> None:
        for _ in range(min(10, until - session.version)):
            session.append_message(run_id, user_message(f"m{session.version}"))

    while journal.session(session_id).version < until:
        journal.update_session(session_id, append_batch)


def replay_without_snapshots(
    journal: SqliteJournal, session_id: SessionId, version: int | None = None
) -> Session:
    """The session folded from every stored event, ignoring snapshots."""
    events = journal.app.repository.event_store.get(session_id.as_uuid(), lte=version)
    session = project_aggregate(None, events)
    assert isinstance(session, Session)
    return session


def make_foreign_database(path: Path, application_id: int) -> None:
    """An SQLite database of another program: one table, one row, the given application id."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA application_id={application_id}")
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
        conn.commit()


def damage_root_page(path: Path, table: str = "stored_events") -> None:
    """Overwrite the root page of `table` with garbage, after checkpointing the WAL into `path`.

    This is the damage a torn write or a stray writer leaves: the schema still names the
    table, but its first page is no B-tree page at all.
    """
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xde\xad\xbe\xef" * (page_size // 4))


def sha256(path: Path) -> str:
    """The sha256 of the file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def companions(path: Path) -> list[str]:
    """The names of the `-wal` and `-shm` files beside `path`."""
    return sorted(p.name for p in path.parent.glob(path.name + "-*"))


def table_names(path: Path) -> list[str]:
    """The tables the schema of `path` names, read without creating anything beside it."""
    uri = f"{path.as_uri()}?mode=ro&immutable=1"
    with closing(sqlite3.connect(uri, uri=True)) as conn:
        rows = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    return sorted(name for (name,) in rows)
