"""Which hierarchies a sandboxed command may reach, and with which rights; adapter layer.

The rules come from the same facts as the path access decision: the roots the call's audience
receives (with the rights their operations grant), the run's temporary directory, and
read-only access to what programs need in order to run. Protected paths and the home are never
inside an allowed hierarchy: Landlock can only allow, so a root that holds one is replaced by
its other entries, level by level down to the protected path, and the ruleset says so.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import orjson

from adapters.sandbox import launch
from domain.authorization.roots import TrustedRoot
from domain.values.authorization import FileOperation

READ = launch.EXECUTE | launch.READ_FILE | launch.READ_DIR
WRITE = (
    launch.WRITE_FILE
    | launch.TRUNCATE
    | launch.REMOVE_DIR
    | launch.REMOVE_FILE
    | launch.MAKE_DIR
    | launch.MAKE_REG
    | launch.MAKE_SYM
    | launch.MAKE_FIFO
    | launch.MAKE_SOCK
    | launch.REFER
)
DEVICE = launch.READ_FILE | launch.WRITE_FILE | launch.TRUNCATE

SYSTEM_READ = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/locale.alias",
    "/etc/inputrc",
    "/dev/urandom",
    "/dev/random",
)
"""What programs read in order to run; never anything that holds a secret."""
SYSTEM_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")
"""Devices a command may write: writing to them changes no file."""
MAX_RULES = 4096
"""Entries a ruleset may name; a root whose carving would need more cannot be confined."""

_OPERATION_RIGHTS = {
    FileOperation.READ: READ,
    FileOperation.ATTACH: READ,
    FileOperation.WRITE: READ | WRITE,
}


class RulesetError(Exception):
    """The allowed hierarchies cannot be expressed: a carving needs too many rules."""


@dataclass(frozen=True)
class Rule:
    """One allowed hierarchy (or file) and its rights."""

    path: str
    rights: int


@dataclass(frozen=True)
class Ruleset:
    """The whole confinement of one command: rules, network, and what had to be carved."""

    rules: tuple[Rule, ...]
    network: bool
    carved: tuple[str, ...] = field(default=())
    """Roots that hold a protected path, allowed through their other entries instead."""

    def arguments(self, abi: int | None = None) -> list[str]:
        """The launcher's RULESET words; `abi` caps the Landlock ABI the launcher uses."""
        words = [f"--allow={rule.rights}:{rule.path}" for rule in self.rules]
        if self.network:
            words.append("--network")
        if abi is not None:
            words.append(f"--abi={abi}")
        return words

    def digest(self) -> str:
        """A sha256 of the rules and the network choice: equal digests, equal confinement."""
        paths = [[rule.path, rule.rights] for rule in self.rules]
        return hashlib.sha256(orjson.dumps({"paths": paths, "network": self.network})).hexdigest()


def root_rights(root: TrustedRoot) -> int:
    """The Landlock rights a root's operations grant."""
    rights = 0
    for operation in root.operations:
        rights |= _OPERATION_RIGHTS.get(operation, 0)
    return rights


@dataclass(frozen=True)
class Reach:
    """The facts one command's ruleset is built from."""

    roots: Sequence[TrustedRoot]
    """The roots of the call's audience, envelope and project included."""
    protected: Iterable[str]
    """Protected files and trees, which no rule may reach."""
    home: str | None
    """The ledgerclaw home, kept out of every rule except the session's own storage."""
    tmp_dir: str
    """The run's managed temporary directory (read-write)."""
    search_path: str = ""
    """The command's PATH, whose toolchains are allowed read and execute."""


def build_ruleset(reach: Reach, *, network: bool) -> Ruleset:
    """The ruleset of one command; TCP bind and connect stay open only with `network`."""
    forbidden = tuple(sorted({_real(path) for path in reach.protected}))
    home = None if reach.home is None else _real(reach.home)
    outside_home = forbidden if home is None else (*forbidden, home)
    rules = _Rules()
    for root in reach.roots:
        # The session's own storage lies inside the home by design; other roots never reach it.
        own_storage = home is not None and _inside(root.real, home)
        rules.allow(root.real, root_rights(root), forbidden if own_storage else outside_home)
    rules.allow(_real(reach.tmp_dir), READ | WRITE, forbidden)
    # A system or toolchain path that holds a protected path is left out whole, not carved.
    for path in (*SYSTEM_READ, *toolchains(reach.search_path)):
        rules.allow(path, READ, outside_home, carve=False)
    for path in SYSTEM_DEVICES:
        rules.allow(path, DEVICE, outside_home, carve=False)
    return rules.ruleset(network=network)


class _Rules:
    """Rules gathered so far, and the roots that had to be carved."""

    def __init__(self) -> None:
        self.rights: dict[str, int] = {}
        self.carved: list[str] = []

    def allow(
        self, path: str, rights: int, keep_out: tuple[str, ...], *, carve: bool = True
    ) -> None:
        if rights == 0 or _inside_any(path, keep_out):
            return
        if not any(_inside(guarded, path) for guarded in keep_out):
            self.rights[path] = self.rights.get(path, 0) | rights
        elif carve:
            self.carved.append(path)
            for entry in _carve(path, keep_out):
                self.rights[entry] = self.rights.get(entry, 0) | rights

    def ruleset(self, *, network: bool) -> Ruleset:
        if len(self.rights) > MAX_RULES:
            msg = f"the allowed hierarchies need {len(self.rights)} rules (at most {MAX_RULES})"
            raise RulesetError(msg)
        ordered = tuple(Rule(path, rights) for path, rights in sorted(self.rights.items()))
        return Ruleset(rules=ordered, network=network, carved=tuple(self.carved))


def toolchains(search_path: str) -> tuple[str, ...]:
    """Where the programs on PATH really live: each entry, and the prefix of a `bin` entry.

    An interpreter installed outside /usr (a pyenv or a virtualenv) needs its prefix to start.
    """
    found: list[str] = []
    for entry in search_path.split(os.pathsep):
        if not entry.startswith("/"):
            continue
        real = _real(entry)
        if not os.path.isdir(real) or real == "/":
            continue
        found.append(real)
        if os.path.basename(real) in {"bin", "sbin", "shims"}:
            parent = os.path.dirname(real)
            if parent != "/":
                found.append(parent)
    return tuple(dict.fromkeys(found))


def _carve(directory: str, keep_out: tuple[str, ...]) -> list[str]:
    """`directory`'s entries that hold nothing of `keep_out`, descending where one does."""
    entries: list[str] = []
    try:
        listing = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return entries
    for entry in listing:
        path = os.path.join(directory, entry.name)
        # A link is reached through its target; allowing it here would allow that target.
        if entry.is_symlink() or _inside_any(path, keep_out):
            continue
        if any(_inside(guarded, path) for guarded in keep_out):
            if entry.is_dir(follow_symlinks=False):
                entries.extend(_carve(path, keep_out))
            continue
        entries.append(path)
        if len(entries) > MAX_RULES:
            msg = f"{directory} holds more than {MAX_RULES} entries beside a protected path"
            raise RulesetError(msg)
    return entries


def _real(path: str) -> str:
    return os.path.realpath(path)


def _inside(path: str, ancestor: str) -> bool:
    """Whether `path` is `ancestor` or below it."""
    return path == ancestor or path.startswith(ancestor.rstrip("/") + "/")


def _inside_any(path: str, ancestors: Iterable[str]) -> bool:
    return any(_inside(path, ancestor) for ancestor in ancestors)
