"""The Landlock launcher: confine this process by a ruleset, then become the command; adapters.

It is run as its own small program (`python -I -S launch.py RULESET... -- COMMAND...`) and
imports only the standard library (not even json, whose regular expressions cost more than
the rest of its start), so it starts fast and trusts nothing from the environment. It builds
the Landlock ruleset, sets no-new-privileges, restricts itself and executes the command, which
inherits the restriction with every process it starts; nothing in them can lift it. The same
module answers which Landlock ABI the kernel offers.

RULESET is a list of words: `--allow=RIGHTS:PATH` for each allowed hierarchy (RIGHTS a bit
mask of the filesystem rights below, PATH absolute), `--network` to leave TCP open,
`--no-scopes` to leave signals and abstract sockets unscoped, `--abi=N` to cap the ABI.
A path that cannot be opened is skipped (a rule cannot allow what does not exist). Exit codes:
126 when the sandbox cannot be made, 127 when the command cannot be executed, as shells do.
"""

from __future__ import annotations

# The C module: `signal` would import enum, a third of the launcher's start-up.
import _signal  # type: ignore[import-not-found]  # typeshed has no stub for it
import ctypes
import errno
import os
import struct
import sys

CREATE_RULESET = 444
ADD_RULE = 445
RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2
PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The only rights a rule on a file (not a directory) may carry."""

NET_BIND_TCP = 1 << 0
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
SCOPE_SIGNAL = 1 << 1

_FS_RIGHTS_BY_ABI = {
    1: (1 << 13) - 1,
    2: (1 << 14) - 1,
    3: (1 << 15) - 1,
    5: (1 << 16) - 1,
}

CANNOT_CONFINE = 126
CANNOT_EXECUTE = 127


class SandboxUnavailableError(OSError):
    """The kernel offers no Landlock, or refused to build or apply the ruleset."""


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi_version() -> int:
    """The Landlock ABI the running kernel offers; 0 when it offers none."""
    libc = _libc()
    result = libc.syscall(CREATE_RULESET, None, ctypes.c_size_t(0), CREATE_RULESET_VERSION)
    return max(int(result), 0)


def fs_rights(abi: int) -> int:
    """Every filesystem right an ABI knows, so that all of them are handled (denied by default)."""
    known = [mask for version, mask in _FS_RIGHTS_BY_ABI.items() if version <= abi]
    return max(known, default=0)


def restrict_self(
    paths: list[tuple[str, int]], *, network: bool, scopes: bool, abi: int | None = None
) -> int:
    """Confine this process (and all it will start) to `paths`; returns the ABI applied.

    Each path is allowed the rights of its mask, limited to those the ABI knows. TCP bind and
    connect are denied unless `network`; with `scopes`, signals and abstract unix sockets
    cannot reach outside the sandbox (ABI 6). `abi` caps the ABI used below the kernel's, so
    a ruleset behaves as it would on an older kernel.
    """
    abi = abi_version() if abi is None else min(abi, abi_version())
    if abi < 1:
        raise SandboxUnavailableError(errno.EOPNOTSUPP, "the kernel offers no Landlock")
    libc = _libc()
    handled_fs = fs_rights(abi)
    handled_net = 0 if network or abi < 4 else NET_BIND_TCP | NET_CONNECT_TCP  # noqa: PLR2004 - ABI 4 brought TCP rules
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if scopes and abi >= 6 else 0  # noqa: PLR2004 - ABI 6 brought scopes
    attr = struct.pack("=QQQ", handled_fs, handled_net, scoped)
    buffer = ctypes.create_string_buffer(attr, len(attr))
    size = len(attr) if abi >= 6 else (16 if abi >= 4 else 8)  # noqa: PLR2004 - struct size per ABI
    ruleset = libc.syscall(CREATE_RULESET, buffer, ctypes.c_size_t(size), 0)
    if ruleset < 0:
        code = ctypes.get_errno()
        raise SandboxUnavailableError(code, f"landlock_create_ruleset: {os.strerror(code)}")
    try:
        for path, rights in paths:
            _add_path(libc, int(ruleset), path, rights & handled_fs)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            code = ctypes.get_errno()
            raise SandboxUnavailableError(code, f"no_new_privs: {os.strerror(code)}")
        if libc.syscall(RESTRICT_SELF, int(ruleset), 0) != 0:
            code = ctypes.get_errno()
            raise SandboxUnavailableError(code, f"landlock_restrict_self: {os.strerror(code)}")
    finally:
        os.close(int(ruleset))
    return abi


def _add_path(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(f"/proc/self/fd/{fd}"):
            rights &= FILE_RIGHTS
        if rights == 0:
            return
        attr = struct.pack("=Qi", rights, fd)
        buffer = ctypes.create_string_buffer(attr, len(attr))
        if libc.syscall(ADD_RULE, ruleset, RULE_PATH_BENEATH, buffer, 0) != 0:
            code = ctypes.get_errno()
            raise SandboxUnavailableError(code, f"landlock_add_rule {path}: {os.strerror(code)}")
    finally:
        os.close(fd)


def parse(argv: list[str]) -> tuple[list[tuple[str, int]], bool, bool, int | None, list[str]]:
    """The rules, network, scopes, ABI cap and command of `RULESET... -- COMMAND...`."""
    if "--" not in argv:
        msg = "no -- before the command"
        raise ValueError(msg)
    split = argv.index("--")
    ruleset, command = argv[:split], argv[split + 1 :]
    if not command:
        msg = "no command after --"
        raise ValueError(msg)
    paths: list[tuple[str, int]] = []
    network, scopes, abi = False, True, None
    for word in ruleset:
        if word == "--network":
            network = True
        elif word == "--no-scopes":
            scopes = False
        elif word.startswith("--abi="):
            abi = int(word.removeprefix("--abi="))
        elif word.startswith("--allow="):
            rights, _, path = word.removeprefix("--allow=").partition(":")
            if not path.startswith("/"):
                msg = f"not an absolute path: {path!r}"
                raise ValueError(msg)
            paths.append((path, int(rights)))
        else:
            msg = f"unknown ruleset word {word!r}"
            raise ValueError(msg)
    return paths, network, scopes, abi, command


def main(argv: list[str]) -> int:
    """Parse the ruleset, confine this process, and execute the command."""
    try:
        paths, network, scopes, abi, command = parse(argv)
        restrict_self(paths, network=network, scopes=scopes, abi=abi)
    except ValueError as error:
        sys.stderr.write(f"sandbox: unusable ruleset: {error}\n")
        return CANNOT_CONFINE
    except OSError as error:
        sys.stderr.write(f"sandbox: cannot confine the command: {error.strerror}\n")
        return CANNOT_CONFINE
    # Python ignores these at start-up, and an ignored signal stays ignored across exec:
    # the command must see a closed pipe as SIGPIPE, as it would when started by a shell.
    for signum in (_signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(signum, _signal.SIG_DFL)
    try:
        os.execv(command[0], command)  # noqa: S606 - becoming the confined command is the point
    except OSError as error:
        sys.stderr.write(f"sandbox: cannot execute {command[0]}: {error.strerror}\n")
    return CANNOT_EXECUTE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
