"""The health states of an upstream server and the back-off between attempts; domain layer.

A server is `connected` only once its tools were listed. A failed start or a lost connection
backs off from 30 seconds, doubling to at most 10 minutes, each wait spread by up to a fifth
either way so that servers that failed together do not retry together. A success or a reload
starts the count again.
"""

from __future__ import annotations

from enum import StrEnum

FIRST_BACKOFF_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 600.0
JITTER = 0.2
"""The largest share of a wait that jitter adds or takes away."""


class ServerState(StrEnum):
    """Where one upstream server's owner is in its life."""

    CONNECTING = "connecting"
    CONNECTED = "connected"
    BACKOFF = "backoff"
    NEEDS_AUTH = "needs_auth"
    FAILED = "failed"
    DISABLED = "disabled"


class FailureClass(StrEnum):
    """What an upstream's answer (or its absence) means, as the glossary defines it."""

    TRANSPORT = "transport_or_session"
    """No usable answer: a broken connection, a timeout, a lost session (HTTP 404)."""
    APPLICATION = "application_error"
    """The server received the request and refused it: an HTTP status, a JSON-RPC error."""
    TOOL = "tool_error"
    """The tool ran and reported a failure in its own words (`isError`)."""


def backoff_seconds(failures: int, spread: float) -> float:
    """The wait after the `failures`-th failure in a row, `spread` in [-1, 1] placing the jitter.

    >>> backoff_seconds(1, 0.0), backoff_seconds(2, 0.0), backoff_seconds(20, 0.0)
    (30.0, 60.0, 600.0)
    """
    exponent = min(max(failures, 1) - 1, 16)
    base = min(FIRST_BACKOFF_SECONDS * (1 << exponent), MAX_BACKOFF_SECONDS)
    return base * (1 + JITTER * max(-1.0, min(1.0, spread)))
