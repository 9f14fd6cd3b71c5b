"""Whether each file sent with a message is admitted, and why not; domain layer.

The checks run in a fixed order and the first that fails names the reason: the count cap,
the per-file cap, what the content is (an executable, an archive, unrecognised bytes), whether
the client's claimed type and the name's extension agree with the content, the refused and
allowed types, and last the cap on a message's total, which counts only files admitted
before. The decision reads nothing but its arguments: the adapter sniffs, this decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import Field

from domain.attachments.content import ContentKind, Sniffed
from domain.attachments.media import EXTENSION_TYPES, admitted_type, agrees, matches
from domain.attachments.names import extension_of, safe_name
from domain.base import Value

MIB = 1 << 20
MAX_ATTACHMENT_BYTES = 8 * MIB
"""The ceiling of every attachment cap: what one gateway frame carries with room to spare."""


class AttachmentReason(StrEnum):
    """Why a file was admitted or refused; each refusal names the check that failed."""

    ACCEPTED = "accepted"
    TOO_MANY = "too_many"
    TOO_LARGE = "too_large"
    MESSAGE_TOO_LARGE = "message_too_large"
    EXECUTABLE = "executable"
    ARCHIVE = "archive"
    UNRECOGNISED_CONTENT = "unrecognised_content"
    TYPE_MISMATCH = "type_mismatch"
    REFUSED_TYPE = "refused_type"
    TYPE_NOT_ALLOWED = "type_not_allowed"


class AttachmentLimits(Value):
    """The configured caps and type rules for files sent with a message."""

    max_count: int = Field(default=8, ge=1, le=64)
    max_file_bytes: int = Field(default=4 * MIB, ge=1, le=MAX_ATTACHMENT_BYTES)
    max_total_bytes: int = Field(default=MAX_ATTACHMENT_BYTES, ge=1, le=MAX_ATTACHMENT_BYTES)
    allowed_types: tuple[str, ...] | None = None
    """Patterns (`image/*`, `application/pdf`) a file's type must fit; None allows any."""
    refused_types: tuple[str, ...] = ()
    """Patterns a file's type must not fit; checked before `allowed_types`."""
    allow_archives: bool = False
    allow_executables: bool = False
    allow_unrecognised: bool = False
    """Whether content no signature names and that is not text may be admitted."""


class Offered(Value):
    """What the checks know of one file: its claims, its size and what its content is."""

    name: str
    claimed_type: str
    size: int = Field(ge=0)
    sniffed: Sniffed


class Verdict(Value):
    """The decision about one file; an admitted file has the type it is admitted as."""

    reason: AttachmentReason
    detail: str = ""
    media_type: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether the file is admitted."""
        return self.reason is AttachmentReason.ACCEPTED


def judge(offered: Sequence[Offered], limits: AttachmentLimits) -> tuple[Verdict, ...]:
    """The verdict on each file of one message, in the order they were sent."""
    verdicts: list[Verdict] = []
    total = 0
    for position, item in enumerate(offered):
        verdict = _judge_one(item, position, limits)
        if verdict.accepted and total + item.size > limits.max_total_bytes:
            verdict = Verdict(
                reason=AttachmentReason.MESSAGE_TOO_LARGE,
                detail=(
                    f"{item.size} bytes would bring the message to {total + item.size}; "
                    f"a message carries at most {limits.max_total_bytes} bytes of files"
                ),
            )
        if verdict.accepted:
            total += item.size
        verdicts.append(verdict)
    return tuple(verdicts)


def _refuse(reason: AttachmentReason, detail: str) -> Verdict:
    return Verdict(reason=reason, detail=detail)


def _judge_one(item: Offered, position: int, limits: AttachmentLimits) -> Verdict:  # noqa: PLR0911 - one return per check, in order
    if position >= limits.max_count:
        detail = f"a message carries at most {limits.max_count} files"
        return _refuse(AttachmentReason.TOO_MANY, detail)
    if item.size > limits.max_file_bytes:
        detail = f"{item.size} bytes; a file may have at most {limits.max_file_bytes}"
        return _refuse(AttachmentReason.TOO_LARGE, detail)
    actual, kind = item.sniffed.media_type, item.sniffed.kind
    if kind is ContentKind.EXECUTABLE and not limits.allow_executables:
        return _refuse(AttachmentReason.EXECUTABLE, f"the content is a program ({actual})")
    if kind is ContentKind.ARCHIVE and not limits.allow_archives:
        return _refuse(AttachmentReason.ARCHIVE, f"the content is an archive ({actual})")
    if kind is ContentKind.UNRECOGNISED and not limits.allow_unrecognised:
        detail = "the content is neither text nor a format with a known signature"
        return _refuse(AttachmentReason.UNRECOGNISED_CONTENT, detail)
    mismatch = _mismatch(item)
    if mismatch:
        return _refuse(AttachmentReason.TYPE_MISMATCH, mismatch)
    media_type = admitted_type(item.claimed_type, actual)
    refused = [p for p in limits.refused_types if matches(media_type, p)]
    if refused:
        return _refuse(AttachmentReason.REFUSED_TYPE, f"{media_type} is refused ({refused[0]})")
    allowed = limits.allowed_types
    if allowed is not None and not any(matches(media_type, p) for p in allowed):
        return _refuse(AttachmentReason.TYPE_NOT_ALLOWED, f"{media_type} is not an allowed type")
    return Verdict(reason=AttachmentReason.ACCEPTED, media_type=media_type)


def _mismatch(item: Offered) -> str:
    """How the claimed type or the name's extension disagrees with the content; else empty."""
    actual = item.sniffed.media_type
    if not agrees(item.claimed_type, actual):
        return f"it was sent as {item.claimed_type}, but the content is {actual}"
    extension = extension_of(safe_name(item.name))
    named = EXTENSION_TYPES.get(extension)
    if named is not None and not agrees(named, actual):
        return f"it is named .{extension} ({named}), but the content is {actual}"
    return ""
