"""Holding a home so that nothing uses its journal while a restore replaces it; adapter layer.

A home is in use when a daemon holds its lock, when an `mcp serve` process is registered
and alive, or when any process has the journal open. The last is read from SQLite's own
lock: every connection to a WAL database holds a shared `fcntl` lock on one byte of the
`-shm` file (the "DMS" byte) for as long as it is open, and a connection that opens while
another process holds that byte exclusively is refused. So the guard takes the daemon
lock (no daemon starts meanwhile), checks the host registrations, then takes that byte
exclusively (no process has the journal open, and none can open it until the guard ends).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from types import TracebackType
from typing import Self

from adapters.backup.errors import RestoreRefusedError
from adapters.home import Home, ensure_home
from adapters.hosting.daemon_lock import DaemonAlreadyRunningError, DaemonLock
from adapters.hosting.daemon_state import read_daemon_state
from adapters.hosting.hosts import live_hosts

SHM_DMS_BYTE = 128
"""The offset SQLite's unix VFS locks in `-shm` while a connection is open (UNIX_SHM_DMS)."""
_TRIES = 5
_NOTHING_CHANGED = "nothing was changed"


class HomeGuard:
    """Exclusive use of one home's journal; `with` takes it and gives it back.

    Raises (on entry):
        RestoreRefusedError: a daemon, an `mcp serve` process or another open connection
            holds the home.
    """

    def __init__(self, home: Home) -> None:
        self.home = home
        self._lock = DaemonLock(home)
        self._shm: int | None = None

    @property
    def shm_path(self) -> Path:
        """The journal's shared-memory file, whose lock byte the guard holds."""
        database = self.home.database
        return database.with_name(database.name + "-shm")

    def __enter__(self) -> Self:
        ensure_home(self.home)
        try:
            self._lock.acquire(port=0)
        except DaemonAlreadyRunningError:
            state = read_daemon_state(self.home)
            which = "" if state is None else f" (pid {state.pid}, port {state.port})"
            msg = (
                f"a daemon{which} is running for home {self.home.root};"
                f" stop it before restoring ({_NOTHING_CHANGED})"
            )
            raise RestoreRefusedError(msg) from None
        try:
            self._refuse_hosts()
            self._shm = self._hold_journal()
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        fd, self._shm = self._shm, None
        try:
            if fd is not None:
                # What the file held indexed the replaced journal's WAL; the next opener
                # starts from an empty file either way, but none is left to mislead it.
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, 0)
                    self.shm_path.unlink()
                os.close(fd)
        finally:
            self._lock.release()

    def _refuse_hosts(self) -> None:
        hosts = live_hosts(self.home)
        if hosts:
            pids = ", ".join(str(host.pid) for host in hosts)
            msg = (
                f"`ledgerclaw mcp serve` (pid {pids}) is serving home {self.home.root};"
                f" end its client before restoring ({_NOTHING_CHANGED})"
            )
            raise RestoreRefusedError(msg)

    def _hold_journal(self) -> int:
        path = self.shm_path
        for _ in range(_TRIES):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, SHM_DMS_BYTE, os.SEEK_SET)
            except OSError:
                os.close(fd)
                msg = (
                    f"another process has the journal {self.home.database} open (a tool call"
                    f" or another command); try again when it ends ({_NOTHING_CHANGED})"
                )
                raise RestoreRefusedError(msg) from None
            # A last connection closing removes `-shm`; a lock on the removed file guards
            # nothing, so take it again on the file that now has the name.
            try:
                same = path.stat().st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return fd
            os.close(fd)
        msg = f"the journal {self.home.database} kept changing hands ({_NOTHING_CHANGED})"
        raise RestoreRefusedError(msg)
