"""File work anchored to directory descriptors, never following a link; adapter layer.

The session's agent may change anything inside its envelope, a directory into a link among
it. Attachments are written into directories of that envelope (the staging area, the
workspace inbox, the outbox), so each directory is opened once without following a link and
every file is created, linked, read or removed relative to that descriptor. A file is written
whole or not at all: to a temporary name, flushed, then renamed.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator

DIRECTORY_MODE = 0o700
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
TEMP_PREFIX = "."
TEMP_SUFFIX = ".tmp"


def open_directory(name: str, parent: int | None = None, *, create: bool = True) -> int:
    """The descriptor of directory `name` (below `parent`, if given), made when missing.

    Raises:
        OSError: a link, a file or anything but a directory stands there (ELOOP, ENOTDIR),
            or it cannot be made (or, without `create`, it is not there).
    """
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, DIRECTORY_MODE, dir_fd=parent)
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


@contextlib.contextmanager
def directory(name: str, parent: int | None = None, *, create: bool = True) -> Iterator[int]:
    """`open_directory`, closed when the block ends."""
    fd = open_directory(name, parent, create=create)
    try:
        yield fd
    finally:
        os.close(fd)


def write_new(directory_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Create `name` holding `data`, all or nothing; an existing `name` is an error.

    The bytes go to a temporary file that is flushed to disk, then linked under `name`
    (which fails if `name` exists) and unlinked; the directory is flushed last.
    """
    temp = f"{TEMP_PREFIX}{name}.{secrets.token_hex(8)}{TEMP_SUFFIX}"
    fd = os.open(temp, _NEW_FLAGS, mode, dir_fd=directory_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        move(directory_fd, temp, directory_fd, name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=directory_fd)
        raise


def move(source_fd: int, source: str, target_fd: int, target: str) -> None:
    """Move a file between two directories of one filesystem, never replacing `target`.

    Raises:
        FileExistsError: `target` exists; nothing moved.
    """
    os.link(source, target, src_dir_fd=source_fd, dst_dir_fd=target_fd, follow_symlinks=False)
    os.unlink(source, dir_fd=source_fd)
    os.fsync(target_fd)


def read_regular(directory_fd: int, name: str, max_bytes: int) -> bytes | None:
    """The content of regular file `name`; None when it holds more than `max_bytes`.

    Raises:
        OSError: nothing is there, or it is a link or not a regular file (ELOOP, EINVAL).
    """
    fd = os.open(name, _READ_FLAGS, dir_fd=directory_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(22, "not a regular file", name)
        if info.st_size > max_bytes:
            return None
        parts: list[bytes] = []
        total = 0
        while total <= max_bytes and (chunk := os.read(fd, max_bytes + 1 - total)):
            parts.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    return None if total > max_bytes else b"".join(parts)


def names(directory_fd: int) -> list[str]:
    """The entries of the directory, without `.` and `..`."""
    return os.listdir(directory_fd)


def remove(directory_fd: int, name: str) -> None:
    """Remove `name` if it is there (a file or a link, never followed)."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(name, dir_fd=directory_fd)
