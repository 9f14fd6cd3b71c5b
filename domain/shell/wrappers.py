r"""Commands that run other commands: wrappers, `sh -c`, `eval`, `env -S`; domain layer.

A hard-deny rule must see through every way one argv runs another command, so `unwrap` lists
each command an argv runs:

- a wrapper's command: `env`, `nice`, `nohup`, `timeout N`, `xargs`, `command`, `exec`,
  `builtin`, `time`, `stdbuf`, `setsid`, `ionice`, `taskset MASK`, `chroot NEWROOT` and
  `busybox APPLET`, options (clustered, attached or abbreviated) and operands skipped;
- each `find -exec`, `-execdir`, `-ok` and `-okdir` command.

It also lists the command lines an argv runs from a string, for the policy to read in turn:

- `eval ARG...`: the arguments joined by spaces, as eval joins them;
- a shell (`sh`, `bash`, `dash`, `zsh`, `ksh`, ...) given `-c` in any cluster, or fish's
  `--command`: every argument that is not an option, since which one is the command string
  depends on options this reading does not model;
- `env -S STRING` and `--split-string`: `env STRING WORD...` for the words after the option,
  env's whitespace escapes (`\_`, `\t`, ...) read as spaces, since env splits the string into
  more of its own argv in place of the option.

The lists are bounded; when an argv runs more, `truncated` says so and the policy must treat
the command as one it cannot read.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from domain.shell.argv import basename
from domain.shell.syntax import skip_prelude

MAX_RUNS = 64
"""Commands one argv may run, itself included, before the reading gives up."""
MAX_STRINGS = 16
"""Command lines one argv may run from strings before the reading gives up."""

SHELLS = frozenset(
    {"sh", "ash", "bash", "dash", "ksh", "mksh", "posh", "rbash", "yash", "zsh"}
    | {"csh", "tcsh", "fish"}
)
"""Commands that run their `-c` argument as a command line."""
CHANGES_DIRECTORY = frozenset({"cd", "chdir", "pushd", "popd"})
"""Commands that change the shell's working directory, and so what later relative paths mean."""

_EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_EXEC_ENDS = frozenset({";", "+"})
_ENV_WHITESPACE = re.compile(r"\\[_tnvfr]")
_SHELL_COMMAND_OPTIONS = ("--command", "--init-command")


class Wrapper(NamedTuple):
    """How to find the command a wrapper such as `env` or `timeout` runs."""

    valued: str = ""
    """Options, separated by spaces, that take a value (attached, after `=`, or the next word)."""
    operands: int = 0
    """Operands between the options and the command, like the duration of `timeout`."""
    inert: str = ""
    """Options, separated by spaces, with which the wrapper runs nothing, like `command -v`."""
    strings: str = ""
    """Valued options whose value is itself a command line, like `env -S`."""


_Valued = tuple[str, str, int]
"""A valued option as written in full (`-S`, `--split-string`), its value, and the index of the
word after it."""


WRAPPERS: dict[str, Wrapper] = {
    "builtin": Wrapper(),
    "busybox": Wrapper(),
    "chroot": Wrapper("--userspec --groups", operands=1),
    "command": Wrapper(inert="-v -V"),
    "env": Wrapper("-u --unset -C --chdir -S --split-string", strings="-S --split-string"),
    "exec": Wrapper("-a"),
    "ionice": Wrapper("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "nice": Wrapper("-n --adjustment"),
    "nohup": Wrapper(),
    "setsid": Wrapper(),
    "stdbuf": Wrapper("-i --input -o --output -e --error"),
    "taskset": Wrapper(operands=1),
    "time": Wrapper("-f --format -o --output"),
    "timeout": Wrapper("-s --signal -k --kill-after", operands=1),
    "xargs": Wrapper(
        "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars"
        " --process-slot-var"
    ),
}
"""Wrappers by basename: each runs the command that follows its options and operands."""


@dataclass
class Unwrapped:
    """Every command one argv runs, and the command lines it runs from strings."""

    runs: list[Sequence[str]] = field(default_factory=list)
    """The argv itself (leading assignments skipped) and each command it runs, in turn."""
    strings: list[str] = field(default_factory=list)
    """Command lines run from a string (`sh -c`, `eval`, `env -S`), to be read in turn."""
    truncated: bool = False
    """Whether there were more than `MAX_RUNS` commands or `MAX_STRINGS` command lines."""


def unwrap(argv: Sequence[str]) -> Unwrapped:
    """Every command `argv` runs, through wrappers and `find -exec`, and its command strings."""
    found = Unwrapped()
    pending = [skip_prelude(argv)]
    while pending:
        run = pending.pop()
        if not run:
            continue
        if len(found.runs) == MAX_RUNS:
            found.truncated = True
            break
        found.runs.append(run)
        name = basename(run[0])
        strings = _command_strings(run, name)
        wrapper = WRAPPERS.get(name)
        scanned = None if wrapper is None else _scan(run, wrapper)
        if wrapper is not None and scanned is not None:
            index, values = scanned
            pending.append(skip_prelude(run[index:]))
            strings += _split_strings(run, values, wrapper)
        if name == "find":
            pending.extend(_exec_commands(run))
        room = MAX_STRINGS - len(found.strings)
        found.truncated = found.truncated or len(strings) > room
        found.strings.extend(strings[:room])
    return found


def _command_strings(run: Sequence[str], name: str) -> list[str]:
    if name == "eval":
        return [" ".join(run[1:])] if len(run) > 1 else []
    if name in SHELLS:
        return _shell_strings(run[1:])
    return []


def _shell_strings(arguments: Sequence[str]) -> list[str]:
    """With `-c` (or fish's `--command`) anywhere, every argument that may be the command line."""
    marked = any(_marks_command_string(argument) for argument in arguments)
    if not marked:
        return []
    strings = [argument for argument in arguments if not argument.startswith(("-", "+"))]
    strings += [
        value
        for argument in arguments
        if argument.startswith("--") and (value := argument.partition("=")[2])
    ]
    return strings[: MAX_STRINGS + 1]


def _marks_command_string(argument: str) -> bool:
    if argument.startswith("--"):
        name = argument.partition("=")[0]
        return name != "--" and any(option.startswith(name) for option in _SHELL_COMMAND_OPTIONS)
    return argument.startswith(("-", "+")) and "c" in argument[1:]


def _exec_commands(run: Sequence[str]) -> list[Sequence[str]]:
    """The commands of find's `-exec`-like actions, each up to its `;` or `+`."""
    commands: list[Sequence[str]] = []
    index = 1
    while index < len(run):
        if run[index] in _EXEC_ACTIONS:
            end = index + 1
            while end < len(run) and run[end] not in _EXEC_ENDS:
                end += 1
            commands.append(run[index + 1 : end])
            index = end
        index += 1
    return [skip_prelude(command) for command in commands]


def _split_strings(run: Sequence[str], values: list[_Valued], wrapper: Wrapper) -> list[str]:
    """For `env -S STRING WORD...`, the line `env STRING WORD...`, env's escapes read as spaces.

    Env splits STRING into words in place of the option, so every word after it follows.
    """
    splits = [
        (value, after) for option, value, after in values if option in wrapper.strings.split()
    ]
    return [
        f"{shlex.quote(run[0])} {_ENV_WHITESPACE.sub(' ', value)} {shlex.join(run[after:])}"
        for value, after in splits[: MAX_STRINGS + 1]
    ]


def _scan(run: Sequence[str], wrapper: Wrapper) -> tuple[int, list[_Valued]] | None:
    """Where the wrapped command starts, and each valued option with its value.

    Options are read as GNU getopt reads them: a short option that takes a value takes the rest
    of its cluster or else the next word, and a long option may be abbreviated and takes its
    value after `=` or as the next word. None when an inert option means nothing is run.
    """
    valued = wrapper.valued.split()
    inert = wrapper.inert.split()
    values: list[_Valued] = []
    index = 1
    while index < len(run) and run[index].startswith("-"):
        word = run[index]
        index += 1
        if word == "--":
            break
        if word.startswith("--"):
            name, equals, value = word.partition("=")
            option = next((o for o in valued if o.startswith("--") and o.startswith(name)), None)
            if option is not None and not equals and index < len(run):
                value = run[index]
                index += 1
            if option is not None:
                values.append((option, value, index))
            continue
        for position, letter in enumerate(word[1:], start=2):
            if f"-{letter}" in inert:
                return None
            if f"-{letter}" in valued:
                value = word[position:]
                if not value and index < len(run):
                    value = run[index]
                    index += 1
                values.append((f"-{letter}", value, index))
                break
    return index + wrapper.operands, values
