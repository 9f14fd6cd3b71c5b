"""Owner-only files that appear whole or not at all: staging, flushing, publishing; adapter layer.

A copy or a manifest is written under a hidden staging name in its own directory, flushed,
then published under its real name with a hard link, which never replaces a file that is
already there. A failure at any step removes the staging file, so a reader never meets a
half-written backup.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path

Progress = Callable[[int, int], None]
"""Called with (done, total) as work advances."""

FILE_MODE = 0o600
DIR_MODE = 0o700
CHUNK_BYTES = 1 << 20

_STAGING_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_NO_LINKS = {errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK}
"""Errors of a filesystem that cannot hard-link; publishing then renames after a check."""


def staging_path(final: Path) -> Path:
    """A fresh hidden name beside `final`, created empty and owner-only."""
    while True:
        candidate = final.with_name(f".{final.name}.partial-{secrets.token_hex(4)}")
        try:
            fd = os.open(candidate, _STAGING_FLAGS, FILE_MODE)
        except FileExistsError:
            continue
        os.fchmod(fd, FILE_MODE)
        os.close(fd)
        return candidate


def flush_file(path: Path) -> None:
    """Force `path`'s bytes to stable storage and make it owner-only."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fchmod(fd, FILE_MODE)
        os.fsync(fd)
    finally:
        os.close(fd)


def flush_directory(directory: Path) -> None:
    """Make the names just created or removed in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish(staged: Path, final: Path) -> None:
    """Give `staged` the name `final`, never replacing a file already called so.

    Raises:
        FileExistsError: `final` exists; `staged` is left for the caller to remove.
    """
    try:
        os.link(staged, final)
    except OSError as error:
        if error.errno not in _NO_LINKS:
            raise
        if final.exists() or final.is_symlink():
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(final)) from None
        staged.replace(final)
    else:
        staged.unlink()
    flush_directory(final.parent)


def discard(path: Path) -> None:
    """Remove `path` if it is there."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def write_bytes_whole(final: Path, data: bytes) -> None:
    """Write `data` as a new owner-only file `final`, whole or not at all."""
    staged = staging_path(final)
    try:
        with staged.open("wb") as sink:
            sink.write(data)
        flush_file(staged)
        publish(staged, final)
    finally:
        discard(staged)


def copy_whole(source: Path, final: Path, progress: Progress | None = None) -> str:
    """Copy `source` into a new owner-only file `final`; returns the sha256 of what was written.

    `final` may already exist only as the caller's own staging file, which is overwritten.
    """
    digest = hashlib.sha256()
    total = source.stat().st_size
    done = 0
    with source.open("rb") as origin, final.open("wb") as sink:
        while chunk := origin.read(CHUNK_BYTES):
            sink.write(chunk)
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    flush_file(final)
    return digest.hexdigest()


def file_digest(path: Path, progress: Progress | None = None) -> tuple[str, int]:
    """The sha256 (hex) and size in bytes of `path`, read in chunks."""
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as source:
        while chunk := source.read(CHUNK_BYTES):
            digest.update(chunk)
            done += len(chunk)
            if progress:
                progress(done, total)
    return digest.hexdigest(), done
