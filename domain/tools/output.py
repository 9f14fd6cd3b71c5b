"""Exact-value redaction and the inline bound of tool output; domain layer."""

from __future__ import annotations

from collections.abc import Iterable

from domain.base import Value
from domain.paths import check_canonical

REDACTED = "[redacted]"
INLINE_LIMIT = 16_000
"""Characters of a result the model receives inline; the rest is spilled."""
WINDOW_LIMIT = 16_000
"""The most characters one tool_output_read window returns."""


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every exact occurrence of each secret, longest first so none leaks partly."""
    if not secrets:
        return text
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    return text


def redact_path(path: str, secrets: Iterable[str]) -> str | None:
    """`path` redacted for a record that only reports it; None if that breaks its canonical form.

    Only for copies nothing acts on (audit targets, shell candidates): a path that decides
    anything (a project directory, a grant's directory) is kept exact.
    """
    redacted = redact(path, secrets)
    if redacted == path:
        return path
    try:
        return check_canonical(redacted)
    except ValueError:
        return None


MIN_SECRET_PREFIX = 4
"""A text cut through a secret hides the secret's start from this many characters on."""


def redact_cut(text: str, limit: int, secrets: Iterable[str]) -> tuple[str, bool]:
    """Redact `text`, then keep at most `limit` characters; whether anything was cut.

    Redacting before the cut keeps a secret whole; if the cut still ends inside the start of
    a secret (a secret split by a byte bound before this text was decoded), that start is
    redacted too.
    """
    found = sorted({s for s in secrets if s}, key=len, reverse=True)
    text = redact(text, found)
    cut = len(text) > limit
    text = text[:limit]
    for secret in found:
        for size in range(len(secret) - 1, MIN_SECRET_PREFIX - 1, -1):
            if text.endswith(secret[:size]):
                return text[:-size] + REDACTED, cut
    return text, cut


class BoundedOutput(Value):
    """The inline part of a result and whether the whole text has to be spilled."""

    inline: str
    total_chars: int
    spilled: bool


def bound(text: str, limit: int = INLINE_LIMIT) -> BoundedOutput:
    """Keep at most `limit` characters inline; longer text is marked for spilling."""
    if len(text) <= limit:
        return BoundedOutput(inline=text, total_chars=len(text), spilled=False)
    return BoundedOutput(inline=text[:limit], total_chars=len(text), spilled=True)


def spill_notice(call_id: str, shown: int, total: int) -> str:
    """The line that follows a spilled preview; it names the call, never a file."""
    return (
        f"[output truncated: showed {shown} of {total} characters; "
        f"the rest is kept for call_id {call_id!r}]"
    )


def window(text: str, start: int, limit: int) -> tuple[str, int | None]:
    """One window of a spilled text and the offset of the next, None at the end."""
    limit = max(1, min(limit, WINDOW_LIMIT))
    chunk = text[start : start + limit]
    end = start + len(chunk)
    return chunk, (end if end < len(text) else None)
