"""Where `ln` puts a link, so its target is named as the kernel will resolve it; domain layer.

A relative symbolic link target is resolved from the directory that holds the link, not from
the working directory of the command that made it: `ln -s ../x ../12` run in `sub` makes a link
`12` beside `sub` that leads to `../x` from there, two levels above `sub`. So for each target
of an `ln`, the target is also named as seen from each directory the link may land in:

- with `-t DIR` (`--target-directory`), from `DIR`;
- otherwise, with two operands or more, from the last operand (when it is a directory the links
  go inside it) and from that operand's own directory (when it is the link's name), since which
  of the two it is shows only when the command runs.

One operand makes a link in the working directory, where the target is already named. Absolute
targets need nothing more, and words with `$` or a backtick are left to the best-effort reading
of an unparsed command; hard links (no `-s`) get the same names, which only adds checks.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence

from domain.shell.argv import basename

_VALUED_LETTERS = frozenset("tS")
"""Short options of GNU ln that take a value: `-t DIR` and `-S SUFFIX`."""
_EXPANDS = frozenset("$`")
"""Characters that make a word mean something only at run time; such names are left out."""


def link_targets(argv: Sequence[str]) -> list[str]:
    """For an `ln` argv, each relative target as named from each place the link may be."""
    if not argv or basename(argv[0]) != "ln":
        return []
    directories, operands = _read(iter(argv[1:]))
    if directories:
        places = directories[:1]
        targets = operands
    elif len(operands) > 1:
        places = [operands[-1], posixpath.dirname(operands[-1])]
        targets = operands[:-1]
    else:
        return []
    return [
        posixpath.join(place, target)
        for place in places
        for target in targets
        if place and not target.startswith(("/", "~")) and not _EXPANDS.intersection(place + target)
    ]


def _read(words: Iterator[str]) -> tuple[list[str], list[str]]:
    """The `-t` directories and the operands, options read as GNU getopt reads them."""
    directories: list[str] = []
    operands: list[str] = []
    ended = False
    for word in words:
        if ended or word == "-" or not word.startswith("-"):
            operands.append(word)
        elif word == "--":
            ended = True
        elif word.startswith("--"):
            name, equals, value = word.partition("=")
            if "--target-directory".startswith(name):
                directories.append(value if equals else next(words, ""))
            elif "--suffix".startswith(name) and not "--symbolic".startswith(name) and not equals:
                next(words, "")
        else:
            for position, letter in enumerate(word[1:], start=2):
                if letter in _VALUED_LETTERS:
                    value = word[position:] or next(words, "")
                    if letter == "t":
                        directories.append(value)
                    break
    return directories, operands
