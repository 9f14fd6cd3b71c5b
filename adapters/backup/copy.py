"""`backup create`: an online copy of the journal through SQLite's backup API; adapter layer.

The copy is read inside one read transaction on the live journal, so it is the journal as
of one instant even while the daemon keeps writing (WAL lets the writer go on), and it holds
every event acknowledged before the copy began. It is written under a staging name in the
target directory, checked (identity, schema, `PRAGMA integrity_check`), flushed and only
then published with its manifest. A copy is kept in rollback-journal mode: one
self-contained file whose bytes reading never changes, so its sha256 stays checkable.
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from adapters.backup.errors import (
    BackupNotFoundError,
    BackupSourceDamagedError,
    BackupTargetError,
)
from adapters.backup.examine import examine_copy
from adapters.backup.files import (
    DIR_MODE,
    Progress,
    discard,
    file_digest,
    flush_file,
    publish,
    staging_path,
)
from adapters.backup.manifest import Manifest, manifest_path, write_manifest
from adapters.errors import JournalBusyError
from adapters.home import DATABASE_NAME, Home, check_home
from adapters.journal.identity import check_journal_file

BACKUPS_DIR = "backups"
PAGES_PER_STEP = 1024
"""Pages copied between two progress reports (4 MiB at SQLite's default page size)."""
BUSY_TIMEOUT_SECONDS = 5
_COMPANIONS = ("-journal", "-wal", "-shm")
_TARGET_FAILURES = (
    "SQLITE_CANTOPEN",
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_READONLY",
    "SQLITE_PERM",
)


@dataclass(frozen=True)
class CreatedBackup:
    """A published copy, its manifest and what the manifest says."""

    path: Path
    manifest_path: Path
    manifest: Manifest


def backups_directory(home: Home) -> Path:
    """The home's own backup directory (also where restore keeps replaced journals)."""
    return home.root / BACKUPS_DIR


def default_name(at: datetime) -> str:
    """The file name of a copy taken at `at`."""
    return f"ledgerclaw-{at.strftime('%Y%m%dT%H%M%SZ')}.db"


def create_backup(
    home: Home,
    target: Path | None = None,
    progress: Progress | None = None,
    pages_per_step: int = PAGES_PER_STEP,
) -> CreatedBackup:
    """Copy the home's journal to `target` (a file or a directory) and write its manifest.

    Without `target` the copy goes to `backups/` in the home, named for the time.
    `progress` is told the pages copied after every `pages_per_step` pages.

    Raises:
        BackupNotFoundError: the home has no journal yet.
        BackupTargetError: the target directory is missing or not writable, or the
            target exists.
        BackupSourceDamagedError: the journal failed its integrity check.
        JournalError: the journal is not a ledgerclaw journal, is newer, or is busy.
    """
    source = check_home(home).database
    if not check_journal_file(source):
        msg = f"there is no journal to back up yet ({source} does not exist or is empty)"
        raise BackupNotFoundError(msg)
    started = datetime.now(UTC)
    directory, name, chosen = _target(home, target, started)
    try:
        staged = staging_path(directory / name)
    except OSError as error:
        msg = f"cannot write a backup in {directory}: {error.strerror or error}"
        raise BackupTargetError(msg) from None
    try:
        _copy(source, staged, progress, pages_per_step)
        facts = examine_copy(staged)
        if facts.problems:
            msg = (
                f"journal {source} failed its check, so no backup was written: {facts.summary}."
                " Run `ledgerclaw doctor`; see docs/journal.md, Backups and recovery"
            )
            raise BackupSourceDamagedError(msg)
        flush_file(staged)
        digest, size = file_digest(staged)
        final = _publish(staged, directory, name, chosen=chosen)
    finally:
        _discard_with_companions(staged)
    manifest = Manifest(
        file=final.name,
        size=size,
        sha256=digest,
        application_id=facts.application_id,
        schema_version=facts.schema_version,
        journal_position=facts.journal_position,
        events=facts.events,
        created_at=started.isoformat(),
        source=str(source),
    )
    try:
        written = write_manifest(final, manifest)
    except OSError as error:
        discard(final)
        msg = f"cannot write the manifest beside {final}: {error.strerror or error}"
        raise BackupTargetError(msg) from None
    return CreatedBackup(final, written, manifest)


def _target(home: Home, target: Path | None, at: datetime) -> tuple[Path, str, bool]:
    """The directory and file name to publish under; True when the name was chosen here."""
    if target is None:
        directory = backups_directory(home)
        try:
            directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
            directory.chmod(DIR_MODE)
        except OSError as error:
            msg = f"cannot create the backup directory {directory}: {error.strerror or error}"
            raise BackupTargetError(msg) from None
        return directory, default_name(at), True
    target = target.expanduser().absolute()
    if target.is_dir():
        return target, default_name(at), True
    directory = target.parent
    if not directory.is_dir():
        msg = f"cannot write a backup to {target}: directory {directory} does not exist"
        raise BackupTargetError(msg)
    if target.exists() or target.is_symlink() or manifest_path(target).exists():
        msg = f"{target} already exists; a backup never replaces a file, choose another name"
        raise BackupTargetError(msg)
    if target.name.startswith(DATABASE_NAME) and directory.resolve() == home.root.resolve():
        msg = f"{target} would sit beside the journal under one of its own names; choose another"
        raise BackupTargetError(msg)
    return directory, target.name, False


def _copy(source: Path, staged: Path, progress: Progress | None, pages: int) -> None:
    def step(_status: int, remaining: int, total: int) -> None:
        if progress:
            progress(total - remaining, total)

    try:
        with (
            closing(
                sqlite3.connect(
                    f"{source.as_uri()}?mode=ro",
                    uri=True,
                    timeout=BUSY_TIMEOUT_SECONDS,
                    isolation_level=None,
                )
            ) as live,
            closing(sqlite3.connect(staged, isolation_level=None)) as copy,
        ):
            # One read transaction for the whole copy: every step sees the same instant,
            # so the daemon's commits meanwhile never restart the copy.
            live.execute("BEGIN")
            live.execute("SELECT count(*) FROM sqlite_master").fetchone()
            live.backup(copy, pages=pages, progress=step)
            live.execute("COMMIT")
            copy.execute("PRAGMA journal_mode=DELETE").fetchone()
    except sqlite3.Error as error:
        raise _classified(error, source, staged) from None


def _classified(error: sqlite3.Error, source: Path, staged: Path) -> Exception:
    name = getattr(error, "sqlite_errorname", "")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return JournalBusyError(f"journal {source} stayed busy; no backup was written ({error})")
    if name.startswith(_TARGET_FAILURES):
        where = staged.parent
        return BackupTargetError(f"cannot write a backup in {where}: {error}")
    msg = (
        f"journal {source} could not be read, so no backup was written: {error}."
        " Run `ledgerclaw doctor`; see docs/journal.md, Backups and recovery"
    )
    return BackupSourceDamagedError(msg)


def _publish(staged: Path, directory: Path, name: str, *, chosen: bool) -> Path:
    """Publish under `name`; a name chosen here gets `-2`, `-3`, … when it is taken."""
    stem, suffix = os.path.splitext(name)  # noqa: PTH122 - the stem of a bare name
    attempt = 1
    while True:
        final = directory / (name if attempt == 1 else f"{stem}-{attempt}{suffix}")
        if not manifest_path(final).exists():
            try:
                publish(staged, final)
            except FileExistsError:
                if not chosen:
                    msg = f"{final} already exists; a backup never replaces a file"
                    raise BackupTargetError(msg) from None
            except OSError as error:
                msg = f"cannot write a backup in {directory}: {error.strerror or error}"
                raise BackupTargetError(msg) from None
            else:
                return final
        elif not chosen:
            msg = f"{manifest_path(final)} already exists; choose another name"
            raise BackupTargetError(msg)
        attempt += 1


def _discard_with_companions(staged: Path) -> None:
    for path in (staged, *(staged.with_name(staged.name + s) for s in _COMPANIONS)):
        with suppress(OSError):
            discard(path)
