"""The daemon's Approver: pending requests, decisions by prefix, elicitation racing the CLI."""

from __future__ import annotations

import anyio
import pytest
from starlette.datastructures import Headers

from adapters.runtime.approvals import (
    CALL_PROGRESS,
    ApprovalScopeError,
    PendingApprovals,
    UnknownApprovalError,
)
from adapters.security.loopback import is_loopback_request
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.ids import AttemptId, CallId, SessionId
from domain.values.authorization import ApprovalMode, ApprovalScope, ApprovalVerdict


def request(grant_key: str = "write_file") -> ApprovalRequest:
    """One approval request."""
    return ApprovalRequest(
        session_id=SessionId.new(),
        attempt_id=AttemptId.new(),
        call_id=CallId("c1"),
        tool_name="write_file",
        summary="write /w/a.txt",
        mode=ApprovalMode.REQUEST,
        grant_key=grant_key,
    )


async def ask_and_decide(
    approvals: PendingApprovals, asked: ApprovalRequest, decide: object
) -> ApprovalAnswer | None:
    """Ask in one task and run `decide` once the request is listed."""
    answers: list[ApprovalAnswer | None] = []

    async def ask() -> None:
        answers.append(await approvals.ask(asked))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        while not approvals.listing():  # noqa: ASYNC110 - the request appears in another task
            await anyio.sleep(0.001)
        assert callable(decide)
        decide()
    return answers[0]


def test_a_decision_by_unique_prefix_answers_the_waiting_call() -> None:
    """The CLI names a request by a prefix of its attempt id; the call gets that answer."""
    approvals = PendingApprovals()
    asked = request()

    def decide() -> None:
        [pending] = approvals.listing()
        assert pending.approval_id == asked.attempt_id
        approvals.decide(
            asked.attempt_id[:10], ApprovalVerdict.APPROVED, "cli", ApprovalScope.SESSION
        )

    answer = anyio.run(ask_and_decide, approvals, asked, decide)
    assert answer == ApprovalAnswer(
        verdict=ApprovalVerdict.APPROVED, decided_by="cli", scope=ApprovalScope.SESSION
    )
    assert approvals.listing() == []


@pytest.mark.parametrize("wanted", ["", "att", "att_nope", "zzzz"])
def test_unknown_or_too_short_ids_are_refused(wanted: str) -> None:
    """Nothing pending, a short prefix or a wrong id: a typed error naming the command."""
    with pytest.raises(UnknownApprovalError, match="approvals list"):
        PendingApprovals().decide(wanted, ApprovalVerdict.APPROVED, "cli")


def test_a_wider_scope_needs_a_grant_key_and_a_directory_scope_names_its_directory() -> None:
    """Refusals leave the request pending; a valid decision then still works."""
    approvals = PendingApprovals()
    narrow = request(grant_key="")

    def decide() -> None:
        with pytest.raises(ApprovalScopeError, match="only be answered for this call"):
            approvals.decide(
                narrow.attempt_id, ApprovalVerdict.APPROVED, "cli", ApprovalScope.SESSION
            )
        with pytest.raises(ApprovalScopeError, match="directory"):
            approvals.decide(
                narrow.attempt_id, ApprovalVerdict.APPROVED, "cli", ApprovalScope.ONCE, "/w"
            )
        approvals.decide(narrow.attempt_id, ApprovalVerdict.REJECTED, "cli")

    answer = anyio.run(ask_and_decide, approvals, narrow, decide)
    assert answer is not None
    assert answer.verdict is ApprovalVerdict.REJECTED


def test_the_first_answer_wins_between_the_client_and_the_cli() -> None:
    """An elicited answer settles the request; a later CLI decision finds nothing pending."""
    asked = request()

    async def elicit(_request: ApprovalRequest) -> ApprovalAnswer | None:
        return ApprovalAnswer(verdict=ApprovalVerdict.APPROVED, decided_by="mcp client x")

    approvals = PendingApprovals(lambda _session: elicit)
    answer = anyio.run(approvals.ask, asked)
    assert answer is not None
    assert answer.decided_by == "mcp client x"
    with pytest.raises(UnknownApprovalError):
        approvals.decide(asked.attempt_id, ApprovalVerdict.REJECTED, "cli")


def test_a_client_that_cannot_answer_leaves_the_cli_path_open() -> None:
    """An elicitor that fails or declines to answer does not end the wait."""
    asked = request()

    async def broken(_request: ApprovalRequest) -> ApprovalAnswer | None:
        msg = "client went away"
        raise RuntimeError(msg)

    approvals = PendingApprovals(lambda _session: broken)

    def decide() -> None:
        approvals.decide(asked.attempt_id, ApprovalVerdict.APPROVED, "cli")

    answer = anyio.run(ask_and_decide, approvals, asked, decide)
    assert answer is not None
    assert answer.decided_by == "cli"


def test_a_waiting_request_reports_growing_progress_until_it_is_answered() -> None:
    """Progress starts at once, only grows, names the approve command and stops with the answer."""
    asked = request()
    approvals = PendingApprovals(timeout_seconds=30.0, progress_interval=0.01)
    reports: list[tuple[float, float | None, str]] = []

    async def report(progress: float, total: float | None, message: str) -> None:
        reports.append((progress, total, message))

    async def scenario() -> int:
        token = CALL_PROGRESS.set(report)
        try:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(approvals.ask, asked)
                while len(reports) < 3:  # noqa: ASYNC110 - reports arrive from the waiting task
                    await anyio.sleep(0.005)
                approvals.decide(asked.attempt_id, ApprovalVerdict.APPROVED, "cli")
        finally:
            CALL_PROGRESS.reset(token)
        seen = len(reports)
        await anyio.sleep(0.05)
        return seen

    seen = anyio.run(scenario)
    assert seen == len(reports)
    progress = [p for p, _total, _message in reports]
    assert 0.0 == progress[0]
    assert sorted(set(progress)) == progress
    assert {30.0} == {total for _p, total, _message in reports}
    assert reports[0][2].endswith(f"ledgerclaw approvals approve {asked.attempt_id}")


@pytest.mark.parametrize(
    ("host", "origin", "allowed"),
    [
        ("127.0.0.1:7431", None, True),
        ("localhost:7431", "http://localhost:3000", True),
        ("[::1]:7431", "http://[::1]:7431", True),
        ("evil.example:7431", None, False),
        ("127.0.0.1:7431", "https://evil.example", False),
        ("127.0.0.1:7431", "null", False),
        ("", None, False),
    ],
)
def test_only_loopback_hosts_and_origins_are_served(
    host: str, origin: str | None, allowed: bool
) -> None:
    """DNS rebinding and cross-site pages are refused by Host and Origin."""
    raw = {"host": host} | ({"origin": origin} if origin is not None else {})
    assert is_loopback_request(Headers(raw)) is allowed
