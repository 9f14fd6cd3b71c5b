"""Shell words: the paths one word of a command names, as written; domain layer.

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

A word quoted at its `~` names a relative path (`./~x`), since the shell expands only an
unquoted `~`.

In a word with an unquoted glob (only in an unparsed command) the path is the directory before
the first glob character, if any, so a best-effort check still sees where the glob looks. In a
word with `$` or a backtick (only in an unparsed command) the path is the directory before the
first of them, so what the expansion names is never taken as a path inside the directory it
seems to be in (`$PWD/..` names nothing, `/etc/$X` names `/etc/`).
"""

from __future__ import annotations

import re
import string

from domain.shell.tokens import Token

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
"""The start of a `NAME=value` assignment."""
GLOB = re.compile(r"[*?\[]")
"""A glob character: `*`, `?` or `[`."""
MAX_CLUSTER_LETTERS = 64
"""Leading letters of a short option cluster whose suffixes are named; more is a problem."""
_CLUSTER_LETTERS = string.ascii_letters + string.digits
_EXPANSION = re.compile(r"[$`]")


def paths_in_word(word: str, *, command_word: bool, operand: bool, globbed: bool) -> list[str]:
    """The paths one argv word names, by the rules in the module docstring; "" stands for none.

    `command_word` is true for a leading assignment or the command name, `operand` for a word
    after `--`, and `globbed` when the word holds an unquoted glob character.
    """
    if command_word and ASSIGNMENT.match(word):
        value = word.partition("=")[2]
        named = [_path_named_by(value, globbed=globbed)]
        return named + [_path_named_by(part, globbed=globbed) for part in _listed(value)]
    if command_word:
        return [before_glob(word) if globbed else word] if "/" in word else []
    if word.startswith("-") and not operand:
        values = [word.partition("=")[2]] if word.startswith("--") else _cluster_values(word)
    else:
        after = word.partition("=")[2]
        values = [word, _path_named_by(after, globbed=False)]
    named = values + [part for value in values for part in _listed(value)]
    # A `~` inside a word (after `=`, `:` or an option letter) is expanded by some shells
    # and passed on literally by others: both readings are named.
    named += [f"./{path}" for path in named if path.startswith("~") and path != word]
    return [before_glob(path) if globbed else path for path in named]


def _cluster_values(word: str) -> list[str]:
    """Every suffix of a short option cluster that may be a letter's value.

    `-bmX` gives `mX` and `X`, since a letter that takes a value takes the rest of the cluster.
    """
    end = 1 + min(_leading_letters(word), MAX_CLUSTER_LETTERS)
    return [word[start:] for start in range(2, end + 1) if word[start:]]


def cluster_too_long(word: str) -> bool:
    """Whether a short option cluster has more leading letters than are read."""
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


def quoted_tilde(token: Token) -> bool:
    """Whether the word starts with a `~` that is quoted or escaped, and so literal."""
    return token.text.startswith("~") and not token.plain.startswith("~")


def resolvable(path: str) -> str:
    """`path`, or for a word with `$` or a backtick the directory before the first of them."""
    expansion = _EXPANSION.search(path)
    if expansion is None:
        return path
    return path[: path.rfind("/", 0, expansion.start()) + 1]


def _path_named_by(word: str, *, globbed: bool) -> str:
    """`word` if it looks like a path (holds `/` or starts with `.` or `~`), else ""."""
    if "/" in word or word.startswith((".", "~")):
        return before_glob(word) if globbed else word
    return ""


def before_glob(path: str) -> str:
    """`path` itself, or for a glob the directory part before the first glob character."""
    glob = GLOB.search(path)
    if glob is None:
        return path
    return path[: path.rfind("/", 0, glob.start()) + 1]
