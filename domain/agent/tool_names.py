"""The names tools go by on a provider's wire, and the way back; domain layer.

A tool's own name may hold `/` and `.` (`time/get_current_time`, an upstream server's tool),
which OpenAI (`^[a-zA-Z0-9_-]{1,64}$`) and Anthropic (the same, up to 128) refuse. Each request
maps its names to wire names: a name that is already safe stays as it is, `/` becomes `__`
and any other refused character `_`; a mapped name that would be longer than 64 characters,
or that another name of the request already holds or maps to, is cut and ends with a short
hash of the tool's own name instead. The mapping depends only on the set of names, never on
their order, so the same tools make the same wire names from turn to turn.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

WIRE_LIMIT = 64
"""The longest wire name: OpenAI's limit, the stricter of the two."""
HASH_DIGITS = 8
"""Hex digits of the hash a shortened or disambiguated wire name ends with."""
WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""A name every provider accepts as a function name."""
_REFUSED = re.compile(r"[^a-zA-Z0-9_-]")


@dataclass(frozen=True)
class WireNames:
    """One request's tool names and their wire names, both ways."""

    _to_wire: Mapping[str, str] = field(default_factory=dict)
    _from_wire: Mapping[str, str] = field(default_factory=dict)

    @property
    def changes_any(self) -> bool:
        """Whether some name goes on the wire under another name."""
        return any(name != wire for name, wire in self._to_wire.items())

    def to_wire(self, name: str) -> str:
        """The wire name of `name`; a name the request did not hold is mapped on its own."""
        found = self._to_wire.get(name)
        return _alone(name) if found is None else found

    def from_wire(self, name: str) -> str:
        """The tool name behind the wire name `name`; an unknown wire name is itself."""
        return self._from_wire.get(name, name)


def wire_names(tools: Sequence[str]) -> WireNames:
    """The wire names of a request's tools (the same name twice counts once)."""
    names = sorted(set(tools))
    taken = {name for name in names if WIRE_NAME.fullmatch(name)}
    wanted: defaultdict[str, list[str]] = defaultdict(list)
    for name in names:
        if name not in taken:
            wanted[_mapped(name)].append(name)
    chosen = {name: name for name in taken}
    shortened: list[str] = []
    for wire, holders in wanted.items():
        if len(holders) == 1 and wire not in taken and WIRE_NAME.fullmatch(wire):
            chosen[holders[0]] = wire
            taken.add(wire)
        else:
            shortened.extend(holders)
    for name in sorted(shortened):
        wire = _hashed(name, taken)
        chosen[name] = wire
        taken.add(wire)
    return WireNames(chosen, {wire: name for name, wire in chosen.items()})


def _mapped(name: str) -> str:
    return _REFUSED.sub("_", name.replace("/", "__"))


def _alone(name: str) -> str:
    if WIRE_NAME.fullmatch(name):
        return name
    wire = _mapped(name)
    return wire if WIRE_NAME.fullmatch(wire) else _hashed(name, set())


def _hashed(name: str, taken: set[str]) -> str:
    """`name` mapped, cut, and ended with a hash of it; another hash while that is taken."""
    base = _mapped(name)[: WIRE_LIMIT - HASH_DIGITS - 1]
    for attempt in itertools.count():
        seed = name if attempt == 0 else f"{name}#{attempt}"
        wire = f"{base}_{hashlib.sha256(seed.encode()).hexdigest()[:HASH_DIGITS]}"
        if wire not in taken:
            return wire
    raise AssertionError  # pragma: no cover - the count never ends
