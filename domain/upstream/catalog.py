"""An upstream server's tools as listed, their digests and how they are named here; domain layer.

A tool keeps the upstream's own name and schema; ledgerclaw offers it as `SERVER/TOOL`. The
digest covers everything a model or the pipeline reads of a tool (description, schemas,
annotations), so a catalog event can say exactly which tools changed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase

from pydantic import Field, JsonValue

from domain.base import Value
from domain.text import Text

SERVER_NAME = r"^[a-z0-9][a-z0-9_-]{0,31}$"
"""What a configured server may be called: it is the first part of its tools' names."""
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,95}$")
"""An upstream tool name ledgerclaw can offer (after `SERVER/` it still fits a tool name)."""
SEPARATOR = "/"
DESCRIPTION_LIMIT = 4000


class UpstreamTool(Value):
    """One tool as the upstream listed it."""

    name: str = Field(min_length=1, max_length=200)
    title: str | None = Field(default=None, max_length=200)
    description: Text = ""
    input_schema: dict[str, JsonValue] = Field(default_factory=dict)
    output_schema: dict[str, JsonValue] | None = None
    read_only: bool = False
    destructive: bool = True
    idempotent: bool = False
    open_world: bool = True

    def digest(self) -> str:
        """A sha256 over every field, in a canonical JSON form."""
        body = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(body.encode()).hexdigest()


class ToolDigest(Value):
    """A tool's name and digest, as a catalog event lists them."""

    name: str
    digest: str


def qualified(server: str, tool: str) -> str:
    """The name ledgerclaw offers an upstream tool under."""
    return f"{server}{SEPARATOR}{tool}"


def split_qualified(name: str) -> tuple[str, str] | None:
    """(server, tool) of a qualified name, None for a name without a server part."""
    server, separator, tool = name.partition(SEPARATOR)
    if not separator or not server or not tool:
        return None
    return server, tool


def offerable(tool: str) -> bool:
    """Whether an upstream tool's name can be offered at all (letters, digits, `_.-`)."""
    return _TOOL_NAME.match(tool) is not None


def matches(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` matches any glob pattern (`*`, `?`, `[...]`), case-sensitive."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def selected(tool: str, allow: Sequence[str] | None, deny: Sequence[str]) -> bool:
    """Whether the server's tool filter keeps `tool`: allowed (all when unset), not denied."""
    if allow is not None and not matches(tool, allow):
        return False
    return not matches(tool, deny)


def digests(tools: Iterable[UpstreamTool]) -> tuple[ToolDigest, ...]:
    """The tools' names and digests, by name."""
    return tuple(sorted((ToolDigest(name=t.name, digest=t.digest()) for t in tools), key=_name))


def _name(item: ToolDigest) -> str:
    return item.name


class CatalogChange(Value):
    """What changed between two catalogs, by tool name."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """Whether the two catalogs are the same."""
        return not (self.added or self.removed or self.changed)


def compare(before: Iterable[ToolDigest], after: Iterable[ToolDigest]) -> CatalogChange:
    """The change from `before` to `after`."""
    old = {d.name: d.digest for d in before}
    new = {d.name: d.digest for d in after}
    return CatalogChange(
        added=tuple(sorted(set(new) - set(old))),
        removed=tuple(sorted(set(old) - set(new))),
        changed=tuple(sorted(n for n in set(old) & set(new) if old[n] != new[n])),
    )
