"""Which process hosts a session: one claim file per hosted session; adapter layer.

A process that hosts a session (the daemon, `ledgerclaw mcp serve`, a native tool call)
holds an exclusive `flock` on `claims/<session id>.lock` for as long as it writes to it.
The kernel drops the lock when the process dies, however it dies, so recovery can tell a
session whose host is gone (its claim can be taken) from one that is still being written
(its claim is held), and two processes never write the same session.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

from adapters.errors import HomeError
from adapters.home import Home
from domain.errors import LedgerclawError
from domain.ids import SessionId


class SessionClaimedError(LedgerclawError):
    """Another live process hosts this session; it was left alone."""

    exit_code = 3


@dataclass
class Claim:
    """A held claim on one session; `release` (or process death) gives it up."""

    session_id: SessionId
    path: Path
    fd: int | None = field(default=None, repr=False)

    def release(self) -> None:
        """Unlock and forget the claim file; releasing twice is harmless."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        os.close(fd)


class SessionClaims:
    """Claims on sessions inside one home."""

    def __init__(self, home: Home) -> None:
        self.directory = home.claims

    def claim(self, session_id: SessionId) -> Claim:
        """Take the claim on `session_id`, or raise SessionClaimedError if a live process has it."""
        found = self.try_claim(session_id)
        if found is None:
            msg = f"session {session_id} is hosted by another running process"
            raise SessionClaimedError(msg)
        return found

    def try_claim(self, session_id: SessionId) -> Claim | None:
        """The claim on `session_id` if no live process holds it, else None."""
        path = self.directory / f"{session_id}.lock"
        while True:
            try:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except OSError as error:
                msg = f"cannot claim sessions in {self.directory}: {error.strerror or error}"
                raise HomeError(msg) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            # A releasing holder unlinks the file before unlocking it: if the name now
            # points elsewhere, the lock just taken is on a dead file; take it again.
            try:
                same = path.stat().st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return Claim(session_id, path, fd)
            os.close(fd)
