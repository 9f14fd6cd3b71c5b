"""Letting long file work in a worker thread notice its caller's cancellation; adapter layer."""

from __future__ import annotations

import anyio.from_thread


def stop_if_cancelled() -> None:
    """Raise the caller's cancellation here if it was cancelled; nothing on the event loop.

    A worker thread cannot be interrupted, so loops over chunks, lines or directory entries
    call this to end promptly when the call they serve is cancelled.
    """
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:
        # Not in a worker thread (small work runs on the event loop): nothing to check.
        return
