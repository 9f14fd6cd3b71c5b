"""Reading one argv: command names, GNU-style options and operands; domain layer.

These helpers judge words as the commands themselves would read them, erring towards a match
wherever the reading is ambiguous: every caller uses a match to refuse or to ask, never to allow.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from domain.shell.words import GLOB


def basename(word: str) -> str:
    """The last component of a command name: `/usr/bin/sudo` is `sudo`."""
    return word.rpartition("/")[2]


def invokes(argv: Sequence[str], words: Sequence[str]) -> bool:
    """Whether `argv` starts with `words`, its command compared by basename as a pattern.

    The first word of `words` is a shell-style pattern (`mkfs.*`); a command name that is itself
    a glob (`/usr/bin/sud?`) matches when it could expand to that word.
    """
    if not words or len(argv) < len(words):
        return False
    name = basename(argv[0])
    named = fnmatchcase(name, words[0]) or bool(GLOB.search(name) and fnmatchcase(words[0], name))
    return named and list(argv[1 : len(words)]) == list(words[1:])


def options_and_operands(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
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


def spells(argument: str, option: str) -> bool:
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
