"""The shell command policy: read a command line statically, name its paths, judge it; domain layer.

How a command line is read, and which paths it names, is `syntax`'s business; in short,
anything the shell settles only when it runs (expansions, substitutions, unquoted globs,
here-documents, grouping, comments) leaves it unparsed. The policy adds these rules:

- A command that changes the working directory (`cd`, `pushd`, `popd`, even behind a wrapper)
  is unparsed: later relative paths would name something else than the ones checked.
- A command line run from a string (`sh -c`, `bash -c`, ..., `eval`, `env -S`) is read in turn,
  up to `MAX_NESTING` levels deep: its hard-deny rule denies the outer command, its paths are
  the outer command's paths too, and if it is unparsed so is the outer command. Such a
  command is never reviewed-safe. Nesting deeper, more command lines (`MAX_NESTED_LINES`,
  `MAX_NESTED_CHARS`) or more wrapped commands (`wrappers.MAX_RUNS`) than are read leave
  the command unparsed, and then any word in it that starts a denied phrase denies it.
- A relative target of `ln`, even behind a wrapper, is also named from the directory the link
  lands in (`links`), since the kernel resolves a symbolic link's target from there.
- Hard-deny rules see through wrappers and `find -exec` (`wrappers`) and are checked even
  on an unparsed command, on a best-effort reading, so a denied command stays denied however it
  is dressed up.
- Only a parsed, undenied command can be reviewed-safe (`reviewed`); an unparsed one
  always needs an approval that covers that one call.
- A problem text is at most `MAX_PROBLEM_CHARS` characters.

Paths are only named here; whether they may be touched is the path access policy's question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, NamedTuple, Self

from pydantic import AfterValidator, model_validator

from domain.base import Value
from domain.shell.argv import basename, invokes, options_and_operands, spells
from domain.shell.links import link_targets
from domain.shell.reviewed import reviewed_safe_phrase
from domain.shell.syntax import Reading, read
from domain.shell.tokens import rough_tokens, run_time_problem, tokens
from domain.shell.wrappers import CHANGES_DIRECTORY, unwrap
from domain.text import Text, check_text

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
    "tree",
    "sort",
    "uniq",
)
"""Read-only commands that need no consent once every path they name is allowed.

No `git` phrase is here: `git status`, `diff`, `log` and `show` run programs named in the
repository's config (`core.fsmonitor`, diff drivers, textconv), which the agent may have
written. Nor is `diff`: comparing two directories follows every symbolic link inside them.
"""

MAX_PROBLEM_CHARS = 200
"""The longest problem text; longer ones are cut, since a problem is quoted in a rule."""
MAX_NESTING = 4
"""How deep command lines run from strings (`sh -c '...'`) are read."""
MAX_NESTED_LINES = 32
"""How many command lines run from strings are read, at all depths together."""
MAX_NESTED_CHARS = 2 * MAX_COMMAND_BYTES
"""How many characters of command lines run from strings are read, at all depths together."""

_ROOT_OR_HOME = frozenset({"/", "/*", "~", "~/", "~/*"})
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_ENV_ESCAPES = re.compile(r"\\[_tnvfr]")
_SCAN_WINDOW = 64
"""How many words from each start the last-resort scan of a nest too deep to read looks at."""


def check_phrase(value: str) -> str:
    """Return `value` if it is one or more words separated by single spaces, else ValueError."""
    check_text(value)
    if not value or " ".join(value.split()) != value:
        msg = f"a phrase is one or more words separated by single spaces: {value!r}"
        raise ValueError(msg)
    return value


Phrase = Annotated[str, AfterValidator(check_phrase)]
"""One or more words separated by single spaces, matched against the start of an argv."""


class ShellPolicy(Value):
    """Which commands are refused outright and which need no consent beyond their paths.

    A hard-deny rule matches a simple command whose argv starts with the rule's words. The first
    word is a shell-style pattern compared with the command's basename (so `/usr/bin/sudo` is
    `sudo`, and `mkfs.*` covers `mkfs.ext4`), and wrappers such as `env`, `nice`, `nohup`,
    `timeout N`, `xargs`, `stdbuf`, `setsid`, `chroot DIR`, `busybox`, `command`, `exec` and
    `time`, `find -exec`, and command lines run by `sh -c`, `eval` or `env -S` are looked
    through. `RM_RECURSIVE_FORCE_ROOT` is checked by flag-aware logic instead.

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


class _Verdict(NamedTuple):
    """One command line's reading and verdict, before it becomes an assessment."""

    stored: str
    reading: Reading
    problem: str
    denied: str | None
    paths: list[str]
    runs_strings: bool
    """Whether it runs a command line from a string, which is never reviewed-safe."""


@dataclass
class _Budget:
    """What is left of the nested command lines to read, shared across one assessment."""

    lines: int = MAX_NESTED_LINES
    chars: int = MAX_NESTED_CHARS
    exceeded: bool = False


def assess_command(command: str, policy: ShellPolicy) -> ShellAssessment:
    """Read `command` without running anything and judge it against `policy`; never raises.

    The verdict is reviewed-safe only when the command is parsed, no rule denies it, it runs no
    command line from a string, it neither redirects output to a file nor runs in the
    background, and every simple command starts with a reviewed-safe phrase without an option
    that makes it unsafe. The caller must still check every path in `paths`.
    """
    budget = _Budget()
    verdict = _assess(command, policy, 0, budget)
    problem, denied = verdict.problem, verdict.denied
    if budget.exceeded:
        problem = problem or "the command runs more wrapped or nested commands than can be read"
        denied = denied or _denied_anywhere(verdict.stored, policy)
    safe = None
    if not (problem or denied or verdict.runs_strings):
        safe = reviewed_safe_phrase(verdict.reading, policy.reviewed_safe)
    return ShellAssessment(
        command=verdict.stored,
        parsed=not problem,
        problem=_capped(problem),
        segments=tuple(tuple(simple.argv) for simple in verdict.reading.commands),
        paths=tuple(dict.fromkeys(path for path in verdict.paths if path)),
        hard_denied=denied,
        reviewed_safe_phrase=safe,
    )


def _assess(command: str, policy: ShellPolicy, depth: int, budget: _Budget) -> _Verdict:
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
    denied: str | None = None
    paths = list(reading.paths)
    runs_strings = False
    for simple in reading.commands:
        unwrapped = unwrap(simple.argv)
        budget.exceeded = budget.exceeded or unwrapped.truncated
        for run in unwrapped.runs:
            denied = denied or _denying_rule(run, policy)
            paths += link_targets(run)
            if basename(run[0]) in CHANGES_DIRECTORY:
                problem = problem or f"{basename(run[0])!r} changes the working directory"
        runs_strings = runs_strings or bool(unwrapped.strings)
        for line in unwrapped.strings:
            if depth == MAX_NESTING or budget.lines == 0 or len(line) > budget.chars:
                budget.exceeded = True
                break
            budget.lines -= 1
            budget.chars -= len(line)
            inner = _assess(line, policy, depth + 1, budget)
            denied = denied or inner.denied
            if inner.problem:
                problem = problem or f"a command line it runs is not parsed: {inner.problem}"
            paths += inner.paths
    return _Verdict(stored, reading, problem, denied, paths, runs_strings)


def _capped(problem: str) -> str:
    if len(problem) <= MAX_PROBLEM_CHARS:
        return problem
    return problem[: MAX_PROBLEM_CHARS - 3] + "..."


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


def _denying_rule(run: Sequence[str], policy: ShellPolicy) -> str | None:
    """The first rule that denies the command `run` itself, if one does."""
    for rule in policy.hard_deny:
        if rule == RM_RECURSIVE_FORCE_ROOT and _removes_root_or_home(run):
            return rule
        if rule != RM_RECURSIVE_FORCE_ROOT and invokes(run, rule.split()):
            return rule
    return None


def _denied_anywhere(stored: str, policy: ShellPolicy) -> str | None:
    """The last resort for a nest too deep to read: a rule matched from any word on."""
    words = [token.text for token in rough_tokens(_ENV_ESCAPES.sub(" ", stored))]
    return next(
        (
            rule
            for start in range(len(words))
            if (rule := _denying_rule(words[start : start + _SCAN_WINDOW], policy))
        ),
        None,
    )


def _removes_root_or_home(argv: Sequence[str]) -> bool:
    if basename(argv[0]) != "rm":
        return False
    options, operands = options_and_operands(argv[1:])
    recursive = any(spells(option, short) for option in options for short in ("-r", "-R"))
    recursive = recursive or any(spells(option, "--recursive") for option in options)
    force = any(spells(option, "-f") or spells(option, "--force") for option in options)
    return recursive and force and any(_squeezed(path) in _ROOT_OR_HOME for path in operands)


def _squeezed(path: str) -> str:
    return re.sub("/+", "/", path)
