"""`backup verify`: a copy checked against its manifest and as a journal; adapter layer.

The bytes are checked first (size, then sha256), so a copy is opened by SQLite only once
it is known to be exactly the file that was written; then its identity, schema version,
integrity and journal position must agree with the manifest. Nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapters.backup.errors import BackupNotFoundError, BackupVerificationError
from adapters.backup.examine import CopyFacts, examine_copy
from adapters.backup.files import Progress, file_digest
from adapters.backup.manifest import Manifest, read_manifest


@dataclass(frozen=True)
class VerifiedBackup:
    """A copy that matches its manifest, and what it holds."""

    path: Path
    manifest: Manifest
    facts: CopyFacts


def verify_backup(path: Path, progress: Progress | None = None) -> VerifiedBackup:
    """Check the copy at `path` against `<path>.manifest.json`.

    Raises:
        BackupNotFoundError: nothing (or no regular file) is at `path`.
        BackupVerificationError: the manifest is missing or malformed, or the copy differs
            from it, or the copy is not an intact ledgerclaw journal.
    """
    path = path.expanduser().absolute()
    if not path.is_file():
        what = "no backup" if not path.exists() else "not a backup file"
        msg = f"{path}: {what} there"
        raise BackupNotFoundError(msg)
    manifest = read_manifest(path)
    size = path.stat().st_size
    if size != manifest.size:
        msg = f"backup {path} is {size} bytes, its manifest says {manifest.size}: it was changed"
        raise BackupVerificationError(msg)
    digest, _ = file_digest(path, progress)
    if digest != manifest.sha256:
        msg = f"backup {path} does not match its manifest's sha256: its bytes were changed"
        raise BackupVerificationError(msg)
    facts = examine_copy(path)
    if facts.problems:
        msg = f"backup {path} is not an intact ledgerclaw journal: {facts.summary}"
        raise BackupVerificationError(msg)
    _agree(path, manifest, facts)
    return VerifiedBackup(path, manifest, facts)


def _agree(path: Path, manifest: Manifest, facts: CopyFacts) -> None:
    recorded = {
        "application_id": manifest.application_id,
        "schema_version": manifest.schema_version,
        "journal_position": manifest.journal_position,
        "events": manifest.events,
    }
    found = {
        "application_id": facts.application_id,
        "schema_version": facts.schema_version,
        "journal_position": facts.journal_position,
        "events": facts.events,
    }
    for key, value in recorded.items():
        if found[key] != value:
            msg = f"backup {path} has {key} {found[key]}, its manifest says {value}"
            raise BackupVerificationError(msg)
