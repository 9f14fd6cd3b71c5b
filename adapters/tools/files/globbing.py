"""Glob patterns over relative POSIX paths, and how found names are printed; adapter layer.

`*` matches any run of characters within one path segment (dot files included), `?` one
character, `[abc]` / `[!abc]` one character of a set, and a whole `**` segment zero or more
segments: `**/*.py` matches `a.py` and `src/pkg/a.py`. Matching is case-sensitive.
A name printed for the model shows undecodable bytes and control characters as escapes, so
one line of output is always one entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable

GlobMatcher = Callable[[str], bool]
"""Whether a relative POSIX path matches a compiled pattern."""


def printable(name: str) -> str:
    """`name` (which may carry undecodable bytes) as valid one-line text."""
    text = name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def glob_problem(pattern: str) -> str:
    """Why `pattern` cannot be used as a relative search pattern; empty when it can."""
    if not pattern:
        return "the pattern is empty"
    if pattern.startswith(("/", "~")):
        return f"the pattern {pattern!r} must be relative to the searched directory"
    if ".." in pattern.split("/"):
        return f"the pattern {pattern!r} may not contain '..' segments"
    try:
        re.compile(translate(pattern))
    except re.error as error:
        return f"the pattern {pattern!r} is not a valid glob: {error}"
    return ""


def compile_glob(pattern: str) -> GlobMatcher:
    """A matcher for `pattern` over whole relative paths."""
    regex = re.compile(translate(pattern))
    return lambda path: regex.match(path) is not None


def translate(pattern: str) -> str:
    """The regular expression that matches exactly the paths `pattern` matches."""
    segments = pattern.split("/")
    parts: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:.*/)?")
        else:
            parts.append(_segment(segment) + ("" if last else "/"))
    return "(?s:" + "".join(parts) + r")\Z"


def _segment(segment: str) -> str:
    """One path segment's wildcards as a regular expression that never crosses a `/`."""
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        index += 1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = _class_end(segment, index)
            if end < 0:
                out.append(re.escape(char))
                continue
            body = segment[index:end]
            index = end + 1
            negate = body.startswith("!")
            body = "".join(c if c == "-" else re.escape(c) for c in body.removeprefix("!"))
            out.append(f"[^/{body}]" if negate else f"[{body}]")
        else:
            out.append(re.escape(char))
    return "".join(out)


def _class_end(segment: str, start: int) -> int:
    """Where the `]` closing a set that opens before `start` is; -1 when it is unclosed."""
    index = start
    if index < len(segment) and segment[index] == "!":
        index += 1
    if index < len(segment) and segment[index] == "]":
        index += 1
    return segment.find("]", index)
