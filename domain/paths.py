"""Canonical path value type; domain layer.

A canonical path is absolute and normalized: no dot segments, no empty segments, no trailing
slash. Canonical form says nothing about whether access is allowed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from domain.text import check_text

MAX_PATH_LENGTH = 4096


def check_canonical(value: str) -> str:
    """Return `value` if it is a canonical absolute POSIX path, else raise ValueError."""
    if not value.startswith("/"):
        msg = f"path is not absolute: {value!r}"
        raise ValueError(msg)
    check_text(value)
    if "\x00" in value or len(value) > MAX_PATH_LENGTH:
        msg = "path contains NUL or is too long"
        raise ValueError(msg)
    if value != "/":
        segments = value[1:].split("/")
        if any(segment in ("", ".", "..") for segment in segments):
            msg = f"path is not canonical: {value!r}"
            raise ValueError(msg)
    return value


CanonicalPath = Annotated[str, AfterValidator(check_canonical)]
