"""Trusted roots and the protected paths no root can open; domain layer."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from domain.base import Value
from domain.paths import CanonicalPath
from domain.values.audience import Audience
from domain.values.authorization import FileOperation

ALL_OPERATIONS = frozenset(FileOperation)
READ_ONLY = frozenset({FileOperation.READ})


class RootKind(StrEnum):
    """Where a trusted root comes from."""

    PROJECT = "project"
    ENVELOPE = "envelope"
    CONFIGURED = "configured"


class TrustedRoot(Value):
    """A directory boundary that can supply authority for some file operations.

    `path` is the root as declared; `real` is where it really is, so a root that is itself
    reached through a link keeps working. Being below a root is necessary, never sufficient.
    """

    path: CanonicalPath
    real: CanonicalPath
    kind: RootKind
    operations: frozenset[FileOperation]
    audiences: frozenset[Audience] = frozenset(Audience)

    def describe(self) -> str:
        """A short label for details and audits."""
        return f"{self.kind} root {self.path}"


class ProtectedPaths(Value):
    """Paths that are denied for every operation, whatever root holds them.

    `files` are exact files (the database and its -wal/-shm/-journal, lock and pid files,
    secret configuration), `trees` are directories protected with all they contain (key
    storage, credentials), `identities` are `device:inode` of protected files, so a hard link
    to one is recognised too.
    """

    files: frozenset[CanonicalPath] = frozenset()
    trees: frozenset[CanonicalPath] = frozenset()
    identities: frozenset[str] = frozenset()


def roots_for(audience: Audience, roots: Iterable[TrustedRoot]) -> tuple[TrustedRoot, ...]:
    """The roots one audience receives."""
    return tuple(root for root in roots if audience in root.audiences)
