"""Hosted sessions: one journaled session per connected client, one call at a time.

Each connected client gets a session of its own: opened with the client's declared name
and version, its storage bound, one run started as its writer, and its claim held. The
session works like an actor: its calls run one at a time, in arrival order, so one busy
client never interleaves with itself; a global budget caps how many calls run at once
across all sessions, so one session's trouble stays its own. Adapter layer.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from adapters.hosting.claims import Claim, SessionClaims
from adapters.pipeline.context import RunScope
from adapters.pipeline.dispatcher import Dispatcher
from adapters.pipeline.requests import call_request
from adapters.runtime.approvals import CALL_REACH, SessionReach
from adapters.runtime.runs import open_run
from domain.errors import LedgerclawError
from domain.ids import CallId, SessionId
from domain.ports import Journal
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.tools import endings
from domain.tools.definition import ToolDefinition
from domain.tools.result import ToolResult
from domain.values.attempts import AttemptState
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import CancelReason
from domain.values.runs import SessionCloseReason

log = logging.getLogger(__name__)


class NotAdmittingError(LedgerclawError):
    """The daemon is stopping, or the session is closing: the call was not admitted."""

    exit_code = 1


CLOSE_WAIT_SECONDS = 10.0
"""How long closing a session waits for its cancelled calls to record their end."""


@dataclass(frozen=True)
class Caller:
    """Who a request comes from, as far as the session boundary is concerned."""

    key: str
    """The session boundary: requests with the same key share one hosted session."""
    channel: str
    client_name: str | None = None
    """Self-declared by the client: recorded, never trusted."""
    client_version: str | None = None
    device_id: str | None = None
    """The authenticated device (HTTP only)."""
    session_name: str | None = None
    """The session key the client named itself (`Ledgerclaw-Session-Key`), if any."""
    reach: SessionReach | None = None
    """Whom a session-scoped approval in this caller's session covers."""
    protocol: str = "client"
    """What the client speaks (`mcp`, say): the first word of its session's journaled key."""


@dataclass
class HostedSession:
    """One connected client's session as the daemon serves it."""

    key: str
    run: RunScope
    claim: Claim
    channel: str
    device_id: str | None = None
    reach: SessionReach | None = None
    """Whom a session-scoped approval here covers (the caller that opened it says)."""
    last_used: float = field(default_factory=anyio.current_time)
    turn: anyio.Lock = field(default_factory=anyio.Lock)
    calls: set[anyio.CancelScope] = field(default_factory=set)
    """The calls running or waiting for their turn; closing cancels them."""
    closed: bool = False
    close_reason: SessionCloseReason | None = None
    protocol: str = "client"
    """What the client speaks: the first word of each of its calls' ids."""
    on_tools_changed: Callable[[], Awaitable[None]] | None = None
    """Set by the transport: tells the client that the tools it may call changed."""

    @property
    def session_id(self) -> SessionId:
        """The journaled session's id."""
        return self.run.session_id

    @property
    def in_flight(self) -> int:
        """Calls running or waiting in this session."""
        return len(self.calls)


def _open(host: SessionHost, caller: Caller) -> tuple[RunScope, Claim]:
    """Open, bind, start and claim a new session; runs in a worker thread."""
    label = f"{caller.protocol}-{caller.channel}:{(caller.client_name or 'unnamed')}"
    if caller.session_name is not None:
        label = f"{label[: 200 - len(caller.session_name) - 1]}:{caller.session_name}"
    session_id = SessionId.new()
    claim = host.claims.claim(session_id)
    try:
        opening = SessionOpening(
            session_id,
            _short(label) or f"{caller.protocol}-{caller.channel}",
            SessionKind.MAIN,
            host.audience,
            client_name=_short(caller.client_name),
            client_version=_short(caller.client_version),
        )
        scope = open_run(host.journal, host.home_root, opening)
    except BaseException:
        claim.release()
        raise
    return scope, claim


class SessionHost:
    """Every session the daemon (or one stdio server) hosts, by connection key."""

    def __init__(  # noqa: PLR0913 - the settings are keyword-only
        self,
        journal: Journal,
        dispatcher: Dispatcher,
        home_root: Path,
        claims: SessionClaims,
        *,
        audience: Audience = Audience.PERSONAL,
        max_concurrent_calls: int = 16,
        idle_seconds: float = 1800.0,
    ) -> None:
        self.journal = journal
        self.dispatcher = dispatcher
        self.home_root = home_root
        self.claims = claims
        self.audience = audience
        self.budget = anyio.CapacityLimiter(max_concurrent_calls)
        self.idle_seconds = idle_seconds
        self.sessions: dict[str, HostedSession] = {}
        self.admitting = True
        self._opening = anyio.Lock()
        self._calls: set[anyio.CancelScope] = set()
        self.calls_served = 0
        self.on_open: Callable[[HostedSession], Awaitable[None]] | None = None
        """Runs once in each new session before any request is served in it."""

    # -- sessions --------------------------------------------------------------------------

    async def session_for(self, caller: Caller) -> HostedSession:
        """The live session for the caller's key, opening (and journaling) it on first use."""
        key = caller.key
        found = self.sessions.get(key)
        if found is not None and not found.closed:
            return found
        async with self._opening:
            found = self.sessions.get(key)
            if found is not None and not found.closed:
                return found
            if not self.admitting:
                raise NotAdmittingError("the daemon is stopping and opens no new sessions")
            run, claim = await anyio.to_thread.run_sync(_open, self, caller)
            hosted = HostedSession(
                key,
                run,
                claim,
                caller.channel,
                caller.device_id,
                caller.reach,
                protocol=caller.protocol,
            )
            self.sessions[key] = hosted
            log.info(
                "session %s opened for %s (%s)", run.session_id, caller.client_name, caller.channel
            )
            if self.on_open is not None:
                await self.on_open(hosted)
            return hosted

    def by_session_id(self, session_id: SessionId) -> HostedSession | None:
        """The hosted session with this journaled id, if it is live here."""
        for hosted in self.sessions.values():
            if hosted.session_id == session_id and not hosted.closed:
                return hosted
        return None

    async def close(self, key: str, reason: SessionCloseReason) -> None:
        """Close the session for `key`: cancel its calls, journal the close, drop its claim.

        Calls still waiting for their turn are refused; a running call is cancelled and
        records its `cancelled` receipt before the session's close is written. If the
        close cannot be written (a busy journal), the claim is released all the same and
        recovery closes the session at the next start.
        """
        hosted = self.sessions.pop(key, None)
        if hosted is None or hosted.closed:
            return
        hosted.closed = True
        hosted.close_reason = reason
        if not self.admitting and reason in (
            SessionCloseReason.CLIENT_CLOSED,
            SessionCloseReason.IDLE,
        ):
            # A client that leaves because the daemon cancelled its call left because the
            # daemon is stopping: that is the reason to record.
            reason = SessionCloseReason.DAEMON_STOPPED
        with anyio.CancelScope(shield=True):
            for scope in list(hosted.calls):
                scope.cancel()
            with anyio.move_on_after(CLOSE_WAIT_SECONDS):
                while hosted.calls:  # noqa: ASYNC110 - calls end in their own tasks
                    await anyio.sleep(0.02)
            try:
                await self.dispatcher.writer.update(hosted.session_id, lambda s: s.close(reason))
            except LedgerclawError as error:
                log.error(  # noqa: TRY400 - an expected failure; its message says it all
                    "session %s could not be closed (%s): %s; it is closed at the next start",
                    hosted.session_id,
                    reason,
                    error,
                )
                return
            finally:
                hosted.claim.release()
        log.info("session %s closed: %s", hosted.session_id, reason)

    async def close_idle(self, idle_seconds: float, channel: str | None = None) -> int:
        """Close sessions with no call in flight and none for `idle_seconds`; how many."""
        closed = 0
        for key in [h.key for h in self.sessions.values() if channel in (None, h.channel)]:
            # Checked again right before each close (no await in between): a call may have
            # arrived while an earlier session was being closed.
            hosted = self.sessions.get(key)
            idle = anyio.current_time() - hosted.last_used if hosted is not None else 0.0
            if hosted is None or hosted.in_flight or idle < idle_seconds:
                continue
            await self.close(key, SessionCloseReason.IDLE)
            closed += 1
        return closed

    # -- tools -----------------------------------------------------------------------------

    def tools_for(self, hosted: HostedSession) -> list[ToolDefinition]:
        """The tools this session's next request can see: its policy-visible, loaded set."""
        loaded = self._loaded(hosted)
        views = self.dispatcher.views(hosted.run.audience, loaded)
        return [d for d in self.dispatcher.tools.registry if views[d.name].in_request]

    def _loaded(self, hosted: HostedSession) -> frozenset[str]:
        """The session's loaded tools, from the journal's kept copy (this process writes it)."""
        return self.journal.read_session(hosted.session_id, lambda s: s.loaded_tools)

    async def call(self, hosted: HostedSession, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one call in the session's turn, within the global budget.

        A call waits for its session's earlier calls and for room in the budget; it is
        admitted again after waiting, so nothing starts once the session is closing or the
        daemon stopping. Closing or stopping cancels it: a call that had started returns its
        recorded end (a `cancelled` receipt); one still waiting raises NotAdmittingError.
        """
        self._admit(hosted)
        request, refused = call_request(
            CallId(f"{hosted.protocol}_{secrets.token_hex(8)}"), name, arguments
        )
        result: ToolResult | None = None
        changed = False
        with anyio.CancelScope() as scope:
            hosted.calls.add(scope)
            self._calls.add(scope)
            try:
                async with hosted.turn, self.budget:
                    self._admit(hosted)
                    hosted.last_used = anyio.current_time()
                    before = self._loaded(hosted)
                    reach = CALL_REACH.set(hosted.reach)
                    try:
                        result = await self.dispatcher.call(
                            hosted.run,
                            request,
                            cancel_reason=partial(self._why, hosted, scope),
                            refused=refused,
                        )
                    finally:
                        CALL_REACH.reset(reach)
                    changed = self._loaded(hosted) != before
            finally:
                hosted.calls.discard(scope)
                self._calls.discard(scope)
                hosted.last_used = anyio.current_time()
        if result is None:
            return self._cancelled(hosted, request)
        self.calls_served += 1
        if changed and hosted.on_tools_changed is not None:
            await hosted.on_tools_changed()
        return result

    async def tools_changed(self) -> None:
        """Tell every hosted session's client that the tool set changed (an upstream's)."""
        for hosted in list(self.sessions.values()):
            if hosted.on_tools_changed is not None:
                await hosted.on_tools_changed()

    def _why(self, hosted: HostedSession, scope: anyio.CancelScope) -> CancelReason:
        """Why a call was cancelled: closing and stopping cancel its scope, a client the request.

        Any cancellation that did not come through the call's own scope came from outside
        it: the SDK cancelling the request because its client cancelled it, timed out or
        hung up.
        """
        if not self.admitting:
            return CancelReason.SHUTDOWN
        if scope.cancel_called or hosted.closed:
            return CancelReason.SESSION_CLOSED
        return CancelReason.CLIENT_CANCELLED

    def _cancelled(self, hosted: HostedSession, request: ToolCallRequest) -> ToolResult:
        """The result of a call that closing or stopping cancelled: its recorded end, if any."""
        why = (
            "the daemon is stopping"
            if not self.admitting
            else f"its session was closed ({hosted.close_reason or 'closing'})"
        )

        def attempt_of(session: Session) -> AttemptState | None:
            found = [a for a in session.attempts.values() if a.call_id == request.call_id]
            return found[-1] if found else None

        attempt = self.journal.read_session(hosted.session_id, attempt_of)
        if attempt is None or attempt.end is None:
            msg = f"the call was not started: {why}"
            raise NotAdmittingError(msg)
        return endings.cancelled(request, attempt.attempt_id, why, attempt.end, attempt.outcome)

    def _admit(self, hosted: HostedSession) -> None:
        if not self.admitting:
            msg = "the daemon is stopping and admits no new calls"
            raise NotAdmittingError(msg)
        if hosted.closed:
            msg = f"session {hosted.session_id} is closed; connect again for a new session"
            raise NotAdmittingError(msg)

    # -- stopping --------------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        """Calls running or waiting for their turn, across all sessions."""
        return len(self._calls)

    async def stop(self, grace_seconds: float) -> int:
        """Admit nothing more, let calls finish within the grace period, cancel the rest.

        Every session is then closed as `daemon_stopped`, which ends its run as `shutdown`.
        Returns how many calls had to be cancelled.
        """
        self.admitting = False
        with anyio.move_on_after(grace_seconds):
            while self._calls:  # noqa: ASYNC110 - calls end in their own tasks; poll the set
                await anyio.sleep(0.05)
        cancelled = len(self._calls)
        for scope in list(self._calls):
            scope.cancel()
        with anyio.move_on_after(max(grace_seconds, 5.0)):
            while self._calls:  # noqa: ASYNC110 - as above: cancelled calls record their end
                await anyio.sleep(0.02)
        for key in list(self.sessions):
            await self.close(key, SessionCloseReason.DAEMON_STOPPED)
        return cancelled


def _short(value: str | None) -> str | None:
    if value is None:
        return None
    cleaned = "".join(ch for ch in value if ch.isprintable())[:200]
    return cleaned or None
