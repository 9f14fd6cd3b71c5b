"""Regular expressions from a call's arguments, refused before they can exhaust the process.

Adapter layer. The `regex` module compiles a pattern recursively and writes out every fixed
repeat: 500 nested groups overflow Python's stack, and `a{1000000000}` asks for gigabytes in
a thread that cannot be stopped. A pattern is therefore read once, without compiling it, for
how deeply its groups nest and how many items it stands for once fixed repeats are written
out; only a pattern within both bounds is compiled, and whatever compiling still refuses
(a syntax error, a set nested too deeply) is a `PatternError` too.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

MAX_PATTERN_CHARS = 100_000
"""A pattern is at most this long."""
MAX_GROUP_DEPTH = 100
"""Groups nest at most this deeply; compiling needs a few stack frames per level."""
MAX_PATTERN_ITEMS = 100_000
"""What a pattern stands for with every repeat's minimum written out: `(?:ab){3}` is 6."""
_MAX_COUNT_DIGITS = 10
"""A repeat count with more digits is over every bound (and Python would refuse to read it)."""
_BRACED_ESCAPES = frozenset("pPNxuUgk")
"""Escapes that may be followed by `{...}` or `<...>`, which is part of them, not a repeat."""


class PatternError(ValueError):
    """A pattern that cannot be used; the message says why, for the model to correct it."""


def compile_regex(pattern: str, flags: int = 0) -> regex.Pattern[str]:
    """`pattern` compiled, or a PatternError saying why it cannot be."""
    if len(pattern) > MAX_PATTERN_CHARS:
        msg = f"too long ({len(pattern)} characters; at most {MAX_PATTERN_CHARS})"
        raise PatternError(msg)
    _check_shape(pattern)
    if "#" in pattern:  # in verbose mode `#` starts a comment: read the pattern without them too
        _check_shape("\n".join(line.split("#", 1)[0] for line in pattern.split("\n")))
    try:
        return regex.compile(pattern, flags)
    except regex.error as error:
        msg = f"not a valid regular expression: {error}"
        raise PatternError(msg) from None
    except RecursionError:
        msg = "too deeply nested to compile (sets or groups within each other)"
        raise PatternError(msg) from None
    except (MemoryError, OverflowError, ValueError):
        msg = "too large to compile"
        raise PatternError(msg) from None


@dataclass
class _Level:
    """One group being read: the items it holds so far and the size of its last item."""

    items: int = 0
    last: int = 0


def _check_shape(pattern: str) -> None:
    """Raise PatternError when groups nest too deeply or repeats make the pattern too large."""
    levels = [_Level()]
    index = 0
    while index < len(pattern):
        char = pattern[index]
        level = levels[-1]
        if char == "\\":
            index = _after_escape(pattern, index)
            _add(levels, 1)
            continue
        if char == "[":
            index = _after_set(pattern, index + 1)
            _add(levels, 1)
            continue
        if char == "(" and pattern.startswith("(?#", index):
            end = pattern.find(")", index)
            index = len(pattern) if end < 0 else end + 1
            continue
        if char == "(":
            levels.append(_Level())
            if len(levels) - 1 > MAX_GROUP_DEPTH:
                msg = f"too deeply nested (groups nest more than {MAX_GROUP_DEPTH} levels deep)"
                raise PatternError(msg)
        elif char == ")" and len(levels) > 1:
            inner = levels.pop()
            _add(levels, inner.items)
        elif char == "{" and (repeat := _repeat(pattern, index)) is not None:
            minimum, index = repeat
            factor = max(minimum, 1)
            level.items += level.last * (factor - 1)
            level.last *= factor
            _check_size(level.items)
            continue
        elif char not in "|*+?":
            _add(levels, 1)
        index += 1


def _add(levels: list[_Level], items: int) -> None:
    level = levels[-1]
    level.items += items
    level.last = items
    _check_size(level.items)


def _check_size(items: int) -> None:
    if items > MAX_PATTERN_ITEMS:
        msg = (
            f"too large (more than {MAX_PATTERN_ITEMS} items once its repeats are written "
            "out): use a smaller repeat count, or `+` or `*`"
        )
        raise PatternError(msg)


def _after_escape(pattern: str, index: int) -> int:
    r"""Where the escape at `index` ends, including a braced part such as `\p{L}`."""
    index += 2
    if index - 1 < len(pattern) and pattern[index - 1] in _BRACED_ESCAPES and index < len(pattern):
        closing = {"{": "}", "<": ">"}.get(pattern[index])
        if closing is not None:
            end = pattern.find(closing, index)
            return len(pattern) if end < 0 else end + 1
    return index


def _after_set(pattern: str, index: int) -> int:
    """Where the set opened just before `index` ends (its first unescaped `]` after the start)."""
    if index < len(pattern) and pattern[index] == "^":
        index += 1
    if index < len(pattern) and pattern[index] == "]":
        index += 1
    while index < len(pattern):
        if pattern[index] == "\\":
            index += 2
        elif pattern[index] == "]":
            return index + 1
        else:
            index += 1
    return index


def _repeat(pattern: str, index: int) -> tuple[int, int] | None:
    """The minimum of the `{m}`, `{m,}`, `{m,n}` or `{,n}` at `index`, and where it ends."""
    end = pattern.find("}", index)
    if end < 0:
        return None
    body = pattern[index + 1 : end]
    low, _, high = body.partition(",")
    if not (low or high) or not all(
        part.isascii() and part.isdigit() for part in (low, high) if part
    ):
        return None
    if len(low) > _MAX_COUNT_DIGITS:
        return MAX_PATTERN_ITEMS + 1, end + 1
    return int(low or "0"), end + 1
