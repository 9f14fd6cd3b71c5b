"""No-follow file access for the file tools: bounded reads and atomic replacement; adapter layer.

Every path given here is a real location the dispatcher already checked. A link found at
the last component now (the file changed after the check) is refused, never followed.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import suppress

from adapters.tools.contract import BoundTarget, ToolOutput
from adapters.tools.files.cancel import stop_if_cancelled
from domain.values.receipts import OutcomeCategory

CHUNK_BYTES = 1 << 20
"""How much one read asks for."""
NEW_FILE_MODE = 0o644
"""The mode of a created file before the process umask applies."""

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotARegularFileError(OSError):
    """A link or a special file stands where a regular file (or a real directory) must be."""


def open_regular(real_path: str) -> int:
    """Open a regular file for reading, refusing a link at its last component.

    Raises:
        FileNotFoundError: nothing is there.
        IsADirectoryError: the path is a directory.
        NotARegularFileError: the path is a link, a fifo, a socket or a device.
    """
    try:
        fd = os.open(real_path, _READ_FLAGS)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotARegularFileError(errno.ELOOP, "is a symbolic link", real_path) from None
        raise
    try:
        _require_regular(os.fstat(fd).st_mode, real_path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_chunks(fd: int) -> Iterator[bytes]:
    """The bytes of an open file from its current offset to the end, one chunk at a time."""
    while chunk := os.read(fd, CHUNK_BYTES):
        stop_if_cancelled()
        yield chunk


def read_bounded(real_path: str, max_bytes: int) -> bytes | None:
    """The whole content of a regular file, or None when it holds more than `max_bytes`."""
    fd = open_regular(real_path)
    try:
        parts: list[bytes] = []
        total = 0
        while total <= max_bytes and (chunk := os.read(fd, min(CHUNK_BYTES, max_bytes + 1))):
            parts.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    return None if total > max_bytes else b"".join(parts)


def atomic_replace(real_path: str, data: bytes) -> None:
    """Replace (or create) the regular file at `real_path` with `data`, all or nothing.

    The data goes to a fresh temporary file beside the target, is flushed to disk, takes the
    mode of the file it replaces (or 0o644 under the umask when new), and is renamed over the
    target; the directory is flushed after. On any failure the temporary file is removed, so
    no partial file is ever left. The replaced file's owner, extra links and extended
    attributes are not carried over.

    Raises:
        NotARegularFileError: the target is a link or a special file, or its directory is
            a link.
        IsADirectoryError: the target is a directory.
        FileNotFoundError: the directory does not exist.
    """
    parent, name = os.path.split(real_path)
    if not name:
        raise IsADirectoryError(errno.EISDIR, "is a directory", real_path)
    try:
        dir_fd = os.open(parent or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise NotARegularFileError(errno.ELOOP, "is a symbolic link", parent) from None
        raise
    try:
        mode = _existing_mode(name, dir_fd, real_path)
        temp = f".{name}.{secrets.token_hex(8)}.tmp"
        fd = os.open(temp, _TEMP_FLAGS, 0o600 if mode is not None else NEW_FILE_MODE, dir_fd=dir_fd)
        try:
            try:
                _write_all(fd, data)
                if mode is not None:
                    os.fchmod(fd, mode)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with suppress(OSError):
                os.unlink(temp, dir_fd=dir_fd)
            raise
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _existing_mode(name: str, dir_fd: int, real_path: str) -> int | None:
    """The permission bits of the file being replaced; None when there is none yet."""
    try:
        info = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    _require_regular(info.st_mode, real_path)
    if not info.st_mode & 0o222:
        # Replacing would ignore the file's own protection (only the directory's counts),
        # so a file nobody may write stays as it is, even for a privileged process.
        raise PermissionError(errno.EACCES, "the file is read-only", real_path)
    return info.st_mode & 0o7777


def _require_regular(mode: int, path: str) -> None:
    """Raise unless `mode` (from lstat or fstat) is a regular file's."""
    if stat.S_ISLNK(mode):
        raise NotARegularFileError(errno.ELOOP, "is a symbolic link", path)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", path)
    if not stat.S_ISREG(mode):
        raise NotARegularFileError(errno.EINVAL, "is not a regular file", path)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def refusal(path: str, error: OSError, directory_hint: str = "") -> ToolOutput | None:
    """The expected-failure output for an error raised here about `path`; None for others."""
    if isinstance(error, NotARegularFileError):
        return ToolOutput(
            text=f"{path} {error.strerror}; only a regular file can be used here",
            outcome=OutcomeCategory.ACCESS_DENIED,
        )
    if isinstance(error, IsADirectoryError):
        hint = f"; {directory_hint}" if directory_hint else ""
        return ToolOutput(
            text=f"{path} is a directory{hint}", outcome=OutcomeCategory.INVALID_INPUT
        )
    if isinstance(error, (FileNotFoundError, NotADirectoryError)):
        return ToolOutput(text=f"{path} does not exist", outcome=OutcomeCategory.NOT_FOUND)
    if isinstance(error, PermissionError):
        reason = error.strerror or "permission denied"
        return ToolOutput(text=f"{path}: {reason}", outcome=OutcomeCategory.ACCESS_DENIED)
    return None


def named_link_refusal(target: BoundTarget) -> ToolOutput | None:
    """ACCESS_DENIED when the path as named ends in a symbolic link; a write never follows one."""
    try:
        mode = os.lstat(target.path).st_mode
    except OSError:
        return None
    if not stat.S_ISLNK(mode):
        return None
    return ToolOutput(
        text=f"{target.path} is a symbolic link to {target.real}; a write never follows a "
        "link, so name the file itself",
        outcome=OutcomeCategory.ACCESS_DENIED,
    )
