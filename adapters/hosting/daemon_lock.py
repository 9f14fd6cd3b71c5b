"""The daemon lock: one daemon per home, freed by the kernel when its process dies; adapter layer.

The daemon holds an exclusive `flock` on `daemon.lock` for as long as it runs; the file also
holds the JSON `adapters.hosting.daemon_state` reads (pid, port, start time). `daemon.pid` holds the
bare pid. A daemon killed with SIGKILL leaves both files behind, but not the lock, so a stale
file never blocks the next start.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self

import orjson

from adapters.errors import HomeError
from adapters.home import Home, ensure_home
from domain.errors import LedgerclawError

LOCK_NAME = "daemon.lock"
PID_NAME = "daemon.pid"
MAX_STATE_BYTES = 64 * 1024
_NO_FOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
"""The lock must be the home's own file, never one a link points to; no child inherits it."""
_TRIES = 5
_PAUSE_SECONDS = 0.02
"""A probe (`is_daemon_running`) holds a shared lock for microseconds; a start that meets
one tries again briefly rather than report a daemon that is not there."""


class DaemonAlreadyRunningError(LedgerclawError):
    """Another live process holds the home's daemon lock; nothing was started."""

    exit_code = 3


class DaemonLock:
    """The exclusive lock of one home's daemon; `with` releases it on the way out.

    Take it with `acquire(port)`, inside or before the `with` block.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self._fd: int | None = None

    @property
    def path(self) -> Path:
        """The lock file, which also holds the daemon's state while it runs."""
        return self.home.root / LOCK_NAME

    @property
    def pid_path(self) -> Path:
        """The file holding the daemon's process id as text."""
        return self.home.root / PID_NAME

    @property
    def held(self) -> bool:
        """Whether this object holds the lock now."""
        return self._fd is not None

    def acquire(self, port: int) -> None:
        """Take the lock without waiting and record this process's pid, `port` and start time.

        Raises:
            DaemonAlreadyRunningError: a live process holds the lock already.
            HomeError: the home or the lock file cannot be opened.
        """
        ensure_home(self.home)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NO_FOLLOW, 0o600)
        except OSError as error:
            raise HomeError(_cannot_open(self.path, error)) from None
        try:
            _lock(fd, self.home)
        except BaseException:
            os.close(fd)
            raise
        try:
            os.fchmod(fd, 0o600)
            state = {"pid": os.getpid(), "port": port, "started_at": datetime.now(UTC).isoformat()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, orjson.dumps(state) + b"\n", 0)
            os.fsync(fd)
            _write_pid(self.pid_path)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)
            msg = f"cannot record the daemon in {self.home.root}: {error.strerror or error}"
            raise HomeError(msg) from None
        self._fd = fd

    def release(self) -> None:
        """Remove `daemon.pid`, empty `daemon.lock` (the file stays) and unlock; idempotent."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            self.pid_path.unlink(missing_ok=True)
            os.ftruncate(fd, 0)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def is_daemon_running(home: Home) -> bool:
    """Whether a live process holds the home's daemon lock; creates nothing."""
    path = home.root / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDONLY | _NO_FOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError as error:
        raise HomeError(_cannot_open(path, error)) from None
    try:
        # Shared, so that two probes at once never take each other for a daemon.
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def _cannot_open(path: Path, error: OSError) -> str:
    return f"cannot open the daemon lock {path}: {error.strerror or error}"


def _lock(fd: int, home: Home) -> None:
    for attempt in range(_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if attempt + 1 < _TRIES:
                time.sleep(_PAUSE_SECONDS)
        else:
            return
    msg = f"a daemon is already running for home {home.root} ({_holder(fd)})"
    raise DaemonAlreadyRunningError(msg)


def _holder(fd: int) -> str:
    """`pid N, port P` from the lock file's state, or `pid unknown` when it cannot be read."""
    try:
        state = orjson.loads(os.pread(fd, MAX_STATE_BYTES, 0))
    except (OSError, orjson.JSONDecodeError):
        return "pid unknown"
    pid = state.get("pid") if isinstance(state, dict) else None
    port = state.get("port") if isinstance(state, dict) else None
    if not isinstance(pid, int) or isinstance(pid, bool):
        return "pid unknown"
    if not isinstance(port, int) or isinstance(port, bool):
        return f"pid {pid}, port unknown"
    return f"pid {pid}, port {port}"


def _write_pid(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NO_FOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, f"{os.getpid()}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
