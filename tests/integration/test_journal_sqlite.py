"""The SQLite journal file, its configuration, its home and its read-only reader; integration tests.

Everything here runs on real SQLite files in `tmp_path`.
"""

from __future__ import annotations

import sqlite3
import stat
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from eventsourcing.application import project_aggregate
from eventsourcing.sqlite import SQLiteDatastore, SQLiteFactory

from adapters.config import Config, Durability, JournalSettings, load_config
from adapters.errors import (
    AmbiguousSessionError,
    ConfigError,
    HomeError,
    NewerSchemaError,
    NotAJournalError,
    PersistenceNotConfigurableError,
    UnknownSessionError,
)
from adapters.home import Home, ensure_home, resolve_home
from adapters.journal.application import SNAPSHOT_INTERVAL, TunedConnectionPool
from adapters.journal.identity import APPLICATION_ID, SCHEMA_VERSION
from adapters.journal.journal import SqliteJournal
from adapters.journal.reader import JournalReader
from domain.ids import DeviceId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.values import Audience, ChatMessage, MessageRole, SessionKind

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


# -- configuration -----------------------------------------------------------------------------


def test_a_missing_config_file_means_the_defaults(tmp_path):
    """load_config on a path with no file returns the default configuration."""
    config = load_config(tmp_path / "config.toml")

    assert Config() == config
    assert Durability.FULL == config.journal.durability
    assert not (tmp_path / "config.toml").exists()


def test_durability_normal_parses(tmp_path):
    """`durability = "normal"` in the [journal] section reads as Durability.NORMAL."""
    path = tmp_path / "config.toml"
    path.write_text('[journal]\ndurability = "normal"\nbusy_timeout_seconds = 30\n')

    settings = load_config(path).journal

    assert JournalSettings(durability=Durability.NORMAL, busy_timeout_seconds=30) == settings


@pytest.mark.parametrize(
    "text",
    [
        '[persistence]\nmodule = "eventsourcing.popo"\n',
        '[persistence]\nsqlite_dbname = ":memory:"\n',
        "[persistence]\n",
    ],
    ids=["module", "dbname", "empty"],
)
def test_a_persistence_section_is_refused(tmp_path, text):
    """Any [persistence] section raises PersistenceNotConfigurableError naming the file."""
    path = tmp_path / "config.toml"
    path.write_text(text)

    with pytest.raises(PersistenceNotConfigurableError) as caught:
        load_config(path)

    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [
        b"[journal\ndurability = 'full'\n",
        b"journal = \n",
        b"colour = 'blue'\n",
        b"[journal]\ncolour = 'blue'\n",
        b"[journal]\ndurability = 'sometimes'\n",
        b"[journal]\nbusy_timeout_seconds = 0\n",
        b"[journal]\ndurability = '\xff'\n",
    ],
    ids=[
        "bad-table",
        "missing-value",
        "unknown-top-level-key",
        "unknown-journal-key",
        "unknown-durability",
        "timeout-too-small",
        "not-utf8",
    ],
)
def test_an_invalid_config_raises_config_error_naming_the_file(tmp_path, content):
    """Invalid TOML, unknown keys and bad values raise ConfigError with the file's path."""
    path = tmp_path / "config.toml"
    path.write_bytes(content)

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(path) in str(caught.value)


def test_a_config_path_that_is_a_directory_raises_config_error(tmp_path):
    """A directory where config.toml should be raises ConfigError naming it."""
    path = tmp_path / "config.toml"
    path.mkdir()

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(path) in str(caught.value)


# -- home --------------------------------------------------------------------------------------


def test_ensure_home_creates_a_missing_home_private_to_its_user(home):
    """A missing home is created as a directory with mode 0o700."""
    ensured = ensure_home(resolve_home())

    assert home == ensured.root
    assert home.is_dir()
    assert 0o700 == stat.S_IMODE(home.stat().st_mode)


def test_ensure_home_keeps_an_existing_home_and_its_files(home):
    """An existing home is accepted as it is, with its files in place."""
    home.mkdir()
    (home / "config.toml").write_text("")

    ensure_home(resolve_home())

    assert ["config.toml"] == [p.name for p in home.iterdir()]


def test_a_home_that_is_a_regular_file_raises_home_error(home):
    """A home path naming a regular file raises HomeError and leaves the file."""
    home.write_text("not a directory")

    with pytest.raises(HomeError, match="not a directory"):
        ensure_home(resolve_home())

    assert "not a directory" == home.read_text()


def test_a_home_whose_parent_is_a_regular_file_raises_home_error(tmp_path):
    """A home below a regular file cannot be created and raises HomeError."""
    parent = tmp_path / "plain-file"
    parent.write_text("")

    with pytest.raises(HomeError, match="cannot create home"):
        ensure_home(Home(parent / "home"))


def test_the_home_fixes_the_journal_and_config_names(home):
    """The journal and the configuration always live at fixed names inside the home."""
    resolved = resolve_home()

    assert (home / "ledgerclaw.db", home / "config.toml") == (resolved.database, resolved.config)


# -- the reader --------------------------------------------------------------------------------


def test_the_reader_lists_sessions_with_their_key_kind_and_event_count(sqlite_journal):
    """sessions() lists each session oldest first with key, kind, audience and events."""
    first, run_id = open_with_writer(sqlite_journal, key="main:first")
    sqlite_journal.update_session(first, lambda s: s.append_message(run_id, user_message("hi")))
    child = SessionId.new()
    sqlite_journal.open_session(child, "sub:1", SessionKind.SUBAGENT, Audience.TEAM, first)

    sessions = JournalReader(sqlite_journal.path).sessions()

    assert [
        (first, "main:first", "main", "personal", None, 4),
        (child, "sub:1", "subagent", "team", first, 1),
    ] == [
        (s.session_id, s.session_key, s.kind, s.audience, s.parent_session_id, s.events)
        for s in sessions
    ]
    assert all(s.opened_at <= s.last_event_at for s in sessions)


def test_the_reader_lists_no_device_registry_as_a_session(sqlite_journal):
    """A paired device does not show up in the session list."""
    sqlite_journal.update_devices(
        lambda registry: registry.pair(DeviceId.new(), "phone", bytes(16), "t" * 40, PAIRED_AT)
    )

    assert [] == JournalReader(sqlite_journal.path).sessions()


SHARED_A = SessionId("ses_abcd" + "0" * 28)
SHARED_B = SessionId("ses_abcd" + "1" * 28)
LONE = SessionId("ses_ef01" + "2" * 28)


@pytest.fixture
def reader(sqlite_journal) -> JournalReader:
    """A reader on a journal with two sessions sharing the prefix `abcd` and one other."""
    for session_id in (SHARED_A, SHARED_B, LONE):
        sqlite_journal.open_session(session_id, "k", SessionKind.MAIN, Audience.PERSONAL)
    return JournalReader(sqlite_journal.path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (str(SHARED_A), SHARED_A),
        (SHARED_B.hex, SHARED_B),
        ("ses_abcd0", SHARED_A),
        ("abcd1", SHARED_B),
        ("ef01", LONE),
        ("  SES_EF01  ", LONE),
    ],
    ids=["full-id", "hex-without-prefix", "unique-prefix", "bare-prefix", "short", "upper-case"],
)
def test_resolve_session_finds_the_one_matching_session(reader, text, expected):
    """A full id, its hex digits or a unique prefix of them resolve to that session."""
    assert expected == reader.resolve_session(text)


def test_an_ambiguous_prefix_raises_ambiguous_session_error(reader):
    """A prefix shared by two sessions raises AmbiguousSessionError."""
    with pytest.raises(AmbiguousSessionError, match="ambiguous"):
        reader.resolve_session("ses_abcd")


@pytest.mark.parametrize(
    "text",
    [
        "abc",
        "ses_ab",
        "",
        "ses_",
        "abcz",
        "ses_" + "g" * 32,
        "abcd" * 8 + "0",
        "0000",
        SessionId.new(),
    ],
    ids=[
        "too-short",
        "too-short-with-prefix",
        "empty",
        "prefix-only",
        "non-hex",
        "non-hex-full",
        "longer-than-an-id",
        "unknown-prefix",
        "unknown-id",
    ],
)
def test_an_unusable_or_unknown_id_raises_unknown_session_error(reader, text):
    """Too short, non-hex and unmatched ids raise UnknownSessionError but not the ambiguous one."""
    with pytest.raises(UnknownSessionError) as caught:
        reader.resolve_session(text)

    assert not isinstance(caught.value, AmbiguousSessionError)


def test_the_timeline_lists_a_streams_events_in_order_with_key_fields(sqlite_journal):
    """timeline() gives positions 1..N, short event names and the key fields of each event."""
    session_id, run_id = open_with_writer(sqlite_journal, key="main:tl")
    sqlite_journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("x")))

    timeline = JournalReader(sqlite_journal.path).timeline(session_id)

    assert [
        (1, "session.opened", {"session_key": "main:tl", "kind": "main", "audience": "personal"}),
        (2, "session.run_started", {"run_id": run_id}),
        (3, "session.writer_claimed", {"run_id": run_id}),
        (4, "session.message_appended", {"run_id": run_id, "role": "user"}),
    ] == [(e.position, e.event, e.fields) for e in timeline]
    log_positions = [e.log_position for e in timeline]
    assert sorted(log_positions) == log_positions
    assert len(set(log_positions)) == len(log_positions)
    assert all(e.recorded_at for e in timeline)


def test_the_timeline_stops_at_the_limit(sqlite_journal):
    """timeline(limit=N) gives the first N events only."""
    session_id, _ = open_with_writer(sqlite_journal)

    timeline = JournalReader(sqlite_journal.path).timeline(session_id, limit=2)

    assert [1, 2] == [e.position for e in timeline]


def test_the_timeline_of_an_unknown_session_raises_unknown_session_error(sqlite_journal):
    """timeline() of a session that is not in the journal raises UnknownSessionError."""
    open_with_writer(sqlite_journal)

    with pytest.raises(UnknownSessionError):
        JournalReader(sqlite_journal.path).timeline(SessionId.new())


def test_the_reader_head_is_the_streams_last_version(sqlite_journal):
    """head() is the number of events in the session's stream."""
    session_id, run_id = open_with_writer(sqlite_journal)
    sqlite_journal.update_session(session_id, lambda s: s.append_message(run_id, user_message("x")))

    assert 4 == JournalReader(sqlite_journal.path).head(session_id)


def test_the_reader_head_of_an_unknown_session_raises_unknown_session_error(sqlite_journal):
    """head() of a session that is not in the journal raises UnknownSessionError."""
    open_with_writer(sqlite_journal)

    with pytest.raises(UnknownSessionError):
        JournalReader(sqlite_journal.path).head(SessionId.new())


def test_the_reader_on_a_missing_journal_finds_nothing_and_creates_no_file(tmp_path):
    """Without a journal file, sessions() is empty, lookups fail and no file appears."""
    path = tmp_path / "ledgerclaw.db"

    reader = JournalReader(path)

    assert [] == reader.sessions()
    with pytest.raises(UnknownSessionError):
        reader.resolve_session("abcd")
    with pytest.raises(UnknownSessionError):
        reader.timeline(SessionId.new())
    assert [] == list(tmp_path.iterdir())


def test_the_reader_refuses_a_foreign_database(tmp_path):
    """A reader on another program's SQLite database raises NotAJournalError."""
    path = tmp_path / "ledgerclaw.db"
    make_foreign_database(path, 0)

    with pytest.raises(NotAJournalError):
        JournalReader(path)
