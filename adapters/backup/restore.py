"""`backup restore`: put a verified copy in place of the home's journal; adapter layer.

The copy is verified before anything else, and again byte for byte as it is staged in the
home. While a `HomeGuard` holds the home (no daemon, no `mcp serve`, no open connection),
the current journal and its WAL are kept aside in `backups/` as
`ledgerclaw.db.replaced-<time>` (with `-wal` beside it when there is one), then the staged
copy is renamed over the journal in one step. A WAL never outlives its own journal file:
it is moved aside before the new file takes the name.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from contextlib import closing, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from adapters.backup.copy import backups_directory
from adapters.backup.errors import BackupTargetError, BackupVerificationError
from adapters.backup.files import (
    DIR_MODE,
    Progress,
    copy_whole,
    discard,
    flush_directory,
    flush_file,
    staging_path,
)
from adapters.backup.guard import HomeGuard
from adapters.backup.manifest import Manifest
from adapters.backup.verify import verify_backup
from adapters.home import Home

_COMPANIONS = ("-wal", "-journal")
"""What belongs to the replaced journal and moves aside with it (`-shm` is only an index)."""
_CROSS_DEVICE = {errno.EXDEV, errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK}


@dataclass(frozen=True)
class RestoredJournal:
    """What a restore did."""

    journal: Path
    backup: Path
    manifest: Manifest
    replaced: Path | None
    """Where the journal that was replaced was kept, or None when the home had none."""


def restore_backup(home: Home, path: Path, progress: Progress | None = None) -> RestoredJournal:
    """Replace the home's journal by the verified backup at `path`.

    Raises:
        BackupNotFoundError, BackupVerificationError: the copy is missing or fails
            verification; nothing was changed.
        RestoreRefusedError: a daemon, `mcp serve` or an open connection holds the home.
        BackupTargetError: the home cannot take the copy; the journal is unchanged.
    """
    verified = verify_backup(path, progress)
    with HomeGuard(home):
        journal = home.database
        try:
            staged = staging_path(journal)
        except OSError as error:
            msg = f"cannot stage the backup in {home.root}: {error.strerror or error}"
            raise BackupTargetError(msg) from None
        try:
            digest = copy_whole(verified.path, staged, progress)
            if digest != verified.manifest.sha256:
                msg = f"backup {verified.path} changed while it was being restored"
                raise BackupVerificationError(msg)
            _turn_on_wal(staged)
            flush_file(staged)
            replaced = _set_aside(home, datetime.now(UTC))
            staged.replace(journal)
            flush_directory(home.root)
        except OSError as error:
            msg = f"cannot restore into {home.root}: {error.strerror or error}"
            raise BackupTargetError(msg) from None
        finally:
            for leftover in (
                staged,
                *(staged.with_name(staged.name + s) for s in ("-wal", "-shm")),
            ):
                with suppress(OSError):
                    discard(leftover)
    return RestoredJournal(journal, verified.path, verified.manifest, replaced)


def _turn_on_wal(staged: Path) -> None:
    """Give the staged copy the journal's WAL mode; closing removes its `-wal` and `-shm`."""
    with closing(sqlite3.connect(staged, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL").fetchone()


def _set_aside(home: Home, at: datetime) -> Path | None:
    """Keep the current journal and its WAL in `backups/`; None when there is no journal."""
    journal = home.database
    if not journal.exists():
        return None
    directory = backups_directory(home)
    directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    directory.chmod(DIR_MODE)
    base = f"{journal.name}.replaced-{at.strftime('%Y%m%dT%H%M%SZ')}"
    aside = directory / base
    attempt = 1
    while aside.exists() or any(_beside(aside, s).exists() for s in _COMPANIONS):
        attempt += 1
        aside = directory / f"{base}-{attempt}"
    # The journal stays under its name until the copy replaces it, so an interruption
    # never leaves the home without one.
    _link_or_copy(journal, aside)
    for suffix in _COMPANIONS:
        companion = _beside(journal, suffix)
        if companion.exists():
            _move(companion, _beside(aside, suffix))
    flush_directory(directory)
    flush_directory(home.root)
    return aside


def _beside(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError as error:
        if error.errno not in _CROSS_DEVICE:
            raise
        copy_whole(source, target)
    target.chmod(0o600)


def _move(source: Path, target: Path) -> None:
    try:
        source.rename(target)
    except OSError as error:
        if error.errno not in _CROSS_DEVICE:
            raise
        copy_whole(source, target)
        source.unlink()
    target.chmod(0o600)
