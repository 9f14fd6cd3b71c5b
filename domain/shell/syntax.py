"""Shell syntax: read a command line into simple commands and the paths they name; domain layer.

Reading is deliberately narrow. A command is unparsed when the shell settles its meaning only
when it runs: expansions and substitutions (`$`, backticks), unquoted glob characters (`*`, `?`,
`[`) in any word or redirection target, braces, here-documents, subshells, compound commands,
comments, `~+` and `~-`. Quoted or escaped characters are literal and never a problem.

Paths are named as written, never resolved, and erring towards too many:

- every argument after the command name that is not an option (options start with `-`), and
  every argument after `--` even if it starts with `-`; a plain word such as `notes` or a regex
  is a path too, since a link of that name could lead anywhere;
- for an argument holding `=`, also the part after the first `=` when it looks like a path
  (holds `/` or starts with `.` or `~`);
- for a `--long=value` option, the value;
- for a short option cluster such as `-bmVALUE`, every suffix that may be the value of one of
  its letters (`mVALUE`, `VALUE`), since which letter takes a value is the command's business:
  the suffixes start after each of the leading letters and digits, up to `MAX_CLUSTER_LETTERS`;
- the value of a leading `NAME=value` assignment when it looks like a path;
- a command name holding `/`;
- every redirection target, except a descriptor copied or closed (`2>&1`, `>&-`);
- for each of these that holds a `:`, also each part of the colon-separated list, since many
  commands read such lists (`file -m a:b`, `PATH=a:b`);
- for each of these found inside a word that starts with `~` (`--file=~/x`, `a:~/x`), both the
  home and the literal relative name `./~/x`, since some shells expand such a `~` and others
  pass it on as it is.

A descriptor number against a redirection is a single digit, as dash reads it: in `cat 12<x`
the `12` is a word and a path. A word quoted at its `~` names a relative path (`./~x`), since
the shell expands only an unquoted `~`; an unquoted `~user` is a problem, since this reading does
not resolve other users' homes.

In a word with an unquoted glob (only in an unparsed command) the path is the directory before
the first glob character, if any, so a best-effort check still sees where the glob looks. In a
word with `$` or a backtick (only in an unparsed command) the path is the directory before the
first of them, so what the expansion names is never taken as a path inside the directory it
seems to be in (`$PWD/..` names nothing, `/etc/$X` names `/etc/`).
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import NamedTuple

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

_FD_NUMBER = re.compile(r"(?<![^ \t();<>|&])[0-9](?=[<>])")
_DESCRIPTOR = re.compile(r"[0-9]+-?|-")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
GLOB = re.compile(r"[*?\[]")
"""A glob character: `*`, `?` or `[`."""
MAX_CLUSTER_LETTERS = 64
"""Leading letters of a short option cluster whose suffixes are named; more is a problem."""
_CLUSTER_LETTERS = string.ascii_letters + string.digits
_OTHER_HOME = re.compile(r"(?:^|[=:])~[^/]")
_EXPANSION = re.compile(r"[$`]")
_SHOWN_CHARS = 24
_ROUGH_TOKEN = re.compile(r"[();<>|&\n]+|[^\s();<>|&]+")
_RUN_TIME_MARKERS = (
    ("$", "'$' expands parameters or substitutes commands when the shell runs"),
    ("`", "backticks substitute commands when the shell runs"),
)


def run_time_problem(command: str) -> str:
    """Why `command` is empty or means something only when the shell runs it; empty if neither."""
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


def shown(text: str) -> str:
    """`text` quoted for a problem message, shortened so the message stays short."""
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...")


def _kind_of(plain: str) -> _Kind:
    if plain and all(char in _OPERATOR_CHARS for char in plain):
        return _Kind.OPERATOR
    if plain and all(char == _FD for char in plain):
        return _Kind.FD
    return _Kind.WORD


def tokens(command: str) -> list[_Token]:
    """Split `command` as the shell would; raise ValueError when that cannot be done reliably."""
    texts = list(_lexer(command))
    plains = list(_lexer(_mask(command)))
    if len(texts) != len(plains):
        msg = "quoting and operators do not line up"
        raise ValueError(msg)
    return [_Token(text, _kind_of(plain), plain) for text, plain in zip(texts, plains, strict=True)]


def rough_tokens(command: str) -> list[_Token]:
    """A best-effort split of a command shlex cannot read, enough to look for hard-deny rules."""
    words = _ROUGH_TOKEN.findall(re.sub(r"[\"'\\]", "", command))
    return [
        _Token(word, _Kind.OPERATOR if word[0] in "();<>|&\n" else _Kind.WORD, word)
        for word in words
    ]


@dataclass
class Simple:
    """One simple command: its argv and its redirections."""

    argv: list[str] = field(default_factory=list)
    redirections: list[tuple[str, str]] = field(default_factory=list)
    options_ended: bool = False
    """Whether a `--` after the command name ended the options, making every later word a path."""

    @property
    def empty(self) -> bool:
        """Whether the command has no words and no redirections yet."""
        return not self.argv and not self.redirections


@dataclass
class Reading:
    """The simple commands, the paths in the order written, and the first problem found."""

    commands: list[Simple] = field(default_factory=lambda: [Simple()])
    separators: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    problem: str = ""

    def fail(self, problem: str) -> None:
        """Record `problem`, unless an earlier one is recorded already."""
        self.problem = self.problem or problem

    def add_word(self, token: _Token) -> None:
        """Append a word to the current simple command and note the paths it names."""
        simple = self.commands[-1]
        self.fail(_word_problem(token, first=not simple.argv))
        in_prelude = all(_ASSIGNMENT.match(word) for word in simple.argv)
        simple.argv.append(token.text)
        if not in_prelude and not simple.options_ended and token.text == "--":
            simple.options_ended = True
            return
        if not in_prelude and not simple.options_ended and _cluster_too_long(token.text):
            self.fail(f"an option cluster longer than {MAX_CLUSTER_LETTERS} letters is not read")
        globbed = GLOB.search(token.plain) is not None
        named = _paths_in_word(
            token.text, command_word=in_prelude, operand=simple.options_ended, globbed=globbed
        )
        if _quoted_tilde(token):
            named = [f"./{path}" if path == token.text else path for path in named]
        self.paths.extend(_resolvable(path) for path in named)

    def redirect(self, operator: str, target: _Token) -> None:
        """Add a redirection to the current simple command and note the file it names."""
        self.commands[-1].redirections.append((operator, target.text))
        if not _duplicates(operator, target.text):
            globbed = GLOB.search(target.plain) is not None
            path = _before_glob(target.text) if globbed else target.text
            self.paths.append(_resolvable(f"./{path}" if _quoted_tilde(target) else path))

    def separate(self, operator: str) -> None:
        """End the current simple command at `operator` and start the next one."""
        if operator not in _SEPARATORS:
            self.fail(_operator_problem(operator))
        if self.commands[-1].empty:
            self.fail(f"no command before {shown(operator)}")
        self.separators.append(operator)
        self.commands.append(Simple())

    def finish(self, pending: str) -> None:
        """End the reading; `pending` is a redirection operator still waiting for its target."""
        if pending:
            self.fail(f"{shown(pending)} has no target")
        if not self.commands[-1].empty:
            return
        self.commands.pop()
        if not self.separators:
            self.fail("the command is empty")
        elif self.separators[-1] not in _ENDINGS:
            self.fail(f"no command after {shown(self.separators[-1])}")


def read(tokens: Sequence[_Token]) -> Reading:
    """Group `tokens` into simple commands, noting the paths they name and the first problem."""
    reading = Reading()
    pending = ""
    for token in tokens:
        if pending and token.kind is _Kind.WORD:
            reading.fail(_word_problem(token, first=False))
            reading.redirect(pending, token)
            pending = ""
            continue
        if pending:
            reading.fail(f"{shown(pending)} has no target")
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
    tilde = _tilde_problem(plain)
    if tilde:
        return tilde
    if first and plain in _RESERVED_WORDS:
        return f"compound commands ({plain!r}) are not supported"
    if GLOB.search(plain):
        return "a glob pattern is expanded by the shell at run time"
    return ""


def _tilde_problem(plain: str) -> str:
    if plain.startswith(("~+", "~-")):
        return "'~+' and '~-' name the shell's directories at run time"
    if _OTHER_HOME.search(plain):
        return "'~user' names another user's home, which is not resolved here"
    return ""


def _operator_problem(operator: str) -> str:
    if "(" in operator or ")" in operator:
        return "subshells and process substitution are not supported"
    if operator.startswith("<<"):
        return "here-documents are not supported"
    return f"unknown operator {shown(operator)}"


def _duplicates(operator: str, target: str) -> bool:
    """Whether a redirection copies or closes a descriptor (`2>&1`, `>&-`) instead of a file."""
    return operator in _DUPLICATIONS and _DESCRIPTOR.fullmatch(target) is not None


def skip_prelude(argv: Sequence[str]) -> Sequence[str]:
    """`argv` without leading `NAME=value` assignments and reserved words such as `then`."""
    start = 0
    while start < len(argv) and (argv[start] in _RESERVED_WORDS or _ASSIGNMENT.match(argv[start])):
        start += 1
    return argv[start:]


def writes(operator: str, target: str) -> bool:
    """Whether a redirection writes to a file, rather than reading one or copying a descriptor."""
    return operator in _WRITING_REDIRECTIONS or (
        operator == ">&" and not _duplicates(operator, target)
    )


# Paths.


def _paths_in_word(word: str, *, command_word: bool, operand: bool, globbed: bool) -> list[str]:
    """The paths one argv word names, by the rules in the module docstring; "" stands for none.

    `command_word` is true for a leading assignment or the command name, `operand` for a word
    after `--`, and `globbed` when the word holds an unquoted glob character.
    """
    if command_word and _ASSIGNMENT.match(word):
        value = word.partition("=")[2]
        named = [_path_named_by(value, globbed=globbed)]
        return named + [_path_named_by(part, globbed=globbed) for part in _listed(value)]
    if command_word:
        return [_before_glob(word) if globbed else word] if "/" in word else []
    if word.startswith("-") and not operand:
        values = [word.partition("=")[2]] if word.startswith("--") else _cluster_values(word)
    else:
        after = word.partition("=")[2]
        values = [word, _path_named_by(after, globbed=False)]
    named = values + [part for value in values for part in _listed(value)]
    # A `~` inside a word (after `=`, `:` or an option letter) is expanded by some shells
    # and passed on literally by others: both readings are named.
    named += [f"./{path}" for path in named if path.startswith("~") and path != word]
    return [_before_glob(path) if globbed else path for path in named]


def _cluster_values(word: str) -> list[str]:
    """Every suffix of a short option cluster that may be a letter's value.

    `-bmX` gives `mX` and `X`, since a letter that takes a value takes the rest of the cluster.
    """
    end = 1 + min(_leading_letters(word), MAX_CLUSTER_LETTERS)
    return [word[start:] for start in range(2, end + 1) if word[start:]]


def _cluster_too_long(word: str) -> bool:
    if not word.startswith("-") or word.startswith("--"):
        return False
    return _leading_letters(word) > MAX_CLUSTER_LETTERS


def _leading_letters(word: str) -> int:
    """How many letters and digits follow the option word's leading `-`."""
    rest = word[1:]
    return len(rest) - len(rest.lstrip(_CLUSTER_LETTERS))


def _listed(value: str) -> list[str]:
    """The parts of a colon-separated list, for a value that holds a `:`; else none."""
    if ":" not in value:
        return []
    return [part for part in value.split(":") if part]


def _quoted_tilde(token: _Token) -> bool:
    """Whether the word starts with a `~` that is quoted or escaped, and so literal."""
    return token.text.startswith("~") and not token.plain.startswith("~")


def _resolvable(path: str) -> str:
    """`path`, or for a word with `$` or a backtick the directory before the first of them."""
    expansion = _EXPANSION.search(path)
    if expansion is None:
        return path
    return path[: path.rfind("/", 0, expansion.start()) + 1]


def _path_named_by(word: str, *, globbed: bool) -> str:
    """`word` if it looks like a path (holds `/` or starts with `.` or `~`), else ""."""
    if "/" in word or word.startswith((".", "~")):
        return _before_glob(word) if globbed else word
    return ""


def _before_glob(path: str) -> str:
    """`path` itself, or for a glob the directory part before the first glob character."""
    glob = GLOB.search(path)
    if glob is None:
        return path
    return path[: path.rfind("/", 0, glob.start()) + 1]
