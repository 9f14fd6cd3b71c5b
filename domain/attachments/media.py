"""Media types: their usual spellings, what a file name's extension claims, and agreement.

Domain layer. A client's claimed type and a name's extension are both claims; the content's
type is the fact. A claim agrees with the fact when it names the same type (after the usual
aliases: `image/jpg` is `image/jpeg`), when it is the generic `application/octet-stream`, or
when both are text (a `.md` file is text whatever the client calls it), except that a claim
of JSON needs content that parses as JSON. The extension table is fixed here rather than read
from the system, so a decision is the same on every machine.
"""

from __future__ import annotations

import re

from domain.attachments.content import JSON_TYPE, OCTET_STREAM, is_textual

MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}$")
"""A media type without parameters, lower case: `type/subtype`."""

_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/apng": "image/png",
    "image/vnd.microsoft.icon": "image/x-icon",
    "audio/mp3": "audio/mpeg",
    "audio/x-mp3": "audio/mpeg",
    "audio/wav": "audio/x-wav",
    "audio/wave": "audio/x-wav",
    "audio/vnd.wave": "audio/x-wav",
    "audio/flac": "audio/x-flac",
    "audio/x-m4a": "audio/mp4",
    "audio/m4a": "audio/mp4",
    "audio/aiff": "audio/x-aiff",
    "video/mkv": "video/x-matroska",
    "video/avi": "video/x-msvideo",
    "video/x-ms-asf": "video/x-ms-wmv",
    "font/woff": "application/font-woff",
    "font/woff2": "application/font-woff",
    "font/ttf": "application/font-sfnt",
    "font/otf": "application/font-sfnt",
    "font/sfnt": "application/font-sfnt",
    "application/x-font-ttf": "application/font-sfnt",
    "application/x-zip-compressed": "application/zip",
    "application/x-zip": "application/zip",
    "application/x-gzip": "application/gzip",
    "application/vnd.rar": "application/x-rar-compressed",
    "application/x-rar": "application/x-rar-compressed",
    "application/x-bzip": "application/x-bzip2",
    "application/x-zstd": "application/zstd",
    "application/x-msdos-program": "application/x-msdownload",
    "application/x-dosexec": "application/x-msdownload",
    "application/vnd.microsoft.portable-executable": "application/x-msdownload",
    "application/x-elf": "application/x-executable",
    "application/x-pie-executable": "application/x-executable",
    "application/x-mach-o-executable": "application/x-mach-binary",
    "application/x-sqlite": "application/x-sqlite3",
    "application/vnd.sqlite3": "application/x-sqlite3",
    "text/x-markdown": "text/markdown",
}

EXTENSION_TYPES = {
    # text: any text claim agrees with any text content, so these only need to be text
    "txt": "text/plain",
    "text": "text/plain",
    "log": "text/plain",
    "md": "text/markdown",
    "markdown": "text/markdown",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "json": JSON_TYPE,
    "xml": "application/xml",
    "yaml": "application/yaml",
    "yml": "application/yaml",
    "toml": "application/toml",
    "html": "text/html",
    "htm": "text/html",
    "css": "text/css",
    "svg": "image/svg+xml",
    "py": "text/x-python",
    "js": "text/javascript",
    "ts": "text/x-typescript",
    "sh": "application/x-sh",
    "sql": "application/sql",
    "ini": "text/plain",
    "cfg": "text/plain",
    "conf": "text/plain",
    "rst": "text/x-rst",
    "tex": "application/x-tex",
    # images, sound, video, fonts
    "png": "image/png",
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "gif": "image/gif",
    "webp": "image/webp",
    "bmp": "image/bmp",
    "tif": "image/tiff",
    "tiff": "image/tiff",
    "ico": "image/x-icon",
    "heic": "image/heic",
    "avif": "image/avif",
    "psd": "image/vnd.adobe.photoshop",
    "mp3": "audio/mpeg",
    "wav": "audio/x-wav",
    "ogg": "audio/ogg",
    "flac": "audio/x-flac",
    "m4a": "audio/mp4",
    "aac": "audio/aac",
    "mid": "audio/midi",
    "midi": "audio/midi",
    "mp4": "video/mp4",
    "m4v": "video/x-m4v",
    "mov": "video/quicktime",
    "mkv": "video/x-matroska",
    "webm": "video/webm",
    "avi": "video/x-msvideo",
    "wmv": "video/x-ms-wmv",
    "flv": "video/x-flv",
    "mpg": "video/mpeg",
    "mpeg": "video/mpeg",
    "woff": "application/font-woff",
    "woff2": "application/font-woff",
    "ttf": "application/font-sfnt",
    "otf": "application/font-sfnt",
    # documents
    "pdf": "application/pdf",
    "ps": "application/postscript",
    "eps": "application/postscript",
    "rtf": "application/rtf",
    "epub": "application/epub+zip",
    "doc": "application/msword",
    "xls": "application/vnd.ms-excel",
    "ppt": "application/vnd.ms-powerpoint",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "sqlite": "application/x-sqlite3",
    "db": "application/x-sqlite3",
    # archives
    "zip": "application/zip",
    "tar": "application/x-tar",
    "gz": "application/gzip",
    "tgz": "application/gzip",
    "bz2": "application/x-bzip2",
    "xz": "application/x-xz",
    "7z": "application/x-7z-compressed",
    "rar": "application/x-rar-compressed",
    "zst": "application/zstd",
    "lz": "application/x-lzip",
    "lz4": "application/x-lz4",
    "cab": "application/vnd.ms-cab-compressed",
    "deb": "application/x-deb",
    "rpm": "application/x-rpm",
    "jar": "application/java-archive",
    "apk": "application/vnd.android.package-archive",
    # programs
    "exe": "application/x-msdownload",
    "dll": "application/x-msdownload",
    "com": "application/x-msdownload",
    "scr": "application/x-msdownload",
    "msi": "application/x-msi",
    "so": "application/x-sharedlib",
    "dylib": "application/x-mach-binary",
    "elf": "application/x-executable",
    "wasm": "application/wasm",
}
"""The type a file name's last extension claims; an extension not listed claims nothing."""

_ZIP_BASED = frozenset(
    {
        "application/java-archive",
        "application/vnd.android.package-archive",
        "application/epub+zip",
    }
)
"""Formats stored as a zip file, which a signature may only see as a zip."""


def normalise(media_type: str) -> str:
    """`media_type` in lower case, without parameters (`; charset=…`), by its usual name."""
    bare = media_type.split(";", 1)[0].strip().lower()
    return _ALIASES.get(bare, bare)


def agrees(claimed: str, actual: str) -> bool:
    """Whether a claimed type (a client's, or a name's extension's) fits the content's type."""
    claim, fact = normalise(claimed), normalise(actual)
    if claim in {fact, OCTET_STREAM}:
        return True
    if claim == JSON_TYPE:
        return False  # a claim of JSON is only believed of content that parses as JSON
    if is_textual(claim) and is_textual(fact):
        return True
    return claim in _ZIP_BASED and fact == "application/zip"


def admitted_type(claimed: str, actual: str) -> str:
    """The type a file is admitted as: the client's text type when both are text, else the fact.

    Content shows only that a file is text; the client knows it is CSV or Markdown.
    """
    claim = normalise(claimed)
    if claim != OCTET_STREAM and is_textual(claim) and is_textual(normalise(actual)):
        return claim
    return normalise(actual)


def matches(media_type: str, pattern: str) -> bool:
    """Whether `media_type` fits `pattern`: `image/png`, `image/*` or `*/*`."""
    kind, _, sub = normalise(media_type).partition("/")
    want_kind, _, want_sub = pattern.partition("/")
    return want_kind in {"*", kind} and want_sub in {"*", sub}
