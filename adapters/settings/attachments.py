"""The `[attachments]` section of config.toml: caps and type rules for files; adapter layer.

Files a client sends with a message are admitted under these caps and rules (see
docs/attachments.md); `max_attach_bytes` caps a file the agent attaches to its reply. No cap
may exceed `MAX_ATTACHMENT_BYTES`, which a gateway frame carries whole once base64 encoded.
"""

from __future__ import annotations

import re
from typing import Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from domain.attachments.admission import MAX_ATTACHMENT_BYTES, MIB, AttachmentLimits
from domain.attachments.media import MEDIA_TYPE

_PATTERN_HINT = "a media type or pattern such as image/png, image/* or */*"


_WILDCARD = re.compile(r"^(\*|[a-z0-9][a-z0-9!#$&^_.+-]{0,63})/\*$")
"""`image/*` or `*/*`."""


def _pattern(value: str) -> str:
    lowered = value.strip().lower()
    if MEDIA_TYPE.fullmatch(lowered) or _WILDCARD.fullmatch(lowered):
        return lowered
    msg = f"expected {_PATTERN_HINT}, got {value!r}"
    raise ValueError(msg)


class AttachmentSettings(BaseModel):
    """Caps and type rules for attachments, each checked when the file is read."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_count: int = Field(default=8, ge=1, le=64)
    """Files one message may carry; the rest are refused `too_many`."""
    max_file_bytes: int = Field(default=4 * MIB, ge=1, le=MAX_ATTACHMENT_BYTES)
    max_total_bytes: int = Field(default=MAX_ATTACHMENT_BYTES, ge=1, le=MAX_ATTACHMENT_BYTES)
    """Bytes of files one message may carry, counting the files admitted."""
    allowed_types: tuple[str, ...] | None = None
    """When set, only types fitting one of these patterns are admitted."""
    refused_types: tuple[str, ...] = ()
    allow_archives: bool = False
    allow_executables: bool = False
    allow_unrecognised: bool = False
    max_attach_bytes: int = Field(default=MAX_ATTACHMENT_BYTES, ge=1, le=MAX_ATTACHMENT_BYTES)
    """The largest file `attach_file` attaches to a reply."""

    @field_validator("allowed_types", "refused_types")
    @classmethod
    def _patterns(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else tuple(_pattern(item) for item in value)

    @model_validator(mode="after")
    def _file_fits_the_message(self) -> Self:
        if self.max_file_bytes > self.max_total_bytes:
            msg = (
                f"max_file_bytes ({self.max_file_bytes}) is larger than max_total_bytes"
                f" ({self.max_total_bytes}); a file that size could never be admitted"
            )
            raise ValueError(msg)
        return self

    def limits(self) -> AttachmentLimits:
        """The admission rules these settings describe."""
        return AttachmentLimits(
            max_count=self.max_count,
            max_file_bytes=self.max_file_bytes,
            max_total_bytes=self.max_total_bytes,
            allowed_types=self.allowed_types,
            refused_types=self.refused_types,
            allow_archives=self.allow_archives,
            allow_executables=self.allow_executables,
            allow_unrecognised=self.allow_unrecognised,
        )
