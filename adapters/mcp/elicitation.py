"""Asking an MCP client to decide an approval, when it can be asked; adapter layer.

Only handshake-era connections carry server-to-client requests, and only clients that
declared the elicitation capability are asked. The question offers exactly the answers
the pipeline can record: approve once, approve for this session (when the request can be
granted wider, the question says whom the session covers), or deny. Dismissing the
question leaves the request to the command line.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext

from adapters.runtime.approvals import Elicitor
from adapters.runtime.session_host import Caller
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.values.authorization import ApprovalScope, ApprovalVerdict

ONCE = "approve once"
SESSION = "approve for this session"
DENY = "deny"


def elicitor_for(ctx: ServerRequestContext[Any, Any], caller: Caller) -> Elicitor | None:
    """An elicitor bound to this request, or None when the client cannot be asked."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return None
    if not ctx.session.can_send_request:
        return None
    who = f"mcp client {caller.client_name or 'unnamed'}"

    async def elicit(request: ApprovalRequest) -> ApprovalAnswer | None:
        choices = [ONCE, SESSION, DENY] if request.grant_key else [ONCE, DENY]
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": choices, "title": "Decision"},
            },
            "required": ["decision"],
        }
        message = f"Approve {request.tool_name}: {request.summary}?"
        if request.grant_key and caller.reach is not None:
            message += f" ({SESSION!r} covers {caller.reach.covers}.)"
        result = await ctx.session.elicit_form(message, schema, ctx.request_id)
        if result.action == "decline":
            return ApprovalAnswer(verdict=ApprovalVerdict.REJECTED, decided_by=who)
        decision = (result.content or {}).get("decision")
        if result.action != "accept" or decision not in choices:
            return None
        if decision == DENY:
            return ApprovalAnswer(verdict=ApprovalVerdict.REJECTED, decided_by=who)
        scope = ApprovalScope.SESSION if decision == SESSION else ApprovalScope.ONCE
        return ApprovalAnswer(verdict=ApprovalVerdict.APPROVED, decided_by=who, scope=scope)

    return elicit
