"""The lines that tell the model which files came with a user's message; domain layer.

Only admitted files are named; a refused one is never mentioned to the model. The lines are
part of the user's message as the transcript keeps it, so a replay reads them back exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.attachments.records import Received

HEADING = "Attached files (saved in the session's workspace inbox):"


def announced(text: str, received: Sequence[Received]) -> str:
    """The user's `text`, followed by one line per admitted file: path, type and size."""
    lines = [
        f"- {item.path} ({item.media_type}, {item.size} bytes)"
        for item in received
        if item.accepted and item.path is not None
    ]
    if not lines:
        return text
    return "\n".join((text, "", HEADING, *lines))
