"""What the command line may ask a running daemon, by operation name; adapter layer.

Each method takes the request's params and returns a JSON object. The control plane
admits a caller for exactly one operation (its local-control proof names it).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.control.frames import Scope
from adapters.control.plane import ControlMethod, current_peer
from adapters.runtime.approvals import REQUESTED, Pending, PendingApprovals, Watcher
from adapters.security.pairing import PairingCodes
from domain.errors import LedgerclawError
from domain.values.authorization import ApprovalScope, ApprovalVerdict

CLI_DECIDER = "cli (local control)"
METHOD_SCOPES = {
    "status": Scope.READ,
    "approvals.list": Scope.APPROVALS,
    "approvals.decide": Scope.APPROVALS,
    "approvals.resolve": Scope.APPROVALS,
    "pair.code": Scope.WRITE,
}
"""The scope each control method needs."""
APPROVAL_EVENTS = {"approval.requested": Scope.APPROVALS, "approval.resolved": Scope.APPROVALS}
"""The approval events, heard by connections that may answer approvals."""
LOCAL_ONLY = frozenset({"pair.code"})
"""Methods only a local-control proof opens, whatever a device's scopes."""
M = TypeVar("M", bound=BaseModel)


class BadControlRequestError(LedgerclawError):
    """A control request's params were malformed."""

    exit_code = 2


class _Decide(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=100)
    verdict: ApprovalVerdict
    scope: ApprovalScope = ApprovalScope.ONCE
    directory: str | None = Field(default=None, max_length=4096)


class Decision(StrEnum):
    """An answer as a chat client offers it: approve once, for the session, a directory; deny."""

    ONCE = "once"
    SESSION = "session"
    DIRECTORY = "directory"
    DENY = "deny"


class _Resolve(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=100)
    decision: Decision
    directory: str | None = Field(default=None, max_length=4096)

    def verdict_and_scope(self) -> tuple[ApprovalVerdict, ApprovalScope]:
        if self.decision is Decision.DENY:
            return ApprovalVerdict.REJECTED, ApprovalScope.ONCE
        return ApprovalVerdict.APPROVED, ApprovalScope(str(self.decision))


class _Pair(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, min_length=1, max_length=100)
    scopes: tuple[Scope, ...] = (Scope.READ,)


def _parse(model: type[M], params: dict[str, Any]) -> M:
    try:
        return model.model_validate(params)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "params"
        msg = f"bad request: {where}: {first['msg']}"
        raise BadControlRequestError(msg) from None


def approval_row(pending: Pending) -> dict[str, Any]:
    """One pending approval as the command line shows it, with whom its session covers."""
    request = pending.request
    reach = pending.reach
    return {
        "id": pending.approval_id,
        "session_id": str(request.session_id),
        "device": reach.device if reach is not None else None,
        "client": reach.client if reach is not None else None,
        "session": reach.session if reach is not None else None,
        "session_scope_covers": reach.covers if reach is not None else None,
        "tool": request.tool_name,
        "summary": request.summary,
        "targets": list(request.targets),
        "mode": str(request.mode),
        "can_widen": bool(request.grant_key),
        "asked_at": pending.asked_at.isoformat(),
    }


def approval_announcer(publish: Callable[[str, dict[str, Any]], Awaitable[None]]) -> Watcher:
    """A watcher that publishes `approval.requested` and `approval.resolved` to the gateway."""

    async def announce(what: str, pending: Pending) -> None:
        if what == REQUESTED:
            await publish("approval.requested", approval_row(pending))
            return
        answer = pending.answer
        resolved = {
            "id": pending.approval_id,
            "session_id": str(pending.request.session_id),
            "verdict": "expired" if answer is None else str(answer.verdict),
            "scope": None if answer is None else str(answer.scope),
            "decided_by": None if answer is None else answer.decided_by,
        }
        await publish("approval.resolved", resolved)

    return announce


def _decider() -> str:
    try:
        return current_peer().who
    except LookupError:
        return CLI_DECIDER


def control_methods(
    health: Callable[[], dict[str, Any]],
    approvals: PendingApprovals,
    codes: PairingCodes | None = None,
) -> dict[str, ControlMethod]:
    """The control methods of a hosting process; only the daemon issues pairing codes."""

    async def status(_params: dict[str, Any]) -> dict[str, Any]:
        return health()

    async def approvals_list(_params: dict[str, Any]) -> dict[str, Any]:
        return {"approvals": [approval_row(p) for p in approvals.listing()]}

    async def approvals_decide(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Decide, params)
        if wanted.verdict is ApprovalVerdict.EXPIRED:
            raise BadControlRequestError("bad request: verdict: approve or reject, not expire")
        try:
            pending = approvals.decide(
                wanted.id, wanted.verdict, CLI_DECIDER, wanted.scope, wanted.directory
            )
        except ValidationError as error:
            msg = f"bad request: {error.errors()[0]['msg']}"
            raise BadControlRequestError(msg) from None
        return {**approval_row(pending), "verdict": str(wanted.verdict), "scope": str(wanted.scope)}

    async def approvals_resolve(params: dict[str, Any]) -> dict[str, Any]:
        wanted = _parse(_Resolve, params)
        verdict, scope = wanted.verdict_and_scope()
        try:
            pending = approvals.decide(wanted.id, verdict, _decider(), scope, wanted.directory)
        except ValidationError as error:
            msg = f"bad request: {error.errors()[0]['msg']}"
            raise BadControlRequestError(msg) from None
        return {**approval_row(pending), "verdict": str(verdict), "scope": str(scope)}

    methods: dict[str, ControlMethod] = {
        "status": status,
        "approvals.list": approvals_list,
        "approvals.decide": approvals_decide,
        "approvals.resolve": approvals_resolve,
    }
    if codes is not None:
        issuer = codes

        async def pair_code(params: dict[str, Any]) -> dict[str, Any]:
            wanted = _parse(_Pair, params)
            code = issuer.issue(wanted.name, tuple(str(s) for s in wanted.scopes))
            remaining = max(0, round(code.expires_at - time.monotonic()))
            return {
                "code": code.code,
                "expires_in_seconds": remaining,
                "name": code.name,
                "scopes": list(code.scopes),
            }

        methods["pair.code"] = pair_code
    return methods
