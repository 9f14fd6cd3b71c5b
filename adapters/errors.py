"""Typed errors for the home, the configuration and the journal; adapter layer."""

from __future__ import annotations

from domain.errors import LedgerclawError


class HomeError(LedgerclawError):
    """The home directory cannot be used."""

    exit_code = 3


class ConfigError(LedgerclawError):
    """The configuration file is invalid; nothing was started."""

    exit_code = 4


class PersistenceNotConfigurableError(ConfigError):
    """A `persistence` section tried to choose the journal's path or store."""


class JournalError(LedgerclawError):
    """The journal cannot be opened or read as asked."""

    exit_code = 5


class NotAJournalError(JournalError):
    """The database file is not a ledgerclaw journal (or not SQLite at all)."""


class NewerSchemaError(JournalError):
    """The journal was written by a newer ledgerclaw; it is left untouched."""


class JournalCorruptError(JournalError):
    """The journal file failed its integrity check (a damaged page, a truncated file).

    Nothing is written to such a file; the message names the file and what failed.
    """

    exit_code = 7


class JournalBusyError(JournalError):
    """Another process held the database longer than the busy timeout."""


class JournalConflictError(JournalError):
    """A stream kept changing under a command; the command gave up without writing."""


class UndecodableEventError(JournalError):
    """A stored event has an unknown topic or does not match its type."""


class UnencodableEventError(JournalError):
    """An event holds a value the journal cannot store exactly; nothing was written."""


class SessionExistsError(JournalError):
    """A session with this id is already in the journal; nothing was written."""


class UnknownSessionError(LedgerclawError):
    """No session matches the given id or prefix."""

    exit_code = 6


class AmbiguousSessionError(UnknownSessionError):
    """More than one session matches the given prefix."""


class PositionOutOfRangeError(LedgerclawError):
    """A replay position lies outside the session's stream."""

    exit_code = 2


class InvalidToolCallError(LedgerclawError):
    """A native tool call was malformed before it could reach the pipeline (bad JSON, bad name)."""

    exit_code = 2
