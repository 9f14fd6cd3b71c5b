r"""Safe file names for admitted attachments, and a free name beside the taken ones; domain layer.

A client names its file; that name must never steer where the bytes land. Only the last path
component is kept (a client may send `C:\Users\me\report.pdf`), control and formatting
characters are dropped (a right-to-left override can disguise `exe.txt` as `txt.exe`),
leading and trailing dots and spaces go, and the result is at most 255 bytes of UTF-8 with
its extension kept. What is left can only name a file directly inside the inbox.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection

MAX_NAME_BYTES = 255
"""The longest file name most filesystems store."""
FALLBACK_NAME = "attachment"
_DROPPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_MAX_SUFFIX_CHARS = 16
"""A longer `.suffix` is not an extension worth keeping whole when a name is shortened."""


def safe_name(raw: str) -> str:
    """A name for `raw` that is one plain path component: no separators, no `..`, no controls.

    Never empty: a name with nothing usable left becomes `attachment`.
    """
    last = raw.replace("\\", "/").rsplit("/", 1)[-1]
    kept = "".join(
        " " if char.isspace() else char
        for char in unicodedata.normalize("NFC", last)
        if unicodedata.category(char) not in _DROPPED_CATEGORIES or char.isspace()
    )
    name = " ".join(kept.split()).strip(". ")
    return _fit(name) if name else FALLBACK_NAME


def split_extension(name: str) -> tuple[str, str]:
    """`("report", ".tar.gz")` for `report.tar.gz`: the stem, and every suffix after it.

    A leading dot belongs to the stem, and an implausibly long suffix is part of the stem too.
    """
    head, dot, rest = name[1:].partition(".")
    stem, extension = name[0] + head if name else "", dot + rest
    if len(extension) > _MAX_SUFFIX_CHARS or " " in extension:
        return name, ""
    return stem, extension


def extension_of(name: str) -> str:
    """The last suffix of `name`, lower case and without its dot; empty when it has none."""
    _stem, extension = split_extension(name)
    return extension.rsplit(".", 1)[-1].lower() if extension else ""


def unique_name(name: str, taken: Collection[str]) -> str:
    """`name`, or `name` with `-2`, `-3`, … before its extension, whichever is not taken.

    Names are compared without regard to case, as a case-insensitive filesystem would.
    """
    folded = {other.casefold() for other in taken}
    if name.casefold() not in folded:
        return name
    stem, extension = split_extension(name)
    number = 2
    while True:
        tag = f"-{number}{extension}"
        candidate = _truncate(stem, MAX_NAME_BYTES - len(tag.encode())) + tag
        if candidate.casefold() not in folded:
            return candidate
        number += 1


def _fit(name: str) -> str:
    if len(name.encode()) <= MAX_NAME_BYTES:
        return name
    stem, extension = split_extension(name)
    room = MAX_NAME_BYTES - len(extension.encode())
    return _truncate(stem, room).rstrip(". ") + extension


def _truncate(text: str, limit: int) -> str:
    """The longest prefix of `text` whose UTF-8 fits in `limit` bytes (whole characters)."""
    return text.encode()[: max(limit, 0)].decode("utf-8", "ignore")
