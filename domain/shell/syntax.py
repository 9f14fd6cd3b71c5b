"""Shell syntax: read a command line into simple commands and the paths they name; domain layer.

Reading is deliberately narrow. A command is unparsed when the shell settles its meaning only
when it runs: expansions and substitutions (`$`, backticks), unquoted glob characters (`*`, `?`,
`[`) in any word or redirection target, braces, here-documents, subshells, compound commands,
comments, `~+` and `~-`. Quoted or escaped characters are literal and never a problem.

Which paths each word names is told in `domain.shell.words`, and how a command line splits
into tokens in `domain.shell.tokens`. An unquoted `~user` is a problem, since this reading does
not resolve other users' homes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from domain.shell.tokens import Token, TokenKind
from domain.shell.words import (
    ASSIGNMENT,
    GLOB,
    MAX_CLUSTER_LETTERS,
    before_glob,
    cluster_too_long,
    paths_in_word,
    quoted_tilde,
    resolvable,
)

_SEPARATORS = frozenset({";", "&", "&&", "|", "||", "|&"})
_ENDINGS = frozenset({";", "&"})
_REDIRECTIONS = frozenset({"<", ">", ">>", ">|", "<>", "&>", "&>>", ">&", "<&"})
_WRITING_REDIRECTIONS = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
_DUPLICATIONS = frozenset({">&", "<&"})
_RESERVED_WORDS = frozenset(
    {"!", "{", "}", "[[", "case", "coproc", "do", "done", "elif", "else", "esac", "fi"}
    | {"for", "function", "if", "select", "then", "until", "while"}
)

_DESCRIPTOR = re.compile(r"[0-9]+-?|-")
_OTHER_HOME = re.compile(r"(?:^|[=:])~[^/]")
_SHOWN_CHARS = 24


def shown(text: str) -> str:
    """`text` quoted for a problem message, shortened so the message stays short."""
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "...")


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

    def add_word(self, token: Token) -> None:
        """Append a word to the current simple command and note the paths it names."""
        simple = self.commands[-1]
        self.fail(_word_problem(token, first=not simple.argv))
        in_prelude = all(ASSIGNMENT.match(word) for word in simple.argv)
        simple.argv.append(token.text)
        if not in_prelude and not simple.options_ended and token.text == "--":
            simple.options_ended = True
            return
        if not in_prelude and not simple.options_ended and cluster_too_long(token.text):
            self.fail(f"an option cluster longer than {MAX_CLUSTER_LETTERS} letters is not read")
        globbed = GLOB.search(token.plain) is not None
        named = paths_in_word(
            token.text, command_word=in_prelude, operand=simple.options_ended, globbed=globbed
        )
        if quoted_tilde(token):
            named = [f"./{path}" if path == token.text else path for path in named]
        self.paths.extend(resolvable(path) for path in named)

    def redirect(self, operator: str, target: Token) -> None:
        """Add a redirection to the current simple command and note the file it names."""
        self.commands[-1].redirections.append((operator, target.text))
        if not _duplicates(operator, target.text):
            globbed = GLOB.search(target.plain) is not None
            path = before_glob(target.text) if globbed else target.text
            self.paths.append(resolvable(f"./{path}" if quoted_tilde(target) else path))

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


def read(tokens: Sequence[Token]) -> Reading:
    """Group `tokens` into simple commands, noting the paths they name and the first problem."""
    reading = Reading()
    pending = ""
    for token in tokens:
        if pending and token.kind is TokenKind.WORD:
            reading.fail(_word_problem(token, first=False))
            reading.redirect(pending, token)
            pending = ""
            continue
        if pending:
            reading.fail(f"{shown(pending)} has no target")
            pending = ""
        if token.kind is TokenKind.WORD:
            reading.add_word(token)
        elif token.kind is TokenKind.OPERATOR and token.text in _REDIRECTIONS:
            pending = token.text
        elif token.kind is TokenKind.OPERATOR:
            reading.separate(token.text)
    reading.finish(pending)
    return reading


def _word_problem(token: Token, *, first: bool) -> str:
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
    while start < len(argv) and (argv[start] in _RESERVED_WORDS or ASSIGNMENT.match(argv[start])):
        start += 1
    return argv[start:]


def writes(operator: str, target: str) -> bool:
    """Whether a redirection writes to a file, rather than reading one or copying a descriptor."""
    return operator in _WRITING_REDIRECTIONS or (
        operator == ">&" and not _duplicates(operator, target)
    )
