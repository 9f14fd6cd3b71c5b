"""Admitting files sent with a message: sniffing rules, safe names, caps and type rules."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.attachments.admission import (
    AttachmentLimits,
    AttachmentReason,
    Offered,
    judge,
)
from domain.attachments.announce import HEADING, announced
from domain.attachments.content import (
    ELF,
    JSON_TYPE,
    MACH_O,
    OCTET_STREAM,
    PE,
    PLAIN_TEXT,
    SCRIPT,
    ContentKind,
    Sniffed,
    classify,
    kind_of,
)
from domain.attachments.media import admitted_type, agrees, matches, normalise
from domain.attachments.names import (
    FALLBACK_NAME,
    MAX_NAME_BYTES,
    safe_name,
    split_extension,
    unique_name,
)
from domain.attachments.records import Received
from domain.ids import AttachmentId

PNG = Sniffed(media_type="image/png", kind=ContentKind.IMAGE)
TEXT = Sniffed(media_type=PLAIN_TEXT, kind=ContentKind.TEXT)
ZIP = Sniffed(media_type="application/zip", kind=ContentKind.ARCHIVE)
ELF_FILE = Sniffed(media_type=ELF, kind=ContentKind.EXECUTABLE)
BLOB = Sniffed(media_type=OCTET_STREAM, kind=ContentKind.UNRECOGNISED)


def pe_image() -> bytes:
    """A DOS header whose pointer at 0x3c leads to a PE signature at 0x80."""
    header = bytearray(b"MZ" + b"\x00" * 0x7E)
    header[0x3C:0x40] = (0x80).to_bytes(4, "little")
    return bytes(header) + b"PE\x00\x00" + b"\x00" * 16


# -- sniffing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "signature", "expected"),
    [
        (b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56, "application/x-executable", ELF),
        (pe_image(), "application/x-msdownload", PE),
        (b"\xcf\xfa\xed\xfe\x07\x00\x00\x01" + b"\x00" * 24, None, MACH_O),
        (b"#!/bin/sh\nrm -rf /\n", None, SCRIPT),
        (b"\xef\xbb\xbf#!/usr/bin/env python3\n", None, SCRIPT),
    ],
    ids=["elf", "pe", "mach-o", "shebang", "shebang-after-bom"],
)
def test_executables_are_recognised_whatever_the_signature_says(
    data: bytes, signature: str | None, expected: str
) -> None:
    """ELF, PE, Mach-O and `#!` scripts are executables, text or not."""
    assert Sniffed(media_type=expected, kind=ContentKind.EXECUTABLE) == classify(data, signature)


def test_text_that_happens_to_start_with_mz_is_text() -> None:
    """`MZ` without a PE header opening valid text is text, not a DOS program."""
    assert TEXT == classify(b"MZ is the prefix of this note\n", "application/x-msdownload")


def test_a_dos_program_without_a_pe_header_is_still_an_executable() -> None:
    """Binary `MZ` content the signature library names stays an executable."""
    sniffed = classify(b"MZ\x90\x00\x03\x00\x00\x00\x04\x00", "application/x-msdownload")
    assert ContentKind.EXECUTABLE == sniffed.kind


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"hello\r\n\tworld\x0c\x1b[0m", PLAIN_TEXT),
        (b'  {"a": [1, 2]}', JSON_TYPE),
        (b"[1, 2", PLAIN_TEXT),
        (b"\xef\xbb\xbfplain with a byte order mark", PLAIN_TEXT),
        ("naïve café ✓".encode(), PLAIN_TEXT),
        (b"", PLAIN_TEXT),
    ],
)
def test_text_is_told_apart_as_json_or_plain(data: bytes, expected: str) -> None:
    """UTF-8 without stray controls is text; an object or array that parses is JSON."""
    assert Sniffed(media_type=expected, kind=ContentKind.TEXT) == classify(data, None)


@pytest.mark.parametrize("data", [b"abc\x00def", b"\xff\xfe\x00h", b"bell\x07", bytes(range(256))])
def test_bytes_that_are_not_text_and_have_no_signature_are_unrecognised(data: bytes) -> None:
    """A NUL, invalid UTF-8 or a stray control character: not text."""
    assert BLOB == classify(data, None)


def test_a_signature_whose_format_is_text_wins_over_reading_it_as_text() -> None:
    """An all-ASCII PDF is a PDF, not plain text."""
    sniffed = classify(b"%PDF-1.4\n1 0 obj\n", "application/pdf")
    assert Sniffed(media_type="application/pdf", kind=ContentKind.DOCUMENT) == sniffed


@pytest.mark.parametrize(
    ("media_type", "kind"),
    [
        ("application/zip", ContentKind.ARCHIVE),
        ("application/x-7z-compressed", ContentKind.ARCHIVE),
        ("application/gzip", ContentKind.ARCHIVE),
        ("application/x-rar-compressed", ContentKind.ARCHIVE),
        ("application/x-tar", ContentKind.ARCHIVE),
        ("application/wasm", ContentKind.EXECUTABLE),
        ("image/webp", ContentKind.IMAGE),
        ("application/pdf", ContentKind.DOCUMENT),
        ("application/font-woff", ContentKind.FONT),
        ("text/csv", ContentKind.TEXT),
        ("application/ld+json", ContentKind.TEXT),
        ("application/x-unheard-of", ContentKind.UNRECOGNISED),
    ],
)
def test_every_media_type_falls_in_one_kind(media_type: str, kind: ContentKind) -> None:
    """Archives, programs, images, documents, fonts and text types each have their kind."""
    assert kind == kind_of(media_type)


# -- types ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("claimed", "actual", "expected"),
    [
        ("image/jpg", "image/jpeg", True),
        ("IMAGE/PNG; q=1", "image/png", True),
        ("application/octet-stream", "image/png", True),
        ("text/markdown", PLAIN_TEXT, True),
        ("text/csv", JSON_TYPE, True),
        (JSON_TYPE, PLAIN_TEXT, False),
        ("image/png", PLAIN_TEXT, False),
        ("text/plain", "image/png", False),
        ("application/java-archive", "application/zip", True),
    ],
)
def test_a_claim_agrees_with_the_content_when_it_names_the_same_thing(
    claimed: str, actual: str, *, expected: bool
) -> None:
    """Aliases, the generic type and text-for-text agree; JSON must really be JSON."""
    assert expected is agrees(claimed, actual)


def test_a_text_file_keeps_the_type_its_sender_knows() -> None:
    """Content says only `text`; the client's `text/csv` is kept, parameters dropped."""
    assert "text/csv" == admitted_type("text/csv; charset=utf-8", PLAIN_TEXT)
    assert "image/png" == admitted_type("application/octet-stream", "image/png")
    assert PLAIN_TEXT == admitted_type("application/octet-stream", PLAIN_TEXT)
    assert "image/jpeg" == normalise("image/pjpeg")


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("image/*", True),
        ("*/*", True),
        ("image/png", True),
        ("image/gif", False),
        ("text/*", False),
    ],
)
def test_patterns_match_a_type_or_a_family(pattern: str, *, expected: bool) -> None:
    """`image/*` matches every image, `*/*` everything, an exact type only itself."""
    assert expected is matches("image/png", pattern)


# -- names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("report.pdf", "report.pdf"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\notes.txt", "notes.txt"),
        ("..", FALLBACK_NAME),
        ("/", FALLBACK_NAME),
        ("  .hidden.  ", "hidden"),
        ("line\nbreak\x00.txt", "line break.txt"),
        ("photo\u202egnp.exe", "photognp.exe"),
        ("tab\tand  spaces.md", "tab and spaces.md"),
    ],
)
def test_a_name_is_made_one_plain_path_component(raw: str, expected: str) -> None:
    """Separators, dot-dot, control and formatting characters never survive."""
    assert expected == safe_name(raw)


def test_a_long_name_is_cut_to_255_bytes_keeping_its_extension() -> None:
    """The stem is shortened on a character boundary; `.tar.gz` stays whole."""
    name = safe_name("é" * 300 + ".tar.gz")
    assert (True, True) == (len(name.encode()) <= MAX_NAME_BYTES, name.endswith("é.tar.gz"))


def test_a_taken_name_gets_a_number_before_its_extension() -> None:
    """`a.tar.gz` becomes `a-2.tar.gz`, then `a-3.tar.gz`; case does not make a name free."""
    assert "a-2.tar.gz" == unique_name("a.tar.gz", {"a.tar.gz"})
    assert "a-3.tar.gz" == unique_name("a.tar.gz", {"A.TAR.GZ", "a-2.tar.gz"})
    assert "fresh.txt" == unique_name("fresh.txt", {"other.txt"})
    assert (".env", "") == split_extension(".env")


UNSAFE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


@given(st.text(max_size=400))
def test_any_name_becomes_a_safe_component(raw: str) -> None:
    """Whatever a client sends, the name is one short component with nothing unsafe in it."""
    name = safe_name(raw)

    assert name not in {"", ".", ".."}
    assert not {"/", "\\"} & set(name)
    assert not any(unicodedata.category(char) in UNSAFE for char in name)
    assert len(name.encode()) <= MAX_NAME_BYTES
    assert name == safe_name(name)


@given(st.text(max_size=60), st.sets(st.text(max_size=20), max_size=8))
def test_a_unique_name_is_never_taken_and_stays_safe(raw: str, taken: set[str]) -> None:
    """The chosen name differs from every taken one, ignoring case, and is still safe."""
    taken_safe = {safe_name(t) for t in taken}
    name = unique_name(safe_name(raw), taken_safe)

    assert name.casefold() not in {t.casefold() for t in taken_safe}
    assert name == safe_name(name)


# -- the decision --------------------------------------------------------------------------


def offered(
    name: str = "a.png", claimed: str = "image/png", size: int = 10, sniffed: Sniffed = PNG
) -> Offered:
    """One file as the checks see it."""
    return Offered(name=name, claimed_type=claimed, size=size, sniffed=sniffed)


def reasons(files: list[Offered], limits: AttachmentLimits | None = None) -> list[str]:
    """The reason of each file's verdict."""
    return [str(v.reason) for v in judge(files, limits or AttachmentLimits())]


def test_files_past_the_count_cap_are_refused_too_many() -> None:
    """The third of three files under a cap of two is refused, the first two admitted."""
    limits = AttachmentLimits(max_count=2)
    assert ["accepted", "accepted", "too_many"] == reasons([offered()] * 3, limits)


def test_a_file_over_the_size_cap_is_refused_too_large() -> None:
    """The per-file cap is checked before what the content is."""
    limits = AttachmentLimits(max_file_bytes=100, max_total_bytes=100)
    assert ["too_large"] == reasons([offered(size=101, sniffed=ELF_FILE)], limits)


def test_the_message_cap_counts_only_the_files_admitted_before() -> None:
    """A refused executable takes no room; the file that would overflow is refused."""
    limits = AttachmentLimits(max_file_bytes=60, max_total_bytes=100)
    files = [offered(size=60, sniffed=ELF_FILE), offered(size=60), offered(size=60)]
    verdicts = judge(files, limits)
    assert ["executable", "accepted", "message_too_large"] == [str(v.reason) for v in verdicts]
    assert "bring the message to 120" in verdicts[2].detail


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        (offered("run", "application/octet-stream", sniffed=ELF_FILE), "executable"),
        (offered("a.zip", "application/zip", sniffed=ZIP), "archive"),
        (offered("blob", "application/octet-stream", sniffed=BLOB), "unrecognised_content"),
        (offered("a.txt", "image/png"), "type_mismatch"),
        (offered("a.png", "text/plain"), "type_mismatch"),
        (offered("data.json", "text/plain", sniffed=TEXT), "type_mismatch"),
        (offered("notes.md", "text/markdown", sniffed=TEXT), "accepted"),
    ],
)
def test_what_the_content_is_decides_over_what_it_is_called(file: Offered, reason: str) -> None:
    """Executables, archives and unknown bytes are refused; claims must fit the content."""
    assert [reason] == reasons([file])


def test_a_mismatch_says_which_claim_disagreed() -> None:
    """The detail names the extension, or the client's type, and the content's type."""
    [by_name] = judge([offered("shot.txt", "application/octet-stream")], AttachmentLimits())
    [by_claim] = judge([offered("shot", "text/plain")], AttachmentLimits())
    assert "named .txt (text/plain), but the content is image/png" in by_name.detail
    assert "sent as text/plain, but the content is image/png" in by_claim.detail


def test_archives_and_executables_are_admitted_when_configured() -> None:
    """With `allow_archives` and `allow_executables`, the zip and the program pass."""
    limits = AttachmentLimits(allow_archives=True, allow_executables=True)
    files = [
        offered("a.zip", "application/zip", sniffed=ZIP),
        offered("tool", "application/octet-stream", sniffed=ELF_FILE),
    ]
    assert ["accepted", "accepted"] == reasons(files, limits)


def test_refused_types_win_over_allowed_types() -> None:
    """A refused pattern refuses; a type outside the allowed list is refused too."""
    limits = AttachmentLimits(allowed_types=("image/*",), refused_types=("image/gif",))
    gif = offered(
        "a.gif", "image/gif", sniffed=Sniffed(media_type="image/gif", kind=ContentKind.IMAGE)
    )
    text = offered("a.txt", "text/plain", sniffed=TEXT)
    assert ["refused_type", "type_not_allowed", "accepted"] == reasons(
        [gif, text, offered()], limits
    )


def test_an_admitted_file_has_the_type_it_is_announced_as() -> None:
    """The verdict carries the admitted type; a refusal carries none."""
    accepted, refused = judge([offered(), offered("a.txt")], AttachmentLimits())
    assert ("image/png", None) == (accepted.media_type, refused.media_type)
    assert AttachmentReason.TYPE_MISMATCH is refused.reason


def received(*, accepted: bool, path: str | None) -> Received:
    """A decision as the journal keeps it."""
    return Received(
        attachment_id=AttachmentId.new(),
        name="x.png",
        claimed_type="image/png",
        sniffed_type="image/png",
        size=3,
        sha256="0" * 64,
        accepted=accepted,
        reason=AttachmentReason.ACCEPTED if accepted else AttachmentReason.ARCHIVE,
        media_type="image/png" if accepted else None,
        path=path,
    )


def test_only_admitted_files_are_announced_to_the_model() -> None:
    """One line per admitted file after the text; a refused one is never mentioned."""
    text = announced(
        "look",
        [received(accepted=True, path="/w/inbox/x.png"), received(accepted=False, path=None)],
    )
    assert f"look\n\n{HEADING}\n- /w/inbox/x.png (image/png, 3 bytes)" == text
    assert "look" == announced("look", [received(accepted=False, path=None)])


def test_limits_refuse_a_cap_above_the_ceiling() -> None:
    """No cap can promise more than one gateway frame carries."""
    with pytest.raises(ValueError, match="less than or equal"):
        AttachmentLimits(max_total_bytes=9 << 20)
    assert 8 == json.loads(AttachmentLimits().model_dump_json())["max_count"]


KINDS = st.sampled_from([PNG, TEXT, ZIP, ELF_FILE, BLOB])


@given(
    st.lists(st.tuples(st.integers(0, 2_000), KINDS), max_size=12),
    st.integers(1, 6),
    st.integers(1, 1_500),
    st.integers(0, 1_500),
)
def test_the_caps_always_hold_for_the_files_admitted(
    files: list[tuple[int, Sniffed]], max_count: int, max_file: int, extra: int
) -> None:
    """However files come, the admitted ones respect the count, the size and the total."""
    limits = AttachmentLimits(
        max_count=max_count, max_file_bytes=max_file, max_total_bytes=max_file + extra
    )
    items = [offered("f", "application/octet-stream", size, sniffed) for size, sniffed in files]

    verdicts = judge(items, limits)
    admitted = [item for item, verdict in zip(items, verdicts, strict=True) if verdict.accepted]

    assert len(items) == len(verdicts)
    assert len(admitted) <= max_count
    assert all(item.size <= max_file for item in admitted)
    assert sum(item.size for item in admitted) <= limits.max_total_bytes
    assert all(item.sniffed.kind in {ContentKind.IMAGE, ContentKind.TEXT} for item in admitted)
