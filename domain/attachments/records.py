"""What the journal keeps of a file received with a message or attached to a reply; domain layer.

Both are values a Session event carries whole (`AttachmentReceived`, `AttachmentSent`), so
the aggregate's command and the event it triggers share one list of fields.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from domain.attachments.admission import AttachmentReason
from domain.base import Value
from domain.ids import AttachmentId
from domain.paths import CanonicalPath
from domain.text import Detail, check_text

MAX_CLAIMED_NAME = 255
"""The longest name a client may give a file, in characters."""

AttachmentName = Annotated[
    str, Field(min_length=1, max_length=MAX_CLAIMED_NAME), AfterValidator(check_text)
]
MediaTypeText = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(check_text)]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class Received(Value):
    """The admission decision about one file sent with a message."""

    attachment_id: AttachmentId
    name: AttachmentName
    """The name the client gave, as given."""
    claimed_type: MediaTypeText
    sniffed_type: MediaTypeText
    """What the content is, whatever the client said."""
    size: int = Field(ge=0)
    sha256: Sha256
    accepted: bool
    reason: AttachmentReason
    detail: Detail = ""
    media_type: MediaTypeText | None = None
    """The type an accepted file is announced as."""
    path: CanonicalPath | None = None
    """Where an accepted file is, in the session's workspace inbox."""


class Sent(Value):
    """A file the agent attached to its reply, copied where a client can fetch it."""

    attachment_id: AttachmentId
    name: AttachmentName
    """The name the recipient sees."""
    media_type: MediaTypeText
    size: int = Field(ge=0)
    sha256: Sha256
    source: CanonicalPath
    """The file that was attached, at its real location when it was copied."""
