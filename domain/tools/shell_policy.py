"""The shell command policy: read a command line statically, name its paths, judge it; domain layer.

Reading is deliberately narrow. Anything whose meaning the shell settles only when it runs
(expansions, substitutions, here-documents, grouping, comments) leaves a command unparsed, and an
unparsed command is never reviewed-safe. Hard-deny rules are still checked on a best-effort
reading, so a denied command stays denied however it is dressed up. Paths are only named here;
whether they may be touched is the path access policy's question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase
from typing import Annotated, NamedTuple, Self

from pydantic import AfterValidator, model_validator

from domain.base import Value
from domain.text import Text, check_text
from domain.tools.shell_syntax import (
    GLOB,
    Reading,
    Simple,
    read,
    rough_tokens,
    run_time_problem,
    skip_prelude,
    tokens,
    writes,
)

MAX_COMMAND_BYTES = 64 * 1024
"""Longer commands are not parsed; a command line is no place for bulk data."""

RM_RECURSIVE_FORCE_ROOT = "rm -r -f on / or ~"
"""The one hard-deny rule that is not a phrase: `rm` with a recursive and a force flag, in any
spelling (`-rf`, `-r -f`, `--recursive --force`, ...), aimed at `/`, `/*`, `~`, `~/` or `~/*`."""

DEFAULT_HARD_DENY: tuple[str, ...] = (
    "sudo",
    "su",
    "doas",
    "pkexec",
    "mkfs",
    "mkfs.*",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "dd",
    "rm -rf /",
    "rm -fr /",
    "chmod -R 777 /",
    RM_RECURSIVE_FORCE_ROOT,
)
"""Commands refused outright, whatever the approvals say."""

DEFAULT_REVIEWED_SAFE: tuple[str, ...] = (
    "ls",
    "pwd",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "find",
    "stat",
    "file",
    "du",
    "df",
    "echo",
    "git status",
    "git diff",
    "git log",
    "git show",
    "git branch",
    "tree",
    "sort",
    "uniq",
    "diff",
)
"""Read-only commands that need no consent once every path they name is allowed."""

_ROOT_OR_HOME = frozenset({"/", "/*", "~", "~/", "~/*"})
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


class _Wrapper(NamedTuple):
    """How to find the command a wrapper such as `env` or `timeout` runs."""

    valued: str = ""
    """Options, separated by spaces, whose value is the next word."""
    operands: int = 0
    """Operands between the options and the command, like the duration of `timeout`."""
    inert: str = ""
    """Options, separated by spaces, with which the wrapper runs nothing, like `command -v`."""


_WRAPPERS: dict[str, _Wrapper] = {
    "command": _Wrapper(inert="-v -V"),
    "env": _Wrapper("-u --unset -C --chdir -S --split-string"),
    "exec": _Wrapper("-a"),
    "nice": _Wrapper("-n --adjustment"),
    "nohup": _Wrapper(),
    "time": _Wrapper("-f --format -o --output"),
    "timeout": _Wrapper("-s --signal -k --kill-after", operands=1),
    "xargs": _Wrapper(
        "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars"
        " --process-slot-var"
    ),
}

_WRITE_OR_RUN_OPTIONS: dict[str, tuple[str, ...]] = {
    key: tuple(options.split())
    for key, options in {
        "find": "-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls",
        "sort": "-o --output --compress-program",
        "rg": "--pre --hostname-bin",
        "tree": "-o -R",
        "file": "-C --compile",
        "git diff": "--output --ext-diff",
        "git log": "--output --ext-diff",
        "git show": "--output --ext-diff",
        "git branch": "-d -D --delete -m -M --move -c -C --copy -f --force -t --track --no-track"
        " -u --set-upstream-to --unset-upstream --edit-description --create-reflog",
    }.items()
}
"""Options that make an otherwise read-only command write files or run programs."""
_MAX_OPERANDS: dict[str, int] = {"git branch": 0, "uniq": 1}
"""Read-only commands that write once given more operands (`git branch NAME`, `uniq IN OUT`)."""


def _check_phrase(value: str) -> str:
    check_text(value)
    if not value or " ".join(value.split()) != value:
        msg = f"a phrase is one or more words separated by single spaces: {value!r}"
        raise ValueError(msg)
    return value


Phrase = Annotated[str, AfterValidator(_check_phrase)]
"""One or more words separated by single spaces, matched against the start of an argv."""


class ShellPolicy(Value):
    """Which commands are refused outright and which need no consent beyond their paths.

    A hard-deny rule matches a simple command whose argv starts with the rule's words. The first
    word is a shell-style pattern compared with the command's basename (so `/usr/bin/sudo` is
    `sudo`, and `mkfs.*` covers `mkfs.ext4`), and wrappers such as `env`, `nice`, `nohup`,
    `timeout N`, `xargs`, `command`, `exec` and `time` are looked through.
    `RM_RECURSIVE_FORCE_ROOT` is checked by flag-aware logic instead.

    A reviewed-safe phrase matches an argv that starts with exactly its words, the first word
    included: `/bin/ls` is not `ls`.
    """

    hard_deny: tuple[Phrase, ...] = DEFAULT_HARD_DENY
    reviewed_safe: tuple[Phrase, ...] = DEFAULT_REVIEWED_SAFE


class ShellAssessment(Value):
    """What the policy concluded about one command line, before any path is checked."""

    command: Text
    """The command as given; lone surrogates, which are not UTF-8, are backslash-escaped."""
    parsed: bool
    """False when the command cannot be read reliably; such a command is never reviewed-safe."""
    problem: Text = ""
    """Why the command is not parsed; empty when it is."""
    segments: tuple[tuple[Text, ...], ...] = ()
    """The argv of each simple command, operators and redirections removed; leading `NAME=value`
    words stay. A best-effort reading when the command is not parsed."""
    paths: tuple[Text, ...] = ()
    """Every path the command names, as written (`~` not expanded), deduplicated in order."""
    hard_denied: Text | None = None
    """The hard-deny rule that matched, if any; checked even when the command is not parsed."""
    reviewed_safe_phrase: Text | None = None
    """The reviewed-safe phrase the first simple command matched, when every one matched one."""

    @model_validator(mode="after")
    def _check_shape(self) -> Self:
        if self.parsed == bool(self.problem):
            msg = "a command is parsed exactly when there is no problem"
            raise ValueError(msg)
        if self.reviewed_safe_phrase is not None and (
            not self.parsed or self.hard_denied is not None
        ):
            msg = "only a parsed command that no rule denies can be reviewed-safe"
            raise ValueError(msg)
        return self


def assess_command(command: str, policy: ShellPolicy) -> ShellAssessment:
    """Read `command` without running anything and judge it against `policy`; never raises.

    The verdict is reviewed-safe only when the command is parsed, no rule denies it, it neither
    redirects output to a file nor runs in the background, and every simple command starts with
    a reviewed-safe phrase without an option that makes it write or run something. The caller
    must still check every path in `paths`.
    """
    stored = command.encode("utf-8", "backslashreplace").decode("utf-8")
    unreadable = _unreadable_problem(command, stored)
    problem = unreadable or run_time_problem(command)
    if unreadable:
        split = rough_tokens(stored)
    else:
        try:
            split = tokens(stored)
        except ValueError as error:
            problem = problem or f"the command cannot be split: {error}"
            split = rough_tokens(stored)
    reading = read(split)
    problem = problem or reading.problem
    denied = next(
        (rule for simple in reading.commands if (rule := _denying_rule(simple.argv, policy))),
        None,
    )
    safe = None if problem or denied else _reviewed_safe_phrase(reading, policy.reviewed_safe)
    return ShellAssessment(
        command=stored,
        parsed=not problem,
        problem=problem,
        segments=tuple(tuple(simple.argv) for simple in reading.commands),
        paths=tuple(dict.fromkeys(path for path in reading.paths if path)),
        hard_denied=denied,
        reviewed_safe_phrase=safe,
    )


def _unreadable_problem(command: str, stored: str) -> str:
    if len(stored.encode("utf-8")) > MAX_COMMAND_BYTES:
        return f"the command is longer than {MAX_COMMAND_BYTES // 1024} KiB"
    if stored != command:
        return "the command is not valid UTF-8"
    if "\n" in command:
        return "the command spans more than one line"
    if _CONTROL.search(command):
        return "the command contains NUL or another control character"
    return ""


# Hard deny.


def _denying_rule(argv: Sequence[str], policy: ShellPolicy) -> str | None:
    """The first rule that denies `argv` or any command it wraps, if one does."""
    for run in _runs(argv):
        for rule in policy.hard_deny:
            if rule == RM_RECURSIVE_FORCE_ROOT and _removes_root_or_home(run):
                return rule
            if rule != RM_RECURSIVE_FORCE_ROOT and _invokes(run, rule.split()):
                return rule
    return None


def _runs(argv: Sequence[str]) -> Iterator[Sequence[str]]:
    """`argv` and, through wrappers such as `env` or `nohup`, each command it runs in turn."""
    rest = skip_prelude(argv)
    while rest:
        yield rest
        wrapper = _WRAPPERS.get(_basename(rest[0]))
        if wrapper is None:
            return
        rest = skip_prelude(_wrapped(rest, wrapper))


def _wrapped(argv: Sequence[str], wrapper: _Wrapper) -> Sequence[str]:
    index = 1
    while index < len(argv) and argv[index].startswith("-"):
        option = argv[index]
        index += 1
        if option in wrapper.inert.split():
            return ()
        if option == "--":
            break
        if option in wrapper.valued.split():
            index += 1
    return argv[index + wrapper.operands :]


def _invokes(argv: Sequence[str], words: Sequence[str]) -> bool:
    """Whether `argv` starts with `words`, its command compared by basename as a pattern."""
    if not words or len(argv) < len(words):
        return False
    name = _basename(argv[0])
    named = fnmatchcase(name, words[0]) or bool(GLOB.search(name) and fnmatchcase(words[0], name))
    return named and list(argv[1 : len(words)]) == list(words[1:])


def _removes_root_or_home(argv: Sequence[str]) -> bool:
    if _basename(argv[0]) != "rm":
        return False
    options, operands = _options_and_operands(argv[1:])
    recursive = any(_spells(option, short) for option in options for short in ("-r", "-R"))
    recursive = recursive or any(_spells(option, "--recursive") for option in options)
    force = any(_spells(option, "-f") or _spells(option, "--force") for option in options)
    return recursive and force and any(_squeezed(path) in _ROOT_OR_HOME for path in operands)


def _squeezed(path: str) -> str:
    return re.sub("/+", "/", path)


def _basename(word: str) -> str:
    return word.rpartition("/")[2]


def _options_and_operands(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """GNU-style options and operands; `--` ends the options and `-` alone is an operand."""
    options: list[str] = []
    operands: list[str] = []
    ended = False
    for argument in arguments:
        if ended or argument == "-" or not argument.startswith("-"):
            operands.append(argument)
        elif argument == "--":
            ended = True
        else:
            options.append(argument)
    return options, operands


def _spells(argument: str, option: str) -> bool:
    """Whether `argument` spells `option`, as GNU-style parsers would read it.

    A `--long` option also matches an abbreviation and a `=value` suffix; a one-letter `-x` also
    matches inside a cluster such as `-uo` (even where a letter is really a value: erring towards
    a match is the safe side); any other option, such as find's `-delete`, matches exactly.
    """
    if option.startswith("--"):
        name = argument.partition("=")[0]
        return name.startswith("--") and name != "--" and option.startswith(name)
    if len(option) == len("-x"):
        return argument.startswith("-") and not argument.startswith("--") and option[1] in argument
    return argument == option


# Reviewed safe.


def _reviewed_safe_phrase(reading: Reading, phrases: Sequence[str]) -> str | None:
    if "&" in reading.separators:
        return None
    redirections = [pair for simple in reading.commands for pair in simple.redirections]
    if any(writes(operator, target) for operator, target in redirections):
        return None
    matched: list[str] = []
    for simple in reading.commands:
        phrase = next((p for p in phrases if _starts_with(simple.argv, p.split())), None)
        if phrase is None or _writes_or_runs(simple):
            return None
        matched.append(phrase)
    return matched[0]


def _starts_with(argv: Sequence[str], words: Sequence[str]) -> bool:
    return len(argv) >= len(words) and list(argv[: len(words)]) == list(words)


def _writes_or_runs(simple: Simple) -> bool:
    """Whether an option, an extra operand or a glob may make a read-only command write or run.

    An unquoted glob counts for the commands with such options: a file named `-delete` or
    `--pre=sh` would otherwise turn into an option when the shell expands it.
    """
    argv = simple.argv
    for key, options in _WRITE_OR_RUN_OPTIONS.items():
        words = key.split()
        if _invokes(argv, words):
            arguments = argv[len(words) :]
            if simple.globbed or any(_spells(a, o) for a in arguments for o in options):
                return True
    for key, limit in _MAX_OPERANDS.items():
        words = key.split()
        if _invokes(argv, words):
            _, operands = _options_and_operands(argv[len(words) :])
            if simple.globbed or len(operands) > limit:
                return True
    return False
