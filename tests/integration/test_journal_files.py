"""The journal file itself, on real SQLite files.

Refused files leave nothing beside them, new ones are owner-only, and damage is found on
open, by the full check, and in use.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import struct
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from adapters.errors import JournalCorruptError, NewerSchemaError
from adapters.journal.header import SCHEMA_VERSION
from adapters.journal.identity import check_journal_file, prepare_journal_file
from adapters.journal.integrity import integrity_failures
from adapters.journal.journal import SqliteJournal
from adapters.journal.reader import JournalReader
from adapters.projections.runner import ProjectionRunner
from domain.ids import SessionId
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from projections.registry import ALL_PROJECTIONS
from tests.builders import open_with_writer
from tests.integration.sqlite_helpers import (
    companions,
    damage_root_page,
    fingerprint,
    grow,
    sha256,
    table_names,
)


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """A closed journal holding two sessions of 300 events each, all in the main file."""
    path = tmp_path / "ledgerclaw.db"
    journal = SqliteJournal(path)
    for _ in range(2):
        session_id, run_id = open_with_writer(journal)
        grow(journal, session_id, run_id, 300)
    journal.close()
    assert [] == companions(path)
    return path


@contextmanager
def umask(mask: int) -> Iterator[None]:
    """Run the block under `mask`."""
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode_of(path: Path) -> int:
    """The permission bits of `path`."""
    return stat.S_IMODE(path.stat().st_mode)


def damage_last_leaf(path: Path) -> None:
    """Overwrite the right-most child of the events table's root: the probe never reads it."""
    with closing(sqlite3.connect(path)) as conn:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'stored_events'"
        ).fetchone()
        (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    with path.open("r+b") as file:
        file.seek((root - 1) * page_size)
        page = file.read(page_size)
        assert 5 == page[0]  # an interior table page: the events span several leaves
        (last_child,) = struct.unpack(">I", page[8:12])
        file.seek((last_child - 1) * page_size)
        file.write(b"\xde\xad\xbe\xef" * (page_size // 4))


def test_a_truncated_journal_is_refused_and_leaves_nothing_beside_it(written: Path) -> None:
    """A journal cut short is a JournalCorruptError; no -wal or -shm appears, no byte changes."""
    with written.open("r+b") as file:
        file.truncate(written.stat().st_size // 2)
    before = fingerprint(written)

    with pytest.raises(JournalCorruptError, match="truncated"):
        SqliteJournal(written)
    with pytest.raises(JournalCorruptError, match="truncated"):
        JournalReader(written)

    assert before == fingerprint(written)


def test_a_newer_schema_journal_leaves_nothing_beside_it(written: Path) -> None:
    """Refusing a newer schema, for writing or for reading, creates no -wal or -shm file."""
    with closing(sqlite3.connect(written)) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        conn.commit()
    before = fingerprint(written)

    with pytest.raises(NewerSchemaError):
        SqliteJournal(written)
    with pytest.raises(NewerSchemaError):
        JournalReader(written)

    assert before == fingerprint(written)


def test_a_damaged_root_page_is_refused_on_open_and_leaves_nothing(written: Path) -> None:
    """Opening a journal whose events root is garbage names the file and the table."""
    damage_root_page(written)
    before = fingerprint(written)

    with pytest.raises(JournalCorruptError) as refused:
        SqliteJournal(written)

    assert str(written) in str(refused.value)
    assert "table stored_events" in str(refused.value)
    assert before == fingerprint(written)


def test_a_new_journal_is_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    """Under umask 000 the journal and its -wal and -shm are created 0600."""
    path = tmp_path / "ledgerclaw.db"
    with umask(0o000):
        journal = SqliteJournal(path)
        try:
            open_with_writer(journal)
            modes = {p.name: mode_of(p) for p in tmp_path.iterdir()}
        finally:
            journal.close()

    assert {
        "ledgerclaw.db": 0o600,
        "ledgerclaw.db-wal": 0o600,
        "ledgerclaw.db-shm": 0o600,
    } == modes


def test_an_empty_file_becomes_an_owner_only_journal(tmp_path: Path) -> None:
    """An empty file left readable by all is narrowed to 0600 when it is stamped."""
    path = tmp_path / "ledgerclaw.db"
    path.touch(mode=0o644)
    path.chmod(0o644)

    assert True is prepare_journal_file(path)

    assert 0o600 == mode_of(path)


def test_a_journal_without_tables_reads_as_one_without_events(tmp_path: Path) -> None:
    """A stamped journal with no tables yet is a journal with no events, for every reader."""
    path = tmp_path / "ledgerclaw.db"
    prepare_journal_file(path)

    reader = JournalReader(path)

    assert False is check_journal_file(path)
    assert [] == reader.sessions()
    assert [] == reader.transcript(SessionId.new())


def test_integrity_failures_of_a_whole_journal_is_empty(written: Path) -> None:
    """The full check finds nothing wrong with a healthy journal and leaves nothing beside it."""
    before = fingerprint(written)

    assert [] == integrity_failures(written)
    assert before == fingerprint(written)


def test_integrity_failures_name_the_damaged_page(written: Path) -> None:
    """The full check reports a damaged page and neither changes nor adds a file."""
    damage_root_page(written)
    before = fingerprint(written)

    failures = integrity_failures(written)

    assert any(failure.startswith("Page 2:") for failure in failures), failures
    assert before == fingerprint(written)


def test_integrity_failures_report_a_truncated_file(written: Path) -> None:
    """A file shorter than its header says is reported as truncated."""
    with written.open("r+b") as file:
        file.truncate(written.stat().st_size - 4096)

    failures = integrity_failures(written)

    assert 1 == len(failures)
    assert "truncated" in failures[0]


def test_integrity_failures_report_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    """A file that is not SQLite at all is one failure, saying so."""
    path = tmp_path / "copy.db"
    path.write_bytes(b"not a database at all, but long enough to have a header" * 4)

    failures = integrity_failures(path)

    assert 1 == len(failures)
    assert "not an SQLite database" in failures[0]


def test_damage_met_in_use_stops_every_later_write(tmp_path: Path) -> None:
    """Once a read meets a damaged page, the journal attempts no write and the file stays."""
    path = tmp_path / "ledgerclaw.db"
    journal = SqliteJournal(path)
    first, run_id = open_with_writer(journal)
    grow(journal, first, run_id, 150)
    last, run_id = open_with_writer(journal)
    grow(journal, last, run_id, 150)
    journal.close()
    damage_last_leaf(path)
    digest = sha256(path)
    journal = SqliteJournal(path)
    try:
        journal.session(first)
        with pytest.raises(JournalCorruptError, match="database disk image is malformed"):
            journal.session(last)

        with pytest.raises(JournalCorruptError, match=f"reading {last}"):
            journal.open_session(
                SessionOpening(SessionId.new(), "main:new", SessionKind.MAIN, Audience.PERSONAL)
            )
    finally:
        journal.close()

    assert digest == sha256(path)


def test_damage_the_journal_met_stops_the_projections_writing_too(tmp_path: Path) -> None:
    """After the journal met a damaged page, a projection catch-up creates no table."""
    path = tmp_path / "ledgerclaw.db"
    journal = SqliteJournal(path)
    session_id, run_id = open_with_writer(journal)
    grow(journal, session_id, run_id, 300)
    journal.close()
    damage_last_leaf(path)
    journal = SqliteJournal(path)
    try:
        with pytest.raises(JournalCorruptError):
            journal.session(session_id)
    finally:
        journal.close()
    tables = table_names(path)

    with pytest.raises(JournalCorruptError, match=f"reading {session_id}"):
        ProjectionRunner(path, ALL_PROJECTIONS).catch_up()

    assert tables == table_names(path)
