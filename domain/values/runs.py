"""Runs of a session, why they end, and why a session closes; domain layer."""

from __future__ import annotations

from enum import StrEnum

from domain.base import Value
from domain.ids import RunId
from domain.text import ShortText


class RunEndReason(StrEnum):
    """Why a run stopped; classify before troubleshooting."""

    NATURAL = "natural"
    """The run finished its work: the model answered without asking for more calls."""
    ABORT = "abort"
    PROVIDER_ERROR = "provider_error"
    """Every model candidate failed; the run's detail lists each attempt."""
    TOOL_LOOP_TERMINATED = "tool_loop_terminated"
    STRATEGY_STOP = "strategy_stop"
    """A configured limit, named in the run's detail, was reached."""
    CONTEXT_EXHAUSTED = "context_exhausted"
    """The next model request could not fit the model's context window."""
    SUPERSEDED = "superseded"
    CRASHED = "crashed"
    SHUTDOWN = "shutdown"
    """The daemon stopped; calls still running after its grace period were cancelled."""


class SessionCloseReason(StrEnum):
    """Why a session was closed; a closed session starts no more runs."""

    CLIENT_CLOSED = "client_closed"
    IDLE = "idle"
    DAEMON_STOPPED = "daemon_stopped"
    CRASHED = "crashed"
    REVOKED = "revoked"


CLOSE_RUN_REASONS = {
    SessionCloseReason.CLIENT_CLOSED: RunEndReason.NATURAL,
    SessionCloseReason.IDLE: RunEndReason.NATURAL,
    SessionCloseReason.DAEMON_STOPPED: RunEndReason.SHUTDOWN,
    SessionCloseReason.CRASHED: RunEndReason.CRASHED,
    SessionCloseReason.REVOKED: RunEndReason.ABORT,
}
"""How the runs still live when a session closes end, for each close reason."""


class RunState(Value):
    """One run of a session and, once it stopped, why."""

    run_id: RunId
    client_run_id: ShortText | None = None
    ended: RunEndReason | None = None
