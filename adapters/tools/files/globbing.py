"""Glob patterns over relative POSIX paths, and how found names are printed; adapter layer.

`*` matches any run of characters within one path segment (dot files included), `?` one
character, `[abc]` / `[!abc]` one character of a set, and a whole `**` segment zero or more
segments: `**/*.py` matches `a.py` and `src/pkg/a.py`. Matching is case-sensitive.
A name printed for the model shows undecodable bytes and control characters as escapes, so
one line of output is always one entry.
"""

from __future__ import annotations

from collections.abc import Callable

GlobMatcher = Callable[[str], bool]
"""Whether a relative POSIX path matches a compiled pattern."""
MAX_GLOB_CHARS = 1024
"""A glob is at most this long: matching one name costs up to its length times the name's."""


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
    if len(pattern) > MAX_GLOB_CHARS:
        return f"the pattern is too long ({len(pattern)} characters; at most {MAX_GLOB_CHARS})"
    if pattern.startswith(("/", "~")):
        return f"the pattern {pattern!r} must be relative to the searched directory"
    if ".." in pattern.split("/"):
        return f"the pattern {pattern!r} may not contain '..' segments"
    for segment in pattern.split("/"):
        index = 0
        while (start := segment.find("[", index)) >= 0:
            end = _class_end(segment, start + 1)
            if end < 0:
                break
            body = segment[start + 1 : end].removeprefix("!")
            if any(member[0] > member[-1] for member in _ranges(body)):
                return f"the pattern {pattern!r} has a set with a reversed range"
            index = end + 1
    return ""


def _ranges(body: str) -> list[str]:
    """The members of a set's body: single characters and `a-z` ranges."""
    members: list[str] = []
    index = 0
    while index < len(body):
        if index + 2 < len(body) and body[index + 1] == "-":
            members.append(body[index : index + 3])
            index += 3
        else:
            members.append(body[index])
            index += 1
    return members


def compile_glob(pattern: str) -> GlobMatcher:
    """A matcher for `pattern` over whole relative paths.

    Matching takes time polynomial in the pattern and the path, never exponential: each
    segment is matched by the classic wildcard walk (one remembered `*`), and a path is read
    segment by segment, keeping the set of pattern segments it can have reached. A regular
    expression with many `*` could backtrack for hours on a long name, in a thread that
    cannot be stopped; nothing here recurses, so no path is too deep to match.
    """
    segments: list[_Segment | None] = []
    for segment in pattern.split("/"):
        if segment == "**":
            if segments and segments[-1] is None:
                continue  # `**/**` means the same as `**`
            segments.append(None)
        else:
            segments.append(_tokens(segment))
    return lambda path: _match_path(segments, path.split("/"))


_Token = Callable[[str], bool] | None
"""A character test, or None for a `*`."""
_Segment = list[_Token]


def _match_path(pattern: list[_Segment | None], parts: list[str]) -> bool:
    """Whether `parts` match `pattern`, read part by part without recursion.

    `reached` holds every pattern position the parts read so far can lead to; a `**` may
    be passed over (zero parts) except as the last segment, which needs at least one part.
    """
    reached = _passing_over(pattern, {0})
    for part in parts:
        reached = _passing_over(pattern, _after_part(pattern, reached, part))
        if not reached:
            return False
    return len(pattern) in reached


def _after_part(pattern: list[_Segment | None], reached: set[int], part: str) -> set[int]:
    """The positions reached from `reached` by matching one more path segment."""
    last = len(pattern) - 1
    following: set[int] = set()
    for at in reached:
        if at > last:
            continue
        segment = pattern[at]
        if segment is None:
            following.add(at)  # `**` takes this part and may take more
            if at == last:
                following.add(at + 1)
        elif _match_segment(segment, part):
            following.add(at + 1)
    return following


def _passing_over(pattern: list[_Segment | None], positions: set[int]) -> set[int]:
    """`positions` and every position a non-final `**` among them may skip to."""
    found, pending = set(positions), list(positions)
    while pending:
        at = pending.pop()
        if at < len(pattern) - 1 and pattern[at] is None and at + 1 not in found:
            found.add(at + 1)
            pending.append(at + 1)
    return found


def _match_segment(tokens: _Segment, text: str) -> bool:
    """Whether one path segment matches one pattern segment, in at most O(len * tokens)."""
    token = position = 0
    star, resume = -1, 0
    while position < len(text):
        if token < len(tokens) and tokens[token] is None:
            star, resume = token, position
            token += 1
            continue
        test = tokens[token] if token < len(tokens) else None
        if test is not None and test(text[position]):
            token += 1
            position += 1
        elif star >= 0:
            token, resume = star + 1, resume + 1
            position = resume
        else:
            return False
    return all(rest is None for rest in tokens[token:])


def _tokens(segment: str) -> _Segment:
    """One pattern segment as `*` markers and character tests."""
    tokens: _Segment = []
    index = 0
    while index < len(segment):
        char = segment[index]
        index += 1
        if char == "*":
            if not tokens or tokens[-1] is not None:
                tokens.append(None)
        elif char == "?":
            tokens.append(_any_character)
        elif char == "[" and (end := _class_end(segment, index)) >= 0:
            body = segment[index:end]
            index = end + 1
            tokens.append(_character_set(body))
        else:
            tokens.append(char.__eq__)
    return tokens


def _any_character(char: str) -> bool:
    return char != "/"


def _character_set(body: str) -> Callable[[str], bool]:
    """A test for `[body]`: characters and ranges, negated by a leading `!`."""
    negate = body.startswith("!")
    ranges = [(member[0], member[-1]) for member in _ranges(body.removeprefix("!"))]

    def test(char: str) -> bool:
        inside = any(low <= char <= high for low, high in ranges)
        return char != "/" and inside != negate

    return test


def _class_end(segment: str, start: int) -> int:
    """Where the `]` closing a set that opens before `start` is; -1 when it is unclosed."""
    index = start
    if index < len(segment) and segment[index] == "!":
        index += 1
    if index < len(segment) and segment[index] == "]":
        index += 1
    return segment.find("]", index)
