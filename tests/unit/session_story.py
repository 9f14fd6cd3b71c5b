"""Fixed ids and the Session story (given events, when a command, then events); unit tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import pytest

from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalMode, DenialCategory, FileOperation, PolicyDecision
from domain.values.conversation import ChatMessage, MessageRole
from domain.values.receipts import FileActivity, OutcomeCategory, RemediationCode, ToolReceipt
from tests.story import Story

SESSION = SessionId.from_uuid(UUID(int=1))
PARENT = SessionId.from_uuid(UUID(int=2))
RUN = RunId.from_uuid(UUID(int=10))
OTHER_RUN = RunId.from_uuid(UUID(int=11))
ATTEMPT = AttemptId.from_uuid(UUID(int=20))
OTHER_ATTEMPT = AttemptId.from_uuid(UUID(int=21))
MISSING_ATTEMPT = AttemptId.from_uuid(UUID(int=29))
CALL = CallId("call_1")
TOOL = "fs.read"
HELLO = ChatMessage(role=MessageRole.USER, content="hello")
SUCCESS = ToolReceipt(outcome=OutcomeCategory.SUCCESS)

Command = Callable[[Session], object]
AttemptCommand = Callable[[Session, RunId, AttemptId], object]


_STORY = Story(
    Session,
    lambda: Session.open(SessionOpening(SESSION, "main", SessionKind.MAIN, Audience.PERSONAL)),
)
drain = _STORY.drain
history = _STORY.history
replay = _STORY.replay
when = _STORY.when
refused = _STORY.refused


def kinds(events: Sequence[Any]) -> list[type[Any]]:
    """The classes of `events`, in order."""
    return [type(event) for event in events]


def after(given: Sequence[Any], new: Sequence[Any]) -> Session:
    """The session rebuilt from the given and the new events."""
    return replay([*given, *new])


def steps(*commands: Command) -> Command:
    """One command that runs `commands` in order."""

    def command(session: Session) -> None:
        for step in commands:
            step(session)

    return command


def run_started(run_id: RunId) -> Command:
    """Start `run_id` without claiming the writer."""
    return lambda session: session.start_run(run_id)


def writer(run_id: RunId = RUN, client_run_id: str | None = None) -> Command:
    """Start `run_id` and make it the writer."""

    def command(session: Session) -> None:
        session.start_run(run_id, client_run_id)
        session.claim_writer(run_id)

    return command


def attempt_started(attempt_id: AttemptId = ATTEMPT) -> Command:
    """Start an attempt on RUN without a policy decision."""
    return lambda session: session.start_attempt(RUN, attempt_id, CALL, TOOL)


def evaluated(decision: PolicyDecision, attempt_id: AttemptId = ATTEMPT) -> Command:
    """Start an attempt on RUN and record `decision` for it."""

    def command(session: Session) -> None:
        attempt_started(attempt_id)(session)
        session.evaluate_policy(
            RUN,
            attempt_id,
            decision,
            rule="rule",
            approval_mode=ApprovalMode.REQUEST,
            denial=DenialCategory.POLICY if decision is PolicyDecision.DENY else None,
        )

    return command


def pending(attempt_id: AttemptId = ATTEMPT, grant_key: str = "") -> Command:
    """Start an attempt on RUN that waits for an operator's answer."""

    def command(session: Session) -> None:
        evaluated(PolicyDecision.APPROVAL_REQUIRED, attempt_id)(session)
        session.request_approval(RUN, attempt_id, "read /a", ApprovalMode.REQUEST, grant_key)

    return command


def read_receipt(*paths: str, project: str | None = None) -> ToolReceipt:
    """A successful receipt that read `paths` and maybe declared `project`."""
    activity = tuple(FileActivity(path=p, operation=FileOperation.READ) for p in paths)
    return ToolReceipt(
        outcome=OutcomeCategory.SUCCESS, file_activity=activity, project_declaration=project
    )


def received(*paths: str, attempt_id: AttemptId = ATTEMPT) -> Command:
    """Allow an attempt on RUN and record a successful receipt that read `paths`."""

    def command(session: Session) -> None:
        evaluated(PolicyDecision.ALLOW, attempt_id)(session)
        session.record_receipt(RUN, attempt_id, read_receipt(*paths))

    return command


ATTEMPT_COMMANDS: dict[str, AttemptCommand] = {
    "evaluate_policy": lambda s, r, a: s.evaluate_policy(r, a, PolicyDecision.ALLOW, rule="r"),
    "request_approval": lambda s, r, a: s.request_approval(r, a, "sum", ApprovalMode.REQUEST),
    "issue_correction": lambda s, r, a: s.issue_correction(r, a, RemediationCode.LOAD_TOOL, ""),
    "deny_attempt": lambda s, r, a: s.deny_attempt(r, a, DenialCategory.POLICY, ""),
    "record_receipt": lambda s, r, a: s.record_receipt(r, a, SUCCESS),
}
"""Every command that acts on one existing attempt on behalf of a run."""

RUN_COMMANDS: dict[str, AttemptCommand] = {
    **ATTEMPT_COMMANDS,
    "append_message": lambda s, r, _: s.append_message(r, HELLO),
    "start_attempt": lambda s, r, a: s.start_attempt(r, a, CALL, TOOL),
}
"""Every command only the current writer may run."""

TERMINAL_COMMANDS: dict[str, AttemptCommand] = {
    **ATTEMPT_COMMANDS,
    "mark_attempt_unknown": lambda s, _, a: s.mark_attempt_unknown(a, "lost"),
}
"""Every command refused once an attempt has its terminal outcome."""


def commands(table: dict[str, AttemptCommand]) -> pytest.MarkDecorator:
    """Parametrize a test over the named commands of `table`."""
    return pytest.mark.parametrize("command", list(table.values()), ids=list(table))
