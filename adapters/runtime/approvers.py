"""Approvers for the command line: a standing answer or a terminal question; adapter layer."""

from __future__ import annotations

from collections.abc import Callable

import anyio.to_thread

from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.values.authorization import ApprovalVerdict


class StandingApprover:
    """Answers every request the same way (`ledgerclaw tool call --approve`)."""

    def __init__(self, verdict: ApprovalVerdict, decided_by: str) -> None:
        self.verdict = verdict
        self.decided_by = decided_by
        self.asked: list[ApprovalRequest] = []
        self.reported: list[ApprovalRequest] = []

    def available(self) -> bool:
        """Always available."""
        return True

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """The standing answer, for this call only."""
        self.asked.append(request)
        return ApprovalAnswer(verdict=self.verdict, decided_by=self.decided_by)

    async def report(self, request: ApprovalRequest) -> None:
        """Keep the notice; the command line prints nothing extra."""
        self.reported.append(request)


class TerminalApprover:
    """Asks the person at the terminal with a yes/no question."""

    def __init__(self, decided_by: str, ask_line: Callable[[str], str] = input) -> None:
        self.decided_by = decided_by
        self._ask_line = ask_line

    def available(self) -> bool:
        """Available: built only when standard input is a terminal."""
        return True

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Ask `Approve ...? [y/N]`; end of input means no one answered."""
        question = f"Approve {request.tool_name}: {request.summary}? [y/N] "
        try:
            # Abandoned on cancel, so the approval timeout ends the wait even though a
            # blocking read cannot be interrupted.
            line = await anyio.to_thread.run_sync(self._ask_line, question, abandon_on_cancel=True)
        except EOFError:
            return None
        verdict = (
            ApprovalVerdict.APPROVED
            if line.strip().lower() in ("y", "yes")
            else ApprovalVerdict.REJECTED
        )
        return ApprovalAnswer(verdict=verdict, decided_by=self.decided_by)

    async def report(self, request: ApprovalRequest) -> None:
        """Report-mode calls run without a question."""
        del request
