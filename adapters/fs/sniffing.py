"""What a file's bytes are: filetype's signatures, then the domain's own rules; adapter layer.

`filetype` names binary formats by their magic numbers in the first 8 KiB. Its answer is
handed to `domain.attachments.content.classify`, which adds executables, text and JSON (no
signature names them) and settles where the two disagree.
"""

from __future__ import annotations

import filetype  # type: ignore[import-untyped]  # filetype ships no type information

from domain.attachments.content import OCTET_STREAM, Sniffed, classify

SIGNATURE_BYTES = 8192
"""How much of a file filetype looks at."""
_BY_EXTENSION = {"eot": "application/vnd.ms-fontobject"}
"""Formats filetype recognises but calls `application/octet-stream`."""


def signature_type(head: bytes) -> str | None:
    """The media type the signature at the start of `head` names, if filetype knows one."""
    found = filetype.guess(head[:SIGNATURE_BYTES]) if head else None
    if found is None:
        return None
    mime: str = found.mime
    if mime == OCTET_STREAM:
        return _BY_EXTENSION.get(str(found.extension))
    return mime


def sniff(data: bytes) -> Sniffed:
    """What the whole content `data` is."""
    return classify(data, signature_type(data))
