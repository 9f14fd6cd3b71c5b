"""Processes that host sessions besides the daemon, and where their control plane listens.

`ledgerclaw mcp serve` hosts its one session in its own process. So that the command line
can list and decide that session's pending approvals as it does the daemon's, each such
process serves the control plane on a loopback port and registers it in
`hosts/<pid>.json`, holding an exclusive `flock` on that file while it lives. A file whose
lock can be taken belongs to a dead process and is removed. Adapter layer.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

import orjson

from adapters.home import Home

HOSTS_DIR = "hosts"


@dataclass(frozen=True)
class HostEntry:
    """One live hosting process and its control port."""

    pid: int
    port: int
    kind: str


class Registration:
    """A held registration; `close` (or process death) withdraws it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    def close(self) -> None:
        """Withdraw the registration."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(fd)


def register_host(home: Home, port: int, kind: str) -> Registration:
    """Register this process as a host whose control plane listens on `port`."""
    directory = home.root / HOSTS_DIR
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = directory / f"{os.getpid()}.json"
    # Locked and written under a name readers ignore, then renamed: a reader never sees
    # the registration unlocked, so it is never taken for a dead one.
    staging = path.with_suffix(".new")
    fd = os.open(staging, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, orjson.dumps({"pid": os.getpid(), "port": port, "kind": kind}))
    staging.replace(path)
    return Registration(path, fd)


def live_hosts(home: Home) -> list[HostEntry]:
    """Every registered host that is still alive; stale registrations are removed."""
    directory = home.root / HOSTS_DIR
    try:
        paths = sorted(directory.glob("*.json"))
    except OSError:
        return []
    found: list[HostEntry] = []
    for path in paths:
        entry = _live(path)
        if entry is not None:
            found.append(entry)
    return found


def _live(path: Path) -> HostEntry | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                data = orjson.loads(path.read_bytes())
                return HostEntry(int(data["pid"]), int(data["port"]), str(data["kind"]))
            except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                return None
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return None
    finally:
        os.close(fd)
