"""Checking every target again after an approval wait; adapter layer.

Time passed while a person decided, so right before the call runs its targets are gathered
again (in a worker thread, as before the authorization) and decided against the scope the
call was authorized in. Any change (a denial now, no base, another real location) denies
the call `target_changed`; approval never widens a decision.
"""

from __future__ import annotations

import anyio.to_thread

from adapters.pipeline.authorization import Authorization, Plan
from adapters.pipeline.resolution import PathScope, decide_targets, gather_targets
from adapters.pipeline.run_journal import RunJournal
from adapters.tools.contract import BoundTarget
from domain.tools import endings
from domain.tools.output import redact
from domain.tools.result import ToolResult
from domain.values.authorization import DenialCategory

CHANGED = "a target resolves differently than when it was authorized"


async def revalidate(
    journal: RunJournal, authorization: Authorization, plan: Plan, scope: PathScope
) -> tuple[BoundTarget, ...] | ToolResult:
    """The targets as they resolve now, if unchanged; else the denial's result."""
    gathered = await anyio.to_thread.run_sync(gather_targets, plan.assessment.targets, scope.base)
    fresh = decide_targets(gathered, scope)
    before = [(t.path, t.real) for t in plan.targets]
    after = [(t.path, t.real) for t in fresh.bound]
    if fresh.denied is None and not fresh.no_base and before == after:
        return fresh.bound
    detail = redact(
        fresh.denied.detail if fresh.denied is not None else CHANGED,
        authorization.policy.secrets,
    )
    run_id, attempt_id = journal.run.run_id, authorization.attempt_id
    await journal.write(
        lambda s: s.deny_attempt(run_id, attempt_id, DenialCategory.TARGET_CHANGED, detail[:2000])
    )
    return endings.denied(authorization.call, attempt_id, DenialCategory.TARGET_CHANGED, detail)
