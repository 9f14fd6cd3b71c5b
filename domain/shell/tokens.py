"""Shell tokens: a command line split as the shell splits it; domain layer.

shlex removes quotes, so a quoted ";" and the operator ";" come out alike, and it drops
whitespace, so `2>x` and `2 >x` do too. A second pass over a masked copy, in which every
quoted character is a placeholder, tells which tokens the shell sees as operators. A
descriptor number against a redirection is a single digit, as dash reads it: in `cat 12<x`
the `12` is a word.
"""

from __future__ import annotations

import re
import shlex
from enum import StrEnum
from typing import NamedTuple

_QUOTED = "\x01"
_FD = "\x02"
_OPERATOR_CHARS = frozenset("();<>|&")
_FD_NUMBER = re.compile(r"(?<![^ \t();<>|&])[0-9](?=[<>])")
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


class TokenKind(StrEnum):
    """What the shell sees in a token: a word, an operator, or a redirection's descriptor."""

    WORD = "word"
    OPERATOR = "operator"
    FD = "fd"
    """The descriptor number written against a redirection, as the 2 in `2>err`."""


class Token(NamedTuple):
    """One token of a command line, as read and as written."""

    text: str
    """The word after quote removal, or the operator."""
    kind: TokenKind
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


def _kind_of(plain: str) -> TokenKind:
    if plain and all(char in _OPERATOR_CHARS for char in plain):
        return TokenKind.OPERATOR
    if plain and all(char == _FD for char in plain):
        return TokenKind.FD
    return TokenKind.WORD


def tokens(command: str) -> list[Token]:
    """Split `command` as the shell would; raise ValueError when that cannot be done reliably."""
    texts = list(_lexer(command))
    plains = list(_lexer(_mask(command)))
    if len(texts) != len(plains):
        msg = "quoting and operators do not line up"
        raise ValueError(msg)
    return [Token(text, _kind_of(plain), plain) for text, plain in zip(texts, plains, strict=True)]


def rough_tokens(command: str) -> list[Token]:
    """A best-effort split of a command shlex cannot read, enough to look for hard-deny rules."""
    words = _ROUGH_TOKEN.findall(re.sub(r"[\"'\\]", "", command))
    return [
        Token(word, TokenKind.OPERATOR if word[0] in "();<>|&\n" else TokenKind.WORD, word)
        for word in words
    ]
