"""Approval requests waiting for an operator while the daemon runs; adapter layer.

The daemon's Approver. Each request waits here until someone decides it: the command
line (`ledgerclaw approvals approve|deny`, through the control plane) or, for a client
that can be asked, an MCP elicitation. The first answer wins. The dispatcher bounds the
wait with the configured approval timeout and journals the request, the decision and any
expiry; this module keeps nothing durable itself. While a request waits, a client that
asked for progress hears every few seconds that it is still waiting, and for what.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime

import anyio

from adapters.clock import SYSTEM_CLOCK
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.errors import LedgerclawError
from domain.id_prefixes import by_prefix
from domain.ids import SessionId
from domain.ports import Clock
from domain.values.authorization import ApprovalScope, ApprovalVerdict

log = logging.getLogger(__name__)
PROGRESS_INTERVAL_SECONDS = 5.0
"""How often a waiting call tells its client it still waits; well under any client timeout."""

Elicitor = Callable[[ApprovalRequest], Awaitable[ApprovalAnswer | None]]
"""Asks the client behind a session; None when it declined to answer."""

CALL_ELICITOR: ContextVar[Elicitor | None] = ContextVar("ledgerclaw_call_elicitor", default=None)
"""The elicitor of the request being served, set around one call: concurrent calls of one
session each ask their own request's client."""

Watcher = Callable[[str, "Pending"], Awaitable[None]]
"""Told of each request as it is asked (`requested`) and as it is settled (`resolved`)."""
REQUESTED, RESOLVED = "requested", "resolved"
WATCH_SECONDS = 5.0
"""How long telling a watcher may hold up a request: a stalled listener delays nothing more."""

Progress = Callable[[float, float | None, str], Awaitable[None]]
"""Tells the client behind one request how far it is: (progress, total, message)."""

CALL_PROGRESS: ContextVar[Progress | None] = ContextVar("ledgerclaw_call_progress", default=None)
"""The progress reporter of the request being served, set around one call; None when the
client gave no progress token."""


@dataclass(frozen=True)
class SessionReach:
    """Whom a session-scoped approval covers: every request that shares the asking session."""

    device: str | None
    """The authenticated device; None on stdio, where the process is the boundary."""
    client: str | None
    """The client name the requests declare (self-declared, recorded)."""
    session: str
    """What sets this session apart within the device and client, e.g. `session key ci-1`."""
    covers: str
    """The same as one phrase: "every stateless request of device ... that ..."."""


CALL_REACH: ContextVar[SessionReach | None] = ContextVar("ledgerclaw_call_reach", default=None)
"""Whom the session of the call being served covers, set around one call."""


class UnknownApprovalError(LedgerclawError):
    """No pending approval matches the given id (it may have been decided or timed out)."""

    exit_code = 6


class ApprovalScopeError(LedgerclawError):
    """The requested scope cannot be granted for this request."""

    exit_code = 2


@dataclass
class Pending:
    """One request waiting for its answer."""

    request: ApprovalRequest
    asked_at: datetime
    reach: SessionReach | None = None
    """Whom approving it for the session would cover; None when no host said."""
    answer: ApprovalAnswer | None = None
    answered: anyio.Event = field(default_factory=anyio.Event)

    @property
    def approval_id(self) -> str:
        """The id an operator names it by: the attempt's id."""
        return str(self.request.attempt_id)

    def settle(self, answer: ApprovalAnswer | None) -> bool:
        """Record the first answer; a later one is ignored."""
        if self.answered.is_set():
            return False
        self.answer = answer
        self.answered.set()
        return True


class PendingApprovals:
    """The daemon's Approver: pending requests, decided from the CLI or the client."""

    def __init__(
        self,
        elicitor_for: Callable[[SessionId], Elicitor | None] | None = None,
        *,
        timeout_seconds: float | None = None,
        progress_interval: float = PROGRESS_INTERVAL_SECONDS,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._pending: dict[str, Pending] = {}
        self.elicitor_for: Callable[[SessionId], Elicitor | None] = elicitor_for or (
            lambda _session: None
        )
        self.timeout_seconds = timeout_seconds
        """The configured approval timeout, reported as the total of a wait's progress."""
        self.progress_interval = progress_interval
        self.clock = clock
        """Tells each request's `asked_at`, as the operator's listing shows it."""
        self.watchers: list[Watcher] = []
        """Who hears of each request and its settling (the gateway's clients)."""

    def available(self) -> bool:
        """The command line can always be asked while the daemon runs."""
        return True

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Wait for the first answer; the dispatcher's timeout cancels the wait."""
        pending = Pending(request, self.clock.now(), CALL_REACH.get())
        self._pending[pending.approval_id] = pending
        log.info(
            "approval %s pending: %s %s", pending.approval_id, request.tool_name, request.summary
        )
        elicitor = CALL_ELICITOR.get() or self.elicitor_for(request.session_id)
        progress = CALL_PROGRESS.get()
        try:
            async with anyio.create_task_group() as telling:
                for watcher in self.watchers:
                    telling.start_soon(self._tell, watcher, REQUESTED, pending)
                async with anyio.create_task_group() as tasks:
                    if elicitor is not None:
                        tasks.start_soon(self._elicit, pending, elicitor)
                    if progress is not None:
                        tasks.start_soon(self._keep_informed, pending, progress)
                    await pending.answered.wait()
                    tasks.cancel_scope.cancel()
        finally:
            self._pending.pop(pending.approval_id, None)
            # Told even when the wait was cancelled (timeout, run ended): no prompt lingers.
            with anyio.CancelScope(shield=True):
                for watcher in self.watchers:
                    await self._tell(watcher, RESOLVED, pending)
        return pending.answer

    @staticmethod
    async def _tell(watcher: Watcher, what: str, pending: Pending) -> None:
        with anyio.move_on_after(WATCH_SECONDS):
            try:
                await watcher(what, pending)
            except Exception:  # noqa: BLE001 - a listener's failure never fails the call
                log.warning("telling a watcher of approval %s failed", pending.approval_id)

    async def _elicit(self, pending: Pending, elicitor: Elicitor) -> None:
        try:
            answer = await elicitor(pending.request)
        except Exception:  # noqa: BLE001 - the client could not be asked; the CLI still can
            log.warning("asking the client about approval %s failed", pending.approval_id)
            return
        if answer is not None:
            pending.settle(answer)

    async def _keep_informed(self, pending: Pending, progress: Progress) -> None:
        """Report the wait right away, then every interval, until the request is answered.

        The progress is the seconds waited so far (it only grows, as MCP requires) out of
        the approval timeout. A client that resets its request timeout on progress keeps
        waiting for the operator instead of giving up first.
        """
        started = anyio.current_time()
        message = (
            f"waiting for an operator to approve {pending.request.tool_name}:"
            f" ledgerclaw approvals approve {pending.approval_id}"
        )
        waited = 0.0
        while not pending.answered.is_set():
            try:
                await progress(waited, self.timeout_seconds, message)
            except Exception:  # noqa: BLE001 - a client that cannot be told still gets its answer
                log.info("could not report progress of approval %s", pending.approval_id)
                return
            await anyio.sleep(self.progress_interval)
            # Milliseconds, and never the same value twice: MCP wants progress to grow.
            waited = max(round(anyio.current_time() - started, 3), waited + 0.001)

    async def report(self, request: ApprovalRequest) -> None:
        """A report-mode call runs without waiting; it is logged for the operator."""
        log.info("report-mode call %s: %s", request.tool_name, request.summary)

    # -- the operator's side ---------------------------------------------------------------

    def listing(self) -> list[Pending]:
        """Every pending request, oldest first."""
        return sorted(self._pending.values(), key=lambda p: p.asked_at)

    def find(self, approval_id: str) -> Pending:
        """The pending request with this id or unique prefix (at least four characters)."""
        matches = by_prefix(approval_id.strip(), self._pending)
        if len(matches) != 1:
            how = "matches several" if matches else "matches no"
            msg = f"{approval_id!r} {how} pending approval; see `ledgerclaw approvals list`"
            raise UnknownApprovalError(msg)
        return self._pending[matches[0]]

    def decide(
        self,
        approval_id: str,
        verdict: ApprovalVerdict,
        decided_by: str,
        scope: ApprovalScope = ApprovalScope.ONCE,
        directory: str | None = None,
    ) -> Pending:
        """Answer a pending request; a wider scope needs a request that can be granted wider."""
        pending = self.find(approval_id)
        if scope is not ApprovalScope.ONCE and not pending.request.grant_key:
            msg = f"approval {pending.approval_id} can only be answered for this call"
            raise ApprovalScopeError(msg)
        if (scope is ApprovalScope.DIRECTORY) != (directory is not None):
            msg = "a directory-scoped approval names its directory, and only it does"
            raise ApprovalScopeError(msg)
        answer = ApprovalAnswer(
            verdict=verdict, decided_by=decided_by, scope=scope, directory=directory
        )
        if not pending.settle(answer):
            msg = f"approval {pending.approval_id} was already decided"
            raise UnknownApprovalError(msg)
        return pending
