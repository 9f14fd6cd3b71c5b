"""Builders shared by the tests: messages, sessions with a writer run, realistic journals.

Each builder is the one way the suite makes that thing, so that a test module says what it
sets up by name instead of repeating the commands that set it up.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.ports import Journal
from domain.session.aggregate import Session
from domain.session.events import ToolReceiptRecorded
from domain.session.opening import SessionOpening
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


def user_message(text: str) -> ChatMessage:
    """A user message with `text`."""
    return ChatMessage(role=MessageRole.USER, content=text)


def start_and_claim(session: Session, run_id: RunId) -> None:
    """Start `run_id` and make it the writer."""
    session.start_run(run_id)
    session.claim_writer(run_id)


def appending(run_id: RunId, message: ChatMessage) -> Callable[[Session], None]:
    """The session command that appends `message` on behalf of `run_id`."""
    return lambda session: session.append_message(run_id, message)


def open_main(
    journal: Journal, session_id: SessionId | None = None, key: str = "main:test"
) -> SessionId:
    """Open a main personal session under `key` and return its id."""
    session_id = session_id or SessionId.new()
    journal.open_session(SessionOpening(session_id, key, SessionKind.MAIN, Audience.PERSONAL))
    return session_id


def open_with_writer(
    journal: Journal, session_id: SessionId | None = None, key: str = "main:test"
) -> tuple[SessionId, RunId]:
    """Open a main session whose writer is a fresh run; the stream is then at version 3."""
    session_id = open_main(journal, session_id, key)
    run_id = RunId.new()
    journal.update_session(session_id, lambda s: start_and_claim(s, run_id))
    return session_id, run_id


def tool_call(index: int, name: str, arguments: dict[str, Any] | None = None) -> ToolCallRequest:
    """A request to call `name` with `arguments`, whose call id is `call_{index}`."""
    return ToolCallRequest(call_id=CallId(f"call_{index}"), name=name, arguments=arguments or {})


def receipt_of(event: ToolReceiptRecorded) -> ToolReceipt:
    """The receipt a ToolReceiptRecorded event stores."""
    return ToolReceipt(
        outcome=event.outcome,
        file_activity=event.file_activity,
        project_declaration=event.project_declaration,
        remediation=event.remediation,
        spill_id=event.spill_id,
    )


def nested_shell(command: str, levels: int) -> str:
    """`command` run through `sh -c` `levels` times, quoted at each level."""
    for _ in range(levels):
        command = "sh -c " + shlex.quote(command)
    return command


def write_sample_session(journal: Journal, session_key: str = "main:cli") -> SessionId:
    """A main session with one finished run: a read, a denied write, an approved shell call."""
    session_id = SessionId.new()
    run = RunId.new()
    journal.open_session(
        SessionOpening(session_id, session_key, SessionKind.MAIN, Audience.PERSONAL)
    )

    def first_turn(session: Session) -> None:
        session.bind_storage(2, f"/srv/ledgerclaw/sessions/{session_id.hex}")
        session.start_run(run, client_run_id="client-1")
        session.claim_writer(run)
        session.append_message(run, user_message("Read the README"))
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
