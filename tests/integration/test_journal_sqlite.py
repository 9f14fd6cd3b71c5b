"""The SQLite journal file: identity, snapshots, durability, stable names; integration tests.

Everything here runs on real SQLite files in `tmp_path`.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing

import orjson
import pytest

from adapters.config.loading import load_config
from adapters.errors import (
    NewerSchemaError,
    NotAJournalError,
)
from adapters.journal.application import SNAPSHOT_INTERVAL, TunedConnectionPool
from adapters.journal.header import APPLICATION_ID, SCHEMA_VERSION
from adapters.journal.journal import SqliteJournal
from adapters.settings.journal import Durability, JournalSettings
from domain.ids import DeviceId
from tests.builders import open_with_writer, user_message
from tests.integration.sqlite_helpers import (
    PAIRED_AT,
    datastore_of,
    fingerprint,
    grow,
    make_foreign_database,
    pragma,
    query,
    replay_without_snapshots,
)

# -- the file ----------------------------------------------------------------------------------


def test_a_new_journal_is_stamped_with_the_application_id_and_schema_version(sqlite_journal):
    """A fresh journal carries ledgerclaw's application id and the current schema version."""
    path = sqlite_journal.path

    assert (APPLICATION_ID, SCHEMA_VERSION) == (
        pragma(path, "application_id"),
        pragma(path, "user_version"),
    )


def test_a_new_journal_is_in_wal_mode(sqlite_journal):
    """A fresh journal uses the write-ahead log."""
    assert "wal" == pragma(sqlite_journal.path, "journal_mode")


def test_a_new_journal_has_the_event_and_snapshot_tables(sqlite_journal):
    """A fresh journal holds the stored events and the stored snapshots tables."""
    tables = query(sqlite_journal.path, "SELECT name FROM sqlite_master WHERE type = 'table'")

    assert {"stored_events", "stored_snapshots"} == {name for (name,) in tables}


def test_an_empty_file_becomes_a_fresh_journal(tmp_path):
    """A zero-byte file is stamped and used as a new journal."""
    path = tmp_path / "ledgerclaw.db"
    path.write_bytes(b"")

    journal = SqliteJournal(path)
    try:
        session_id, _ = open_with_writer(journal)
        assert 3 == journal.session(session_id).version
    finally:
        journal.close()
    assert APPLICATION_ID == pragma(path, "application_id")


def test_reopening_a_journal_keeps_its_sessions(tmp_path):
    """A journal closed and opened again replays the same session state."""
    path = tmp_path / "ledgerclaw.db"
    journal = SqliteJournal(path)
    session_id, run_id = open_with_writer(journal)
    journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("hello")))
    before = journal.session(session_id).state()
    journal.close()

    reopened = SqliteJournal(path)
    try:
        assert before == reopened.session(session_id).state()
    finally:
        reopened.close()


def test_a_paired_device_authenticates_after_the_journal_is_reopened(tmp_path):
    """A device paired before a restart authenticates with its token after it."""
    path = tmp_path / "ledgerclaw.db"
    device_id = DeviceId.new()
    journal = SqliteJournal(path)
    token = journal.update_devices(
        lambda registry: registry.pair(device_id, "laptop", bytes(16), "t" * 40, PAIRED_AT)
    )
    journal.close()

    reopened = SqliteJournal(path)
    try:
        assert device_id == reopened.devices().authenticate(token)
    finally:
        reopened.close()


@pytest.mark.parametrize(
    "content",
    [b"just some notes\nnot a database\n", bytes(range(256)) * 16, bytes(range(200, 250))],
    ids=["text", "binary-page", "binary-short"],
)
def test_a_non_sqlite_file_is_refused_and_left_unchanged(tmp_path, content):
    """A file that is not SQLite raises NotAJournalError and keeps its bytes."""
    path = tmp_path / "ledgerclaw.db"
    path.write_bytes(content)
    before = fingerprint(path)

    with pytest.raises(NotAJournalError):
        SqliteJournal(path)

    assert before == fingerprint(path)


@pytest.mark.parametrize("application_id", [0, 0x12345678], ids=["no-id", "other-id"])
def test_a_foreign_sqlite_database_is_refused_and_left_unchanged(tmp_path, application_id):
    """Another program's SQLite database raises NotAJournalError and gets no journal tables."""
    path = tmp_path / "ledgerclaw.db"
    make_foreign_database(path, application_id)
    before = fingerprint(path)

    with pytest.raises(NotAJournalError, match="not a ledgerclaw journal"):
        SqliteJournal(path)

    assert before == fingerprint(path)
    assert [("notes",)] == query(path, "SELECT name FROM sqlite_master")
    assert [("keep me",)] == query(path, "SELECT body FROM notes")


def test_an_empty_sqlite_database_of_another_program_is_refused(tmp_path):
    """An SQLite file with another application id but no tables is still not a journal."""
    path = tmp_path / "ledgerclaw.db"
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA application_id=305419896")
        conn.commit()
    before = fingerprint(path)

    with pytest.raises(NotAJournalError):
        SqliteJournal(path)

    assert before == fingerprint(path)


def test_a_journal_with_a_newer_schema_is_refused_and_left_unchanged(tmp_path):
    """A journal written by a newer schema raises NewerSchemaError and is not modified."""
    path = tmp_path / "ledgerclaw.db"
    journal = SqliteJournal(path)
    open_with_writer(journal)
    journal.close()
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION + 1}")
        conn.commit()
    data, size, mtime, _ = fingerprint(path)
    rows = query(path, "SELECT originator_id, originator_version, topic FROM stored_events")

    with pytest.raises(NewerSchemaError, match="newer"):
        SqliteJournal(path)

    assert (data, size, mtime) == fingerprint(path)[:3]
    assert SCHEMA_VERSION + 1 == pragma(path, "user_version")
    assert rows == query(path, "SELECT originator_id, originator_version, topic FROM stored_events")


def test_a_directory_in_place_of_the_journal_is_refused(tmp_path):
    """A journal path that is a directory raises NotAJournalError."""
    path = tmp_path / "ledgerclaw.db"
    path.mkdir()

    with pytest.raises(NotAJournalError, match="not a regular file"):
        SqliteJournal(path)

    assert [] == list(path.iterdir())


# -- snapshots ---------------------------------------------------------------------------------


def test_a_snapshot_is_stored_when_a_session_passes_the_interval(sqlite_journal):
    """A session past the interval has one snapshot, at the head of the save that crossed it."""
    session_id, run_id = open_with_writer(sqlite_journal)

    grow(sqlite_journal, session_id, run_id, SNAPSHOT_INTERVAL + 50)

    rows = query(
        sqlite_journal.path,
        "SELECT originator_version, topic FROM stored_snapshots WHERE originator_id = ?",
        (session_id.hex,),
    )
    [(version, topic)] = rows
    assert "ledgerclaw.session.snapshot" == topic
    assert SNAPSHOT_INTERVAL <= version < SNAPSHOT_INTERVAL + 10


def test_a_session_rebuilt_from_a_snapshot_equals_a_full_replay(sqlite_journal):
    """The latest session read through its snapshot equals folding every event."""
    session_id, run_id = open_with_writer(sqlite_journal)
    grow(sqlite_journal, session_id, run_id, SNAPSHOT_INTERVAL + 50)

    session = sqlite_journal.session(session_id)

    assert SNAPSHOT_INTERVAL + 50 == session.version
    assert replay_without_snapshots(sqlite_journal, session_id).state() == session.state()


@pytest.mark.parametrize(
    "version", [3, SNAPSHOT_INTERVAL - 1, SNAPSHOT_INTERVAL, SNAPSHOT_INTERVAL + 1, 240]
)
def test_session_at_a_version_around_the_snapshot_equals_a_full_replay(sqlite_journal, version):
    """session(id, version=N) before, at and after the snapshot equals folding N events."""
    session_id, run_id = open_with_writer(sqlite_journal)
    grow(sqlite_journal, session_id, run_id, SNAPSHOT_INTERVAL + 50)

    session = sqlite_journal.session(session_id, version=version)

    assert version == session.version
    assert version - 3 == session.message_count
    assert version - 3 == len(sqlite_journal.transcript(session_id, upto=version))
    assert replay_without_snapshots(sqlite_journal, session_id, version).state() == session.state()


def test_the_latest_session_is_rebuilt_from_the_snapshot_without_earlier_events(
    sqlite_journal,
):
    """With the events up to the snapshot deleted, the latest session still rebuilds whole."""
    session_id, run_id = open_with_writer(sqlite_journal)
    grow(sqlite_journal, session_id, run_id, SNAPSHOT_INTERVAL + 20)
    expected = sqlite_journal.session(session_id).state()
    with closing(sqlite3.connect(sqlite_journal.path)) as conn:
        conn.execute(
            "DELETE FROM stored_events WHERE originator_id = ? AND originator_version <= ?",
            (session_id.hex, SNAPSHOT_INTERVAL),
        )
        conn.commit()

    assert expected == sqlite_journal.session(session_id).state()


# -- durability and busy timeout ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("durability", "synchronous"), [(Durability.FULL, 2), (Durability.NORMAL, 1)]
)
@pytest.mark.parametrize("writer", [False, True], ids=["reader", "writer"])
def test_pool_connections_use_the_configured_durability(tmp_path, durability, synchronous, writer):
    """Every connection the journal's pool hands out runs the configured PRAGMA synchronous."""
    journal = SqliteJournal(tmp_path / "j.db", JournalSettings(durability=durability))
    try:
        open_with_writer(journal)
        datastore = datastore_of(journal)
        assert isinstance(datastore.pool, TunedConnectionPool)
        with datastore.transaction(commit=writer) as cursor:
            cursor.execute("PRAGMA synchronous")
            assert synchronous == cursor.fetchone()[0]
    finally:
        journal.close()


def test_a_fresh_pool_connection_uses_the_configured_durability(tmp_path):
    """A connection created by the pool after startup also runs PRAGMA synchronous=NORMAL."""
    journal = SqliteJournal(tmp_path / "j.db", JournalSettings(durability=Durability.NORMAL))
    try:
        connection = datastore_of(journal).pool._create_connection()
        try:
            with connection.transaction(commit=False) as cursor:
                cursor.execute("PRAGMA synchronous")
                assert 1 == cursor.fetchone()[0]
        finally:
            connection.close()
    finally:
        journal.close()


def test_durability_normal_from_the_config_file_reaches_the_connections(tmp_path):
    """`durability = "normal"` in config.toml gives the journal's connections synchronous=1."""
    config = tmp_path / "config.toml"
    config.write_text('[journal]\ndurability = "normal"\n')
    journal = SqliteJournal(tmp_path / "j.db", load_config(config).journal)
    try:
        with datastore_of(journal).transaction(commit=False) as cursor:
            cursor.execute("PRAGMA synchronous")
            assert 1 == cursor.fetchone()[0]
    finally:
        journal.close()


def test_pool_connections_use_the_configured_busy_timeout(tmp_path):
    """The busy timeout from the settings becomes each connection's PRAGMA busy_timeout."""
    journal = SqliteJournal(tmp_path / "j.db", JournalSettings(busy_timeout_seconds=9))
    try:
        with datastore_of(journal).transaction(commit=False) as cursor:
            cursor.execute("PRAGMA busy_timeout")
            assert 9000 == cursor.fetchone()[0]
    finally:
        journal.close()


# -- stored names ------------------------------------------------------------------------------


def test_every_stored_topic_is_a_stable_ledgerclaw_name(sqlite_journal):
    """Events and snapshots are stored under `ledgerclaw.` topics, never module paths."""
    session_id, run_id = open_with_writer(sqlite_journal)
    grow(sqlite_journal, session_id, run_id, SNAPSHOT_INTERVAL)
    sqlite_journal.update_devices(
        lambda registry: registry.pair(DeviceId.new(), "phone", bytes(16), "t" * 40, PAIRED_AT)
    )
    path = sqlite_journal.path

    topics = {
        topic
        for (topic,) in query(path, "SELECT topic FROM stored_events")
        + query(path, "SELECT topic FROM stored_snapshots")
    }

    assert {
        "ledgerclaw.session.opened",
        "ledgerclaw.session.run_started",
        "ledgerclaw.session.writer_claimed",
        "ledgerclaw.session.message_appended",
        "ledgerclaw.session.snapshot",
        "ledgerclaw.devices.created",
        "ledgerclaw.devices.paired",
    } == topics


def test_created_events_name_their_aggregate_by_a_stable_name(sqlite_journal):
    """The first event of each stream stores `ledgerclaw.session` or `ledgerclaw.devices`."""
    open_with_writer(sqlite_journal)
    sqlite_journal.update_devices(
        lambda registry: registry.pair(DeviceId.new(), "phone", bytes(16), "t" * 40, PAIRED_AT)
    )

    rows = query(
        sqlite_journal.path,
        "SELECT topic, state FROM stored_events WHERE originator_version = 1 ORDER BY rowid",
    )

    assert [
        ("ledgerclaw.session.opened", "ledgerclaw.session"),
        ("ledgerclaw.devices.created", "ledgerclaw.devices"),
    ] == [(topic, orjson.loads(state)["originator_topic"]) for topic, state in rows]


def test_a_snapshot_names_its_aggregate_by_a_stable_name(sqlite_journal):
    """A stored snapshot's state names the Session class as `ledgerclaw.session`."""
    session_id, run_id = open_with_writer(sqlite_journal)
    grow(sqlite_journal, session_id, run_id, SNAPSHOT_INTERVAL)

    [(state,)] = query(sqlite_journal.path, "SELECT state FROM stored_snapshots")

    assert "ledgerclaw.session" == orjson.loads(state)["topic"]


# -- the process environment -------------------------------------------------------------------


def test_the_process_environment_cannot_move_or_swap_the_journal(tmp_path, monkeypatch):
    """Persistence variables in the environment are ignored: events land in the given file."""
    path, other = tmp_path / "ledgerclaw.db", tmp_path / "elsewhere.db"
    for prefix in ("", "LEDGERCLAW_"):
        monkeypatch.setenv(f"{prefix}PERSISTENCE_MODULE", "eventsourcing.popo")
        monkeypatch.setenv(f"{prefix}SQLITE_DBNAME", str(other))
    monkeypatch.setenv("SQLITE_SYNCHRONOUS", "OFF")

    journal = SqliteJournal(path)
    try:
        session_id, _ = open_with_writer(journal)
        with datastore_of(journal).transaction(commit=False) as cursor:
            cursor.execute("PRAGMA synchronous")
            assert 2 == cursor.fetchone()[0]
    finally:
        journal.close()

    stored = query(
        path, "SELECT count(*) FROM stored_events WHERE originator_id = ?", (session_id.hex,)
    )
    assert [(3,)] == stored
    assert not other.exists()
