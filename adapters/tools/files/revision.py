"""Content revisions: a short, stable fingerprint of a file's bytes; adapter layer.

A revision names exact content, so an edit made against a stale read is caught before it
overwrites someone else's change. Equal bytes always give the same revision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

REVISION_PREFIX = "sha256:"
"""Every revision starts with the name of its hash."""
REVISION_DIGITS = 16
"""How many hex digits of the digest a revision keeps."""


def revision_of(data: bytes) -> str:
    """The revision of `data`: `sha256:` and the first 16 hex digits of its SHA-256."""
    return revision_of_chunks((data,))


def revision_of_chunks(chunks: Iterable[bytes]) -> str:
    """The revision of the concatenated `chunks`, hashed as they stream by."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    return REVISION_PREFIX + digest.hexdigest()[:REVISION_DIGITS]
