"""Spilled tool output: the full redacted text kept in the session's envelope; adapter layer."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from domain.ids import CallId, SpillId
from domain.tools.output import window

log = logging.getLogger(__name__)


def spill_path(spills: Path, spill_id: SpillId) -> Path:
    """Where one spill is stored; never shown to a model."""
    return spills / f"{spill_id}.txt"


def write_spill(spills: Path, spill_id: SpillId, text: str) -> None:
    """Store a spill atomically: a reader sees the whole text or no file."""
    spills.mkdir(mode=0o700, parents=True, exist_ok=True)
    final = spill_path(spills, spill_id)
    partial = final.with_suffix(".partial")
    with partial.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    partial.replace(final)


def read_spill(
    spills: Path, spill_id: SpillId, start: int, limit: int
) -> tuple[str, int | None, int]:
    """One window of a spill: its text, the next start (None at the end) and the total."""
    text = spill_path(spills, spill_id).read_text(encoding="utf-8")
    chunk, following = window(text, start, limit)
    return chunk, following, len(text)


def spill_reader(
    spills: Path, spill_of: Callable[[CallId], SpillId | None]
) -> Callable[[str, int, int], tuple[str, int | None, int] | None]:
    """A reader of one window of a call's spill, by call id; None when there is none.

    `spill_of` finds the spill a call's receipt named; a spill that cannot be read is
    logged and reads as none.
    """

    def reader(call_id: str, start: int, limit: int) -> tuple[str, int | None, int] | None:
        spill_id = spill_of(CallId(call_id))
        if spill_id is None:
            return None
        try:
            return read_spill(spills, spill_id, start, limit)
        except OSError:
            log.exception("spill %s of call %s cannot be read", spill_id, call_id)
            return None

    return reader
