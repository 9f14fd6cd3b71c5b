"""`ledgerclaw backup create|verify|restore` on real homes and real files, without a daemon."""

from __future__ import annotations

import json
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from adapters.backup.copy import create_backup
from adapters.backup.guard import HomeGuard
from adapters.backup.verify import verify_backup
from adapters.home import Home
from adapters.journal.journal import SqliteJournal
from domain.ids import SessionId
from tests.builders import write_sample_session
from tests.cli_runner import invoke
from tests.daemon_harness import free_port, run_cli, wait_for
from tests.integration.sqlite_helpers import query

EVENTS = "SELECT originator_id, originator_version FROM stored_events"
COMMITS_DURING_COPY = 3

HOLD_OPEN = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM stored_events").fetchone()
print("open", flush=True)
time.sleep(60)
"""
"""Keeps one connection to the journal open, as a command or a tool call in progress does."""
KEEP_WRITING = """
import sys
from pathlib import Path
from adapters.backup.copy import create_backup
from adapters.backup.guard import HomeGuard
from adapters.backup.verify import verify_backup
from adapters.home import Home
from adapters.journal.journal import SqliteJournal
from tests.builders import write_sample_session
from tests.daemon_harness import free_port, run_cli, wait_for
journal = SqliteJournal(Path(sys.argv[1]))
write_sample_session(journal, "main:writer")
print("writing", flush=True)
while True:
    write_sample_session(journal, "main:writer")
"""
"""Writes one session after another into the journal until killed."""
OPEN_JOURNAL = """
import sqlite3, sys
sqlite3.connect(sys.argv[1], timeout=0).execute("SELECT count(*) FROM stored_events").fetchone()
"""


def add_session(home: Path, key: str) -> SessionId:
    """Write one more realistic session into the home's journal."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    journal = SqliteJournal(home / "ledgerclaw.db")
    try:
        return write_sample_session(journal, key)
    finally:
        journal.close()


def create(*args: str) -> dict[str, object]:
    """`backup create ARGS --json`, which must succeed."""
    code, out, err = invoke("backup", "create", *args, "--json")
    assert 0 == code, err
    return dict(json.loads(out))


def journal_files(home: Path) -> dict[str, bytes]:
    """The bytes of the journal and its WAL, to show a refused command changed neither."""
    names = ("ledgerclaw.db", "ledgerclaw.db-wal")
    return {name: (home / name).read_bytes() for name in names if (home / name).exists()}


def listed_keys() -> list[str]:
    """The session keys `session list` shows for the selected home."""
    code, out, err = invoke("session", "list", "--json")
    assert 0 == code, err
    return sorted(row["session_key"] for row in json.loads(out))


def flip_byte(path: Path, offset: int) -> None:
    """Change one byte of `path` in place, keeping its size."""
    with path.open("r+b") as file:
        file.seek(offset)
        old = file.read(1)
        file.seek(offset)
        file.write(bytes([old[0] ^ 0xFF]))


def damage_events_table(database: Path) -> None:
    """Overwrite the root page of `stored_events` after a checkpoint, as a bad disk would."""
    with closing(sqlite3.connect(database)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'stored_events'"
        ).fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with database.open("r+b") as file:
        file.seek((root - 1) * page_size)
        file.write(b"\xa5" * page_size)


def one_error_line(err: str) -> str:
    """The single `error: …` line an expected failure prints (after any warning line)."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning: ")]
    assert 1 == len(lines), err
    assert lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A directory this process cannot create files in (made immutable when running as root)."""
    directory = tmp_path / "readonly"
    directory.mkdir()
    directory.chmod(0o500)
    chattr = shutil.which("chattr")
    immutable = False
    probe = directory / "probe"
    try:
        probe.touch()
    except PermissionError:
        pass
    else:
        probe.unlink()
        if chattr is not None:
            immutable = subprocess.run([chattr, "+i", str(directory)], check=False).returncode == 0
        if not immutable:
            pytest.skip("this user can write in any directory and cannot make one immutable")
    yield directory
    if immutable and chattr is not None:
        subprocess.run([chattr, "-i", str(directory)], check=True)
    directory.chmod(0o700)


def test_create_writes_an_owner_only_copy_and_its_manifest_in_the_home(home: Path) -> None:
    """The default copy lands in backups/ (0700) as a 0600 file whose manifest describes it."""
    add_session(home, "main:first")
    created = create()
    copy = Path(str(created["path"]))
    manifest = json.loads(Path(str(created["manifest_path"])).read_text())
    assert home / "backups" == copy.parent
    assert 0o700 == stat.S_IMODE(copy.parent.stat().st_mode)
    assert 0o600 == stat.S_IMODE(copy.stat().st_mode)
    assert 0o600 == stat.S_IMODE(Path(str(created["manifest_path"])).stat().st_mode)
    events, position = query(
        home / "ledgerclaw.db", "SELECT count(*), max(rowid) FROM stored_events"
    )[0]
    assert (copy.name, copy.stat().st_size, 1) == (
        manifest["file"],
        manifest["size"],
        manifest["schema_version"],
    )
    assert (events, position) == (manifest["events"], manifest["journal_position"])
    assert [copy.name, copy.name + ".manifest.json"] == sorted(
        p.name for p in copy.parent.iterdir()
    )
    code, out, _ = invoke("backup", "verify", str(copy))
    assert 0 == code
    assert f"backup ok: {copy}" in out


@pytest.mark.slow
def test_a_copy_made_page_by_page_beside_a_writer_is_one_consistent_instant(home: Path) -> None:
    """Another process commits between the copy's steps; the copy never restarts or mixes."""
    for index in range(5):
        add_session(home, f"main:{index}")
    database = home / "ledgerclaw.db"
    steps: list[int] = []

    def count() -> int:
        return int(query(database, "SELECT count(*) FROM stored_events")[0][0])

    def step(done: int, _total: int) -> None:
        steps.append(done)
        if len(steps) <= COMMITS_DURING_COPY:
            seen = count()
            wait_for(lambda: count() > seen, what="the writer's next commit")

    with subprocess.Popen(
        [sys.executable, "-c", KEEP_WRITING, str(database)], stdout=subprocess.PIPE, text=True
    ) as writer:
        try:
            assert writer.stdout is not None
            assert "writing" == writer.stdout.readline().strip()
            before = set(query(database, EVENTS))
            created = create_backup(Home(home), progress=step, pages_per_step=1)
        finally:
            writer.kill()
    copied = set(query(created.path, EVENTS))
    assert set() == before - copied
    assert sorted(set(steps)) == steps
    assert created.manifest == verify_backup(created.path).manifest
    assert len(copied) == created.manifest.events
    assert len(copied) < count()


def test_create_into_a_directory_names_each_copy_apart(home: Path, tmp_path: Path) -> None:
    """Two copies into one directory get two names, and each verifies."""
    add_session(home, "main:first")
    target = tmp_path / "elsewhere"
    target.mkdir()
    first = Path(str(create(str(target))["path"]))
    second = Path(str(create(str(target))["path"]))
    assert first != second
    assert target == first.parent == second.parent
    for copy in (first, second):
        assert 0 == invoke("backup", "verify", str(copy))[0]


def test_verify_catches_a_flipped_byte(home: Path) -> None:
    """One changed byte in the copy fails verification with exit code 7 and one line."""
    add_session(home, "main:first")
    copy = Path(str(create()["path"]))
    flip_byte(copy, copy.stat().st_size // 2)
    code, _, err = invoke("backup", "verify", str(copy))
    assert 8 == code
    assert "does not match its manifest's sha256" in one_error_line(err)


@pytest.mark.parametrize(
    ("field", "value", "reported"),
    [
        ("journal_position", 1, "journal_position"),
        ("events", 0, "events"),
        ("sha256", "0" * 64, "sha256"),
        ("size", 4096, "bytes, its manifest says 4096"),
        ("file", "other.db", "describes 'other.db'"),
        ("schema_version", "one", "schema_version"),
        ("signed_by", "me", "signed_by"),
    ],
)
def test_verify_catches_an_edited_manifest(
    home: Path, field: str, value: object, reported: str
) -> None:
    """A manifest changed in any field no longer vouches for the copy: exit 7, one line."""
    add_session(home, "main:first")
    created = create()
    manifest_file = Path(str(created["manifest_path"]))
    manifest = json.loads(manifest_file.read_text())
    manifest[field] = value
    manifest_file.write_text(json.dumps(manifest))
    code, _, err = invoke("backup", "verify", str(created["path"]))
    assert 8 == code
    assert reported in one_error_line(err)


def test_verify_without_a_manifest_or_copy_says_which_is_missing(home: Path) -> None:
    """A copy without its manifest fails (7); a path with nothing at it is not found (6)."""
    add_session(home, "main:first")
    created = create()
    Path(str(created["manifest_path"])).unlink()
    code, out, _ = invoke("backup", "verify", str(created["path"]), "--json")
    assert 8 == code
    answer = json.loads(out)
    assert (False, True) == (answer["ok"], "has no manifest" in answer["error"])
    code, _, err = invoke("backup", "verify", str(home / "backups" / "none.db"))
    assert 6 == code
    assert "no backup there" in one_error_line(err)


def test_create_into_a_missing_directory_leaves_nothing(home: Path, tmp_path: Path) -> None:
    """A copy asked for in a directory that does not exist is refused with exit code 3."""
    add_session(home, "main:first")
    code, _, err = invoke("backup", "create", str(tmp_path / "absent" / "copy.db"))
    assert 3 == code
    assert "does not exist" in one_error_line(err)
    assert not (tmp_path / "absent").exists()


def test_create_into_an_unwritable_directory_leaves_nothing(home: Path, unwritable: Path) -> None:
    """A directory the copy cannot be written in is refused with exit code 3, leaving no file."""
    add_session(home, "main:first")
    code, _, err = invoke("backup", "create", str(unwritable / "copy.db"))
    assert 3 == code
    assert f"cannot write a backup in {unwritable}" in one_error_line(err)
    assert [] == list(unwritable.iterdir())


def test_create_never_replaces_a_file(home: Path, tmp_path: Path) -> None:
    """A target that exists is refused and left as it was."""
    add_session(home, "main:first")
    target = tmp_path / "taken.db"
    target.write_bytes(b"mine")
    code, _, err = invoke("backup", "create", str(target))
    assert 3 == code
    assert "already exists" in one_error_line(err)
    assert b"mine" == target.read_bytes()
    assert ["taken.db"] == sorted(p.name for p in tmp_path.iterdir() if p.name != "home")


def test_create_on_a_home_without_a_journal_is_not_found(home: Path) -> None:
    """There is nothing to copy on a new home: exit code 6, and no home is created."""
    code, _, err = invoke("backup", "create")
    assert 6 == code
    assert "no journal to back up" in one_error_line(err)
    assert not home.exists()


def test_create_from_a_damaged_journal_fails_and_writes_no_copy(home: Path) -> None:
    """A journal with a broken page gives exit code 7 and one line; no copy, partial or whole."""
    add_session(home, "main:first")
    database = home / "ledgerclaw.db"
    damage_events_table(database)
    before = database.read_bytes()
    code, _, err = invoke("backup", "create")
    assert 7 == code
    assert "damaged" in one_error_line(err) or "failed its check" in one_error_line(err)
    backups = home / "backups"
    assert [] == (list(backups.iterdir()) if backups.exists() else [])
    assert before == database.read_bytes()


def test_restore_brings_back_the_copy_and_keeps_the_replaced_journal(home: Path) -> None:
    """After a restore the home shows the copy's sessions; the replaced journal is kept aside."""
    add_session(home, "main:first")
    copy = create()["path"]
    add_session(home, "main:later")
    assert ["main:first", "main:later"] == listed_keys()
    code, out, err = invoke("backup", "restore", str(copy), "--json")
    assert 0 == code, err
    restored = json.loads(out)
    replaced = Path(restored["replaced"])
    assert home / "backups" == replaced.parent
    assert replaced.name.startswith("ledgerclaw.db.replaced-")
    assert ["main:first"] == listed_keys()
    kept = query(replaced, "SELECT count(DISTINCT originator_id) FROM stored_events")[0][0]
    assert 2 == kept  # both sessions, the later one included
    database = home / "ledgerclaw.db"
    assert 0o600 == stat.S_IMODE(database.stat().st_mode)
    assert "wal" == query(database, "PRAGMA journal_mode")[0][0]
    add_session(home, "main:after")
    assert ["main:after", "main:first"] == listed_keys()


def test_restore_into_a_new_home_needs_no_journal_there(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy restored into a home that does not exist yet creates it; nothing is kept aside."""
    add_session(home, "main:first")
    copy = create()["path"]
    monkeypatch.setenv("LEDGERCLAW_HOME", str(tmp_path / "new-home"))
    code, out, err = invoke("backup", "restore", str(copy), "--json")
    assert 0 == code, err
    assert json.loads(out)["replaced"] is None
    assert ["main:first"] == listed_keys()
    assert 0o700 == stat.S_IMODE((tmp_path / "new-home").stat().st_mode)


def test_restore_replaces_a_damaged_journal(home: Path) -> None:
    """The remedy for a broken journal: restore the last backup, and the doctor is content."""
    add_session(home, "main:first")
    copy = create()["path"]
    damage_events_table(home / "ledgerclaw.db")
    code, _, err = invoke("backup", "restore", str(copy))
    assert 0 == code, err
    code, out, err = invoke("doctor", "--json")
    assert 0 == code, out + err
    assert ["main:first"] == listed_keys()


def test_restore_of_a_damaged_copy_changes_nothing(home: Path) -> None:
    """A copy that fails verification is refused (exit 7) before the home is touched."""
    add_session(home, "main:first")
    copy = Path(str(create()["path"]))
    add_session(home, "main:later")
    flip_byte(copy, copy.stat().st_size - 100)
    before = journal_files(home)
    code, _, err = invoke("backup", "restore", str(copy))
    assert 8 == code
    assert "does not match" in one_error_line(err)
    assert before == journal_files(home)
    assert [copy.name, copy.name + ".manifest.json"] == sorted(
        p.name for p in (home / "backups").iterdir()
    )


def test_restore_is_refused_while_another_process_has_the_journal_open(home: Path) -> None:
    """An open connection elsewhere holds the home: exit code 3, one line, journal unchanged."""
    add_session(home, "main:first")
    copy = create()["path"]
    add_session(home, "main:later")
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(home / "ledgerclaw.db")],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            assert "open" == holder.stdout.readline().strip()
            before = journal_files(home)
            code, _, err = invoke("backup", "restore", str(copy))
        finally:
            holder.kill()
    assert 3 == code
    assert "has the journal" in one_error_line(err)
    assert before == journal_files(home)
    assert ["main:first", "main:later"] == listed_keys()
    assert not any(p.name.startswith("ledgerclaw.db.") for p in (home / "backups").iterdir())
    assert not (home / "daemon.pid").exists()


@pytest.mark.slow
def test_while_a_restore_holds_the_home_nothing_starts_or_opens_the_journal(home: Path) -> None:
    """The guard a restore takes keeps a daemon from starting and any process from reading."""
    add_session(home, "main:first")
    database = home / "ledgerclaw.db"
    with HomeGuard(Home(home)):
        daemon = run_cli(home, "daemon", "run", "--port", str(free_port()))
        opener = subprocess.run(
            [sys.executable, "-c", OPEN_JOURNAL, str(database)],
            capture_output=True,
            text=True,
            check=False,
        )
    assert 3 == daemon.returncode
    assert "a daemon is already running" in one_error_line(daemon.stderr)
    assert 0 != opener.returncode
    assert "sqlite3.OperationalError" in opener.stderr
    assert ["main:first"] == listed_keys()
