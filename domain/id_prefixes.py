"""Naming a thing by a unique prefix of its id; domain layer.

Sessions, pending approvals and paired devices can be named on the command line by their
whole id or by its first few characters. The rule is the same for all of them: a name that
is a whole id names that one; otherwise a name of at least `MIN_PREFIX` characters names
every id it starts. The caller decides what none, one or several matches mean.
"""

from __future__ import annotations

from collections.abc import Iterable

MIN_PREFIX = 4
"""The fewest characters a prefix needs to name anything."""


def by_prefix(wanted: str, names: Iterable[str], *, minimum: int = MIN_PREFIX) -> list[str]:
    """The names `wanted` picks: itself when it is one, else every name it starts (if long)."""
    candidates = list(names)
    if wanted in candidates:
        return [wanted]
    if len(wanted) < minimum:
        return []
    return [name for name in candidates if name.startswith(wanted)]
