"""The shell command policy: read a command line statically, name its paths, judge it; domain layer.

Reading is deliberately narrow. Anything whose meaning the shell settles only when it runs
(expansions, substitutions, here-documents, grouping, comments) leaves a command unparsed, and an
unparsed command is never reviewed-safe. Hard-deny rules are still checked on a best-effort
reading, so a denied command stays denied however it is dressed up. Paths are only named here;
whether they may be touched is the path access policy's question.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from fnmatch import fnmatchcase
from typing import Annotated, NamedTuple, Self

from pydantic import AfterValidator, model_validator

from domain.base import Value
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

_QUOTED = "\x01"
_FD = "\x02"
_OPERATOR_CHARS = frozenset("();<>|&")
_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&"})
_ENDINGS = frozenset({";", "&"})
_REDIRECTIONS = frozenset({"<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&"})
_WRITING_REDIRECTIONS = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
_DUPLICATIONS = frozenset({">&", "<&"})
_RESERVED_WORDS = frozenset(
    {"!", "{", "}", "[[", "case", "coproc", "do", "done", "elif", "else", "esac", "fi"}
    | {"for", "function", "if", "select", "then", "until", "while"}
)
_ROOT_OR_HOME = frozenset({"/", "/*", "~", "~/", "~/*"})

_FD_NUMBER = re.compile(r"(?<![^ \t();<>|&])[0-9]+(?=[<>])")
_DESCRIPTOR = re.compile(r"[0-9]+-?|-")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_GLOB = re.compile(r"[*?\[]")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")
_ROUGH_TOKEN = re.compile(r"[();<>|&\n]+|[^\s();<>|&]+")
_RUN_TIME_MARKERS = (
    ("$", "'$' expands parameters or substitutes commands when the shell runs"),
    ("`", "backticks substitute commands when the shell runs"),
)


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
    problem = unreadable or _run_time_problem(command)
    if unreadable:
        tokens = _rough_tokens(stored)
    else:
        try:
            tokens = _tokens(stored)
        except ValueError as error:
            problem = problem or f"the command cannot be split: {error}"
            tokens = _rough_tokens(stored)
    reading = _read(tokens)
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


def _run_time_problem(command: str) -> str:
    if not command.strip(" \t"):
        return "the command is empty"
    return next((problem for marker, problem in _RUN_TIME_MARKERS if marker in command), "")


# Reading tokens. shlex removes quotes, so a quoted ";" and the operator ";" come out alike, and
# it drops whitespace, so `2>x` and `2 >x` do too. A second pass over a masked copy, in which
# every quoted character is a placeholder, tells which tokens the shell sees as operators.


class _Kind(StrEnum):
    WORD = "word"
    OPERATOR = "operator"
    FD = "fd"
    """The descriptor number written against a redirection, as the 2 in `2>err`."""


class _Token(NamedTuple):
    text: str
    """The word after quote removal, or the operator."""
    kind: _Kind
    plain: str
    """The token as written, with every quoted or escaped character masked."""


def _lexer(text: str) -> shlex.shlex:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    # A `#` starts a comment only at the start of a word, which shlex does not know.
    lexer.commenters = ""
    return lexer


def _mask(command: str) -> str:
    """`command` with quotes, escapes and quoted characters masked; same length, same splits."""
    masked: list[str] = []
    quote = ""
    escaped = False
    for char in command:
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        else:
            masked.append(char)
            continue
        masked.append(_QUOTED)
    return _FD_NUMBER.sub(lambda number: _FD * len(number[0]), "".join(masked))


def _kind_of(plain: str) -> _Kind:
    if plain and all(char in _OPERATOR_CHARS for char in plain):
        return _Kind.OPERATOR
    if plain and all(char == _FD for char in plain):
        return _Kind.FD
    return _Kind.WORD


def _tokens(command: str) -> list[_Token]:
    """Split `command` as the shell would; raise ValueError when that cannot be done reliably."""
    texts = list(_lexer(command))
    plains = list(_lexer(_mask(command)))
    if len(texts) != len(plains):
        msg = "quoting and operators do not line up"
        raise ValueError(msg)
    return [_Token(text, _kind_of(plain), plain) for text, plain in zip(texts, plains, strict=True)]


def _rough_tokens(command: str) -> list[_Token]:
    """A best-effort split of a command shlex cannot read, enough to look for hard-deny rules."""
    words = _ROUGH_TOKEN.findall(re.sub(r"[\"'\\]", "", command))
    return [
        _Token(word, _Kind.OPERATOR if word[0] in "();<>|&\n" else _Kind.WORD, word)
        for word in words
    ]


@dataclass
class _Simple:
    """One simple command: its argv and its redirections."""

    argv: list[str] = field(default_factory=list)
    redirections: list[tuple[str, str]] = field(default_factory=list)
    globbed: bool = False
    """Whether an argument holds an unquoted glob, which the shell may expand into options."""

    @property
    def empty(self) -> bool:
        return not self.argv and not self.redirections


@dataclass
class _Reading:
    """The simple commands, the paths in the order written, and the first problem found."""

    commands: list[_Simple] = field(default_factory=lambda: [_Simple()])
    separators: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    problem: str = ""

    def fail(self, problem: str) -> None:
        self.problem = self.problem or problem

    def add_word(self, token: _Token) -> None:
        simple = self.commands[-1]
        self.fail(_word_problem(token, first=not simple.argv))
        in_prelude = all(_ASSIGNMENT.match(word) for word in simple.argv)
        simple.globbed = simple.globbed or bool(simple.argv and _GLOB.search(token.plain))
        simple.argv.append(token.text)
        self.paths.extend(_paths_in_word(token.text, command_word=in_prelude))

    def redirect(self, operator: str, target: str) -> None:
        self.commands[-1].redirections.append((operator, target))
        if not _duplicates(operator, target):
            self.paths.append(_before_glob(target))

    def separate(self, operator: str) -> None:
        if operator not in _SEPARATORS:
            self.fail(_operator_problem(operator))
        if self.commands[-1].empty:
            self.fail(f"no command before {operator!r}")
        self.separators.append(operator)
        self.commands.append(_Simple())

    def finish(self, pending: str) -> None:
        if pending:
            self.fail(f"{pending!r} has no target")
        if not self.commands[-1].empty:
            return
        self.commands.pop()
        if not self.separators:
            self.fail("the command is empty")
        elif self.separators[-1] not in _ENDINGS:
            self.fail(f"no command after {self.separators[-1]!r}")


def _read(tokens: Sequence[_Token]) -> _Reading:
    reading = _Reading()
    pending = ""
    for token in tokens:
        if pending and token.kind is _Kind.WORD:
            reading.fail(_word_problem(token, first=False))
            reading.redirect(pending, token.text)
            pending = ""
            continue
        if pending:
            reading.fail(f"{pending!r} has no target")
            pending = ""
        if token.kind is _Kind.WORD:
            reading.add_word(token)
        elif token.kind is _Kind.OPERATOR and token.text in _REDIRECTIONS:
            pending = token.text
        elif token.kind is _Kind.OPERATOR:
            reading.separate(token.text)
    reading.finish(pending)
    return reading


def _word_problem(token: _Token, *, first: bool) -> str:
    plain = token.plain
    if plain.startswith("#"):
        return "comments are not supported"
    if ("{" in plain or "}" in plain) and plain != "{}":
        return "braces (grouping or brace expansion) are not supported"
    if plain.startswith(("~+", "~-")):
        return "'~+' and '~-' name the shell's directories at run time"
    if first and plain in _RESERVED_WORDS:
        return f"compound commands ({plain!r}) are not supported"
    if first and _GLOB.search(plain):
        return "the shell expands a glob in a command name when it runs"
    return ""


def _operator_problem(operator: str) -> str:
    if "(" in operator or ")" in operator:
        return "subshells and process substitution are not supported"
    if operator.startswith("<<"):
        return "here-documents are not supported"
    return f"unknown operator {operator!r}"


def _duplicates(operator: str, target: str) -> bool:
    """Whether a redirection copies or closes a descriptor (`2>&1`, `>&-`) instead of a file."""
    return operator in _DUPLICATIONS and _DESCRIPTOR.fullmatch(target) is not None


# Paths.


def _paths_in_word(word: str, *, command_word: bool) -> list[str]:
    """The paths one argv word names; empty strings stand for none.

    An argument names a path when it contains `/` or starts with `.` or `~`, and so may the
    part after its first `=`; for an option (`--name=value`, `-Ivalue`) or a leading assignment
    only the value is judged. A command name names a path only when it contains `/`. A glob
    names the directory before its first glob character, if any.
    """
    if command_word and _ASSIGNMENT.match(word):
        return [_path_named_by(word.partition("=")[2])]
    if command_word:
        return [_before_glob(word)] if "/" in word else []
    if word.startswith("-"):
        return [_path_named_by(_option_value(word))]
    return [_path_named_by(word), _path_named_by(word.partition("=")[2])]


def _option_value(option: str) -> str:
    if option.startswith("--"):
        return option.partition("=")[2]
    return option[2:]


def _path_named_by(word: str) -> str:
    if "/" in word or word.startswith((".", "~")):
        return _before_glob(word)
    return ""


def _before_glob(path: str) -> str:
    """`path` itself, or for a glob the directory part before the first glob character."""
    glob = _GLOB.search(path)
    if glob is None:
        return path
    return path[: path.rfind("/", 0, glob.start()) + 1]


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
    rest = _skip_prelude(argv)
    while rest:
        yield rest
        wrapper = _WRAPPERS.get(_basename(rest[0]))
        if wrapper is None:
            return
        rest = _skip_prelude(_wrapped(rest, wrapper))


def _skip_prelude(argv: Sequence[str]) -> Sequence[str]:
    """`argv` without leading `NAME=value` assignments and reserved words such as `then`."""
    start = 0
    while start < len(argv) and (argv[start] in _RESERVED_WORDS or _ASSIGNMENT.match(argv[start])):
        start += 1
    return argv[start:]


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
    named = fnmatchcase(name, words[0]) or bool(_GLOB.search(name) and fnmatchcase(words[0], name))
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


def _reviewed_safe_phrase(reading: _Reading, phrases: Sequence[str]) -> str | None:
    if "&" in reading.separators:
        return None
    redirections = [pair for simple in reading.commands for pair in simple.redirections]
    if any(_writes(operator, target) for operator, target in redirections):
        return None
    matched: list[str] = []
    for simple in reading.commands:
        phrase = next((p for p in phrases if _starts_with(simple.argv, p.split())), None)
        if phrase is None or _writes_or_runs(simple):
            return None
        matched.append(phrase)
    return matched[0]


def _writes(operator: str, target: str) -> bool:
    return operator in _WRITING_REDIRECTIONS or (
        operator == ">&" and not _duplicates(operator, target)
    )


def _starts_with(argv: Sequence[str], words: Sequence[str]) -> bool:
    return len(argv) >= len(words) and list(argv[: len(words)]) == list(words)


def _writes_or_runs(simple: _Simple) -> bool:
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
