"""What a file's bytes are, judged from the bytes alone; domain layer.

A magic-number library (in the adapter) names binary formats by their signatures. This module
adds what such a library leaves out or gets wrong: executables of every kind (ELF, PE,
Mach-O, and a script's `#!` line), and text, which has no signature at all, told apart as
JSON or plain text. Every media type then falls in one kind, the word admission speaks in.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum

from domain.base import Value


class ContentKind(StrEnum):
    """The family of a media type, as the admission rules name it."""

    TEXT = "text"
    DOCUMENT = "document"
    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
    FONT = "font"
    ARCHIVE = "archive"
    EXECUTABLE = "executable"
    UNRECOGNISED = "unrecognised"


class Sniffed(Value):
    """The media type a file's content shows, and its kind."""

    media_type: str
    kind: ContentKind


OCTET_STREAM = "application/octet-stream"
PLAIN_TEXT = "text/plain"
JSON_TYPE = "application/json"
SCRIPT = "text/x-script"
"""Text that starts with `#!`: the kernel runs it with the interpreter it names."""
ELF = "application/x-executable"
PE = "application/x-msdownload"
MACH_O = "application/x-mach-binary"

_BOM = b"\xef\xbb\xbf"
_MACH_O_MAGICS = frozenset(
    {
        b"\xfe\xed\xfa\xce",
        b"\xfe\xed\xfa\xcf",
        b"\xce\xfa\xed\xfe",
        b"\xcf\xfa\xed\xfe",
        b"\xca\xfe\xba\xbe",  # a universal binary (and a Java class file: bytecode too)
        b"\xbe\xba\xfe\xca",
    }
)
_PE_POINTER = 0x3C
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
"""Control characters no text file holds (tab, newlines, form feed and escape are fine)."""

ARCHIVE_TYPES = frozenset(
    {
        "application/zip",
        "application/x-tar",
        "application/gzip",
        "application/x-bzip2",
        "application/x-7z-compressed",
        "application/x-rar-compressed",
        "application/x-xz",
        "application/zstd",
        "application/x-lzip",
        "application/x-lz4",
        "application/x-lzop",
        "application/x-compress",
        "application/x-brotli",
        "application/vnd.ms-cab-compressed",
        "application/x-deb",
        "application/x-rpm",
        "application/x-unix-archive",
        "application/x-google-chrome-extension",
        "application/java-archive",
        "application/vnd.android.package-archive",
    }
)
"""Containers of other files, compressed or not: refused unless configured."""
EXECUTABLE_TYPES = frozenset(
    {
        ELF,
        PE,
        MACH_O,
        SCRIPT,
        "application/wasm",
        "application/x-shockwave-flash",
        "application/x-nintendo-nes-rom",
        "application/vnd.android.dex",
        "application/x-sh",
        "application/x-msi",
        "application/x-sharedlib",
    }
)
"""Programs: machine code, bytecode and scripts that say how to run them."""
DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/postscript",
        "application/rtf",
        "application/epub+zip",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.oasis.opendocument.text",
        "application/vnd.oasis.opendocument.spreadsheet",
        "application/vnd.oasis.opendocument.presentation",
        "application/x-sqlite3",
        "application/dicom",
    }
)
FONT_TYPES = frozenset(
    {"application/font-woff", "application/font-sfnt", "application/vnd.ms-fontobject"}
)
TEXT_FORMATS = frozenset({"application/pdf", "application/postscript", "application/rtf"})
"""Formats whose signature is itself text: the signature wins over reading them as text."""
TEXTUAL_TYPES = frozenset(
    {
        JSON_TYPE,
        "application/xml",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-ndjson",
        "application/javascript",
        "application/sql",
        "application/x-sh",
        "application/x-tex",
        "application/x-ipynb+json",
    }
)
"""Media types outside `text/` whose files are text."""


_KINDS_BY_SET = (
    (EXECUTABLE_TYPES, ContentKind.EXECUTABLE),
    (ARCHIVE_TYPES, ContentKind.ARCHIVE),
    (DOCUMENT_TYPES, ContentKind.DOCUMENT),
    (FONT_TYPES, ContentKind.FONT),
)
_KINDS_BY_PREFIX = (
    ("font/", ContentKind.FONT),
    ("image/", ContentKind.IMAGE),
    ("audio/", ContentKind.AUDIO),
    ("video/", ContentKind.VIDEO),
)


def is_textual(media_type: str) -> bool:
    """Whether files of `media_type` are text (plain, markup, data or code)."""
    return (
        media_type.startswith("text/")
        or media_type in TEXTUAL_TYPES
        or media_type.endswith(("+json", "+xml"))
    )


def kind_of(media_type: str) -> ContentKind:
    """The kind a media type belongs to; an unknown one is unrecognised."""
    for types, kind in _KINDS_BY_SET:
        if media_type in types:
            return kind
    for prefix, kind in _KINDS_BY_PREFIX:
        if media_type.startswith(prefix):
            return kind
    return ContentKind.TEXT if is_textual(media_type) else ContentKind.UNRECOGNISED


def executable_type(data: bytes) -> str | None:
    """The executable format `data` starts with: ELF, PE, Mach-O or a `#!` script; else None."""
    if data.startswith(b"\x7fELF"):
        return ELF
    if data[:4] in _MACH_O_MAGICS:
        return MACH_O
    if data.startswith(b"MZ") and _has_pe_header(data):
        return PE
    if data.removeprefix(_BOM).startswith(b"#!"):
        return SCRIPT
    return None


def _has_pe_header(data: bytes) -> bool:
    """Whether the DOS header's pointer leads to the PE signature (`PE` and two NULs)."""
    pointer = int.from_bytes(data[_PE_POINTER : _PE_POINTER + 4], "little")
    return len(data) >= _PE_POINTER + 4 and data[pointer : pointer + 4] == b"PE\x00\x00"


def text_type(data: bytes) -> str | None:
    """`application/json` or `text/plain` when `data` is UTF-8 text; None when it is not.

    Text is valid UTF-8 (a byte order mark allowed) with no control characters but tab,
    the line breaks, form feed and escape. JSON is text that parses as an object or array.
    """
    try:
        text = data.removeprefix(_BOM).decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _CONTROL.search(text):
        return None
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            json.loads(stripped)
        except ValueError:
            return PLAIN_TEXT
        return JSON_TYPE
    return PLAIN_TEXT


def classify(data: bytes, signature_type: str | None) -> Sniffed:
    """What `data` is, given the type its signature names (None when none matched).

    In order: an executable format; a signature whose format is text itself (PDF,
    PostScript, RTF); text; any other signature; else unrecognised. Text comes before other
    signatures because a few of them (`MZ`, `ID3`) can open an ordinary text file.
    """
    executable = executable_type(data)
    if executable is not None:
        return Sniffed(media_type=executable, kind=ContentKind.EXECUTABLE)
    signature = None if signature_type in {None, OCTET_STREAM} else signature_type
    if signature is not None and signature in TEXT_FORMATS:
        return Sniffed(media_type=signature, kind=ContentKind.DOCUMENT)
    text = text_type(data)
    if text is not None:
        return Sniffed(media_type=text, kind=ContentKind.TEXT)
    if signature is not None:
        return Sniffed(media_type=signature, kind=kind_of(signature))
    return Sniffed(media_type=OCTET_STREAM, kind=ContentKind.UNRECOGNISED)
