"""Typed errors of backing up, verifying and restoring the journal; adapter layer."""

from __future__ import annotations

from adapters.errors import JournalCorruptError
from domain.errors import LedgerclawError


class BackupError(LedgerclawError):
    """A backup could not be made, checked or restored as asked."""

    exit_code = 1


class BackupTargetError(BackupError):
    """The place a backup was asked for cannot take it; no file was left there."""

    exit_code = 3


class BackupNotFoundError(BackupError):
    """There is no journal to back up, or no backup at the given path."""

    exit_code = 6


class BackupVerificationError(BackupError):
    """A copy does not match its manifest, or is not an intact ledgerclaw journal."""

    exit_code = 8


class BackupSourceDamagedError(JournalCorruptError):
    """The journal failed its integrity check, so no backup of it was written."""


class RestoreRefusedError(BackupError):
    """Another process holds the home (a daemon, `mcp serve`, an open journal); nothing changed."""

    exit_code = 3
