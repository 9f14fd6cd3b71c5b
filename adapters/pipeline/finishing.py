"""The last steps of a call that ran: redact, bound, spill, receipt, present; adapter layer.

A tool's text is redacted of exact secrets, then bounded: what does not fit inline is kept
whole in a spill that `tool_output_read` reads back. The receipt (and a tool it loaded, or a
file it attached) is stored in one transaction; a subagent's working context follows the
receipt for the run. The remediation presenter adds the receipt's instruction, or the
spill's, if its tool is visible.
"""

from __future__ import annotations

import logging

import anyio.to_thread

from adapters.pipeline.authorization import Authorization
from adapters.pipeline.receipts import receipt_of
from adapters.pipeline.run_journal import RunJournal
from adapters.pipeline.spills import write_spill
from adapters.tools.contract import ToolOutput
from domain.ids import SpillId
from domain.session.aggregate import Session
from domain.tools import endings
from domain.tools.output import bound, redact, spill_notice
from domain.tools.remediation import present
from domain.tools.result import ToolResult
from domain.values.audience import SessionKind
from domain.values.receipts import OutcomeCategory, RemediationCode

log = logging.getLogger(__name__)


async def finish(
    journal: RunJournal, authorization: Authorization, output: ToolOutput, visible: frozenset[str]
) -> ToolResult:
    """Store the receipt of `output` and return the call's result."""
    run, policy = journal.run, authorization.policy
    attempt_id, call = authorization.attempt_id, authorization.call
    text = redact(output.text, policy.secrets)
    shown = bound(text, policy.inline_limit)
    spill_id: SpillId | None = None
    if shown.spilled:
        spill_id = SpillId.new()
        try:
            await anyio.to_thread.run_sync(write_spill, run.envelope.spills, spill_id, text)
            notice = spill_notice(call.call_id, len(shown.inline), shown.total_chars)
        except OSError:
            log.exception("spill of call %s could not be kept", call.call_id)
            spill_id = None
            notice = (
                f"[output truncated: showed {len(shown.inline)} of {shown.total_chars} "
                "characters; the rest could not be kept]"
            )
        text = f"{shown.inline}\n{notice}"
    receipt = receipt_of(output, spill_id, policy.secrets)
    loaded = output.loaded_tool if receipt.outcome is OutcomeCategory.SUCCESS else None
    sent = output.attachment if receipt.outcome is OutcomeCategory.SUCCESS else None

    def record(session: Session) -> None:
        session.record_receipt(run.run_id, attempt_id, receipt)
        if loaded is not None:
            session.load_tool_schema(run.run_id, loaded)
        if sent is not None:
            session.send_attachment(run.run_id, attempt_id, sent)

    await journal.write(record)
    if run.kind is SessionKind.SUBAGENT and receipt.has_state_effect:
        run.working_context = run.working_context.after(receipt)
    code = receipt.remediation or (
        RemediationCode.READ_SPILLED_OUTPUT if spill_id is not None else None
    )
    if loaded is not None:
        visible = visible | {loaded}
    return endings.finished(
        call,
        attempt_id,
        present(text, code, visible),
        receipt.outcome,
        remediation=receipt.remediation,
        spill_id=spill_id,
    )
