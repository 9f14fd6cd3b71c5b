"""Builders that write realistic sessions into a journal, for CLI and integration tests."""

from __future__ import annotations

from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.ports import Journal
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.receipts import FileActivity, OutcomeCategory, ToolReceipt
from domain.values.runs import RunEndReason


def write_sample_session(journal: Journal, session_key: str = "main:cli") -> SessionId:
    """A main session with one finished run: a read, a denied write, an approved shell call."""
    session_id = SessionId.new()
    run = RunId.new()
    journal.open_session(session_id, session_key, SessionKind.MAIN, Audience.PERSONAL)

    def first_turn(session: object) -> None:
        from domain.session.aggregate import Session  # noqa: PLC0415 - keeps the signature generic

        assert isinstance(session, Session)
        session.bind_storage(2, f"/srv/ledgerclaw/sessions/{session_id.hex}")
        session.start_run(run, client_run_id="client-1")
        session.claim_writer(run)
        session.append_message(run, ChatMessage(role=MessageRole.USER, content="Read the README"))
        read = CallId("call_read_1")
        session.append_message(
            run,
            ChatMessage(
                role=MessageRole.ASSISTANT,
                tool_calls=(
                    ToolCallRequest(
                        call_id=read, name="file_read", arguments={"path": "README.md"}
                    ),
                ),
            ),
        )
        attempt = AttemptId.new()
        session.start_attempt(run, attempt, read, "file_read")
        session.evaluate_policy(run, attempt, PolicyDecision.ALLOW, rule="roots.project")
        session.record_receipt(
            run,
            attempt,
            ToolReceipt(
                outcome=OutcomeCategory.SUCCESS,
                file_activity=(
                    FileActivity(path="/work/project/README.md", operation=FileOperation.READ),
                ),
            ),
        )
        session.append_message(
            run, ChatMessage(role=MessageRole.TOOL, call_id=read, content="# Project")
        )
        write = CallId("call_write_1")
        denied = AttemptId.new()
        session.start_attempt(run, denied, write, "file_write")
        session.evaluate_policy(
            run,
            denied,
            PolicyDecision.DENY,
            rule="protected.journal",
            detail="the journal database is never writable by tools",
            denial=DenialCategory.PROTECTED_PATH,
        )
        shell = CallId("call_shell_1")
        approved = AttemptId.new()
        session.start_attempt(run, approved, shell, "shell_execute")
        session.evaluate_policy(
            run,
            approved,
            PolicyDecision.APPROVAL_REQUIRED,
            rule="shell.needs_approval",
            approval_mode=ApprovalMode.REQUEST,
        )
        session.request_approval(
            run, approved, "run `git status` in /work/project", ApprovalMode.REQUEST
        )
        session.decide_approval(approved, ApprovalVerdict.APPROVED, "operator", ApprovalScope.ONCE)
        session.record_receipt(run, approved, ToolReceipt(outcome=OutcomeCategory.SUCCESS))
        session.append_message(run, ChatMessage(role=MessageRole.ASSISTANT, content="Done."))
        session.end_run(run, RunEndReason.NATURAL)

    journal.update_session(session_id, first_turn)
    return session_id
