"""The root of every expected ledgerclaw error; domain layer."""

from __future__ import annotations


class LedgerclawError(Exception):
    """An expected failure that a user can act on; never shown as a stack trace."""

    exit_code: int = 1


class DomainError(LedgerclawError):
    """A command was refused because it would break an invariant; nothing was recorded."""
