"""Story tests for authorization attempts, tool receipts and the working context of a Session."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from domain.ids import AttemptId, SessionId, SpillId
from domain.session import errors
from domain.session.aggregate import Session
from domain.session.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    PolicyEvaluated,
    ToolReceiptRecorded,
    ToolSchemaLoaded,
    WorkingContextChanged,
)
from domain.session.opening import SessionOpening
from domain.values.attempts import RECENT_ATTEMPTS_LIMIT, AttemptEnd, AttemptStatus
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalGrant,
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.receipts import (
    CancelReason,
    FileActivity,
    OutcomeCategory,
    RemediationCode,
    ToolReceipt,
)
from domain.values.storage import RECENT_FILES_LIMIT
from tests.unit.session_story import (
    ATTEMPT,
    ATTEMPT_COMMANDS,
    CALL,
    MISSING_ATTEMPT,
    OTHER_ATTEMPT,
    OTHER_RUN,
    RUN,
    SUCCESS,
    TERMINAL_COMMANDS,
    TOOL,
    AttemptCommand,
    Command,
    after,
    attempt_started,
    commands,
    evaluated,
    history,
    kinds,
    pending,
    read_receipt,
    received,
    refused,
    steps,
    when,
    writer,
)

ALLOWED = evaluated(PolicyDecision.ALLOW)
NEEDS_APPROVAL = evaluated(PolicyDecision.APPROVAL_REQUIRED)
PENDING = pending()


APPROVED = steps(PENDING, lambda s: s.decide_approval(ATTEMPT, ApprovalVerdict.APPROVED, "op"))


def evaluate(decision: PolicyDecision, **options: Any) -> Command:
    """Evaluate ATTEMPT on RUN with `decision`."""
    return lambda s: s.evaluate_policy(RUN, ATTEMPT, decision, rule="rule", **options)


def record(receipt: ToolReceipt) -> Command:
    """Record `receipt` for ATTEMPT on RUN."""
    return lambda s: s.record_receipt(RUN, ATTEMPT, receipt)


ENDED: dict[str, Command] = {
    "receipt": received("/a"),
    "policy-deny": evaluated(PolicyDecision.DENY),
    "deny": steps(ALLOWED, lambda s: s.deny_attempt(RUN, ATTEMPT, DenialCategory.POLICY, "")),
    "correction": steps(
        attempt_started(),
        lambda s: s.issue_correction(RUN, ATTEMPT, RemediationCode.LOAD_TOOL, ""),
    ),
    "unknown": steps(ALLOWED, lambda s: s.mark_attempt_unknown(ATTEMPT, "lost")),
    "rejected": steps(
        PENDING, lambda s: s.decide_approval(ATTEMPT, ApprovalVerdict.REJECTED, "op")
    ),
}
"""Each way ATTEMPT receives its one terminal outcome."""


# -- start and policy ---------------------------------------------------------------------


def test_start_attempt_opens_an_attempt_for_the_writers_run() -> None:
    """Starting an attempt records it with its call and tool, undecided."""
    given = history(writer())
    new = when(given, attempt_started())
    assert [AuthorizationAttemptStarted] == kinds(new)
    attempt = after(given, new).attempts[ATTEMPT]
    expected = (RUN, CALL, TOOL, AttemptStatus.STARTED, None)
    assert expected == (
        attempt.run_id,
        attempt.call_id,
        attempt.tool_name,
        attempt.status,
        attempt.decision,
    )


def test_start_attempt_refuses_a_duplicate_attempt_id() -> None:
    """An attempt id is started at most once."""
    given = history(writer(), attempt_started())
    refused(given, attempt_started(), errors.AttemptAlreadyStartedError)


def test_evaluate_policy_allow_makes_the_attempt_allowed() -> None:
    """An allow decision records PolicyEvaluated alone and allows the attempt."""
    given = history(writer(), attempt_started())
    new = when(given, evaluate(PolicyDecision.ALLOW))
    assert [PolicyEvaluated] == kinds(new)
    assert AttemptStatus.ALLOWED == after(given, new).attempts[ATTEMPT].status


def test_evaluate_policy_approval_required_leaves_the_attempt_open() -> None:
    """An approval-required decision records its mode and waits for a request."""
    given = history(writer(), attempt_started())
    new = when(given, evaluate(PolicyDecision.APPROVAL_REQUIRED, approval_mode=ApprovalMode.DEFER))
    assert [PolicyEvaluated] == kinds(new)
    assert ApprovalMode.DEFER == new[0].approval_mode
    assert AttemptStatus.NEEDS_APPROVAL == after(given, new).attempts[ATTEMPT].status


def test_evaluate_policy_deny_also_denies_the_attempt_in_the_same_command() -> None:
    """A deny decision records PolicyEvaluated and AttemptDenied together."""
    given = history(writer(), attempt_started())
    new = when(given, evaluate(PolicyDecision.DENY, denial=DenialCategory.OUTSIDE_ROOTS))
    assert [PolicyEvaluated, AttemptDenied] == kinds(new)
    assert DenialCategory.OUTSIDE_ROOTS == new[1].category
    attempt = after(given, new).attempts[ATTEMPT]
    assert (AttemptStatus.ENDED, AttemptEnd.DENIED) == (attempt.status, attempt.end)


def test_evaluate_policy_refuses_a_deny_without_a_category() -> None:
    """A deny decision must name the category that denied the attempt."""
    given = history(writer(), attempt_started())
    refused(given, evaluate(PolicyDecision.DENY), errors.DenialCategoryMissingError)


@pytest.mark.parametrize(
    "state", [ALLOWED, NEEDS_APPROVAL, PENDING], ids=["allowed", "needs-approval", "pending"]
)
def test_evaluate_policy_refuses_a_second_evaluation(state: Command) -> None:
    """Policy decides an attempt once."""
    given = history(writer(), state)
    refused(given, evaluate(PolicyDecision.ALLOW), errors.PolicyAlreadyEvaluatedError)


# -- approval -----------------------------------------------------------------------------


def test_request_approval_follows_an_approval_required_decision() -> None:
    """Requesting approval records ApprovalRequested and leaves the attempt pending."""
    given = history(writer(), NEEDS_APPROVAL)
    new = when(given, lambda s: s.request_approval(RUN, ATTEMPT, "read /a", ApprovalMode.REQUEST))
    assert [ApprovalRequested] == kinds(new)
    assert AttemptStatus.APPROVAL_PENDING == after(given, new).attempts[ATTEMPT].status


@pytest.mark.parametrize(
    "state", [attempt_started(), ALLOWED, PENDING], ids=["undecided", "allowed", "pending"]
)
def test_request_approval_refuses_an_attempt_policy_did_not_send(state: Command) -> None:
    """Approval is requested only right after policy asked for it."""
    given = history(writer(), state)
    refused(
        given,
        lambda s: s.request_approval(RUN, ATTEMPT, "read /a", ApprovalMode.REQUEST),
        errors.ApprovalNotRequiredError,
    )


def test_decide_approval_approved_makes_the_attempt_allowed() -> None:
    """An approval records ApprovalDecided and lets a receipt follow."""
    given = history(writer(), PENDING)
    new = when(given, lambda s: s.decide_approval(ATTEMPT, ApprovalVerdict.APPROVED, "op"))
    assert [ApprovalDecided] == kinds(new)
    assert (ApprovalScope.ONCE, "op") == (new[0].scope, new[0].decided_by)
    assert () == after(given, new).approval_grants
    assert AttemptStatus.ALLOWED == after(given, new).attempts[ATTEMPT].status
    assert [ToolReceiptRecorded] == kinds(when([*given, *new], record(SUCCESS)))


@pytest.mark.parametrize(
    ("verdict", "category"),
    [
        (ApprovalVerdict.REJECTED, DenialCategory.APPROVAL_REJECTED),
        (ApprovalVerdict.EXPIRED, DenialCategory.APPROVAL_EXPIRED),
    ],
)
def test_decide_approval_rejected_or_expired_denies_the_attempt(
    verdict: ApprovalVerdict, category: DenialCategory
) -> None:
    """A rejection or an expiry records the decision and a denial of its category."""
    given = history(writer(), PENDING)
    new = when(given, lambda s: s.decide_approval(ATTEMPT, verdict, "op"))
    assert [ApprovalDecided, AttemptDenied] == kinds(new)
    assert category == new[1].category
    assert AttemptEnd.DENIED == after(given, new).attempts[ATTEMPT].end


@pytest.mark.parametrize(
    ("state", "attempt_id"),
    [
        (NEEDS_APPROVAL, ATTEMPT),
        (ALLOWED, ATTEMPT),
        (APPROVED, ATTEMPT),
        (ENDED["rejected"], ATTEMPT),
        (PENDING, MISSING_ATTEMPT),
    ],
    ids=["not-requested", "allowed", "already-approved", "already-rejected", "unknown-attempt"],
)
def test_decide_approval_refuses_without_a_pending_request(state: Command, attempt_id: Any) -> None:
    """An approval decision answers exactly one pending request."""
    given = history(writer(), state)
    refused(
        given,
        lambda s: s.decide_approval(attempt_id, ApprovalVerdict.APPROVED, "op"),
        errors.ApprovalNotPendingError,
    )


# -- terminal outcomes --------------------------------------------------------------------


def test_record_receipt_ends_an_allowed_attempt_with_its_outcome() -> None:
    """A receipt is the allowed attempt's terminal outcome."""
    given = history(writer(), ALLOWED)
    new = when(given, record(ToolReceipt(outcome=OutcomeCategory.NOT_FOUND)))
    assert [ToolReceiptRecorded] == kinds(new)
    attempt = after(given, new).attempts[ATTEMPT]
    expected = (AttemptStatus.ENDED, AttemptEnd.RECEIPT, OutcomeCategory.NOT_FOUND)
    assert expected == (attempt.status, attempt.end, attempt.outcome)


@pytest.mark.parametrize(
    "state", [attempt_started(), NEEDS_APPROVAL, PENDING], ids=["undecided", "needs", "pending"]
)
def test_record_receipt_refuses_an_attempt_without_allow(state: Command) -> None:
    """Nothing ran without an allow decision, so there is nothing to receipt."""
    refused(history(writer(), state), record(SUCCESS), errors.ReceiptWithoutAllowError)


def test_issue_correction_ends_the_attempt_with_a_remediation() -> None:
    """A correction is terminal and names its remediation."""
    given = history(writer(), attempt_started())
    new = when(
        given,
        lambda s: s.issue_correction(RUN, ATTEMPT, RemediationCode.SET_WORKING_DIRECTORY, "cd"),
    )
    assert [CorrectionIssued] == kinds(new)
    assert RemediationCode.SET_WORKING_DIRECTORY == new[0].remediation
    assert AttemptEnd.CORRECTED == after(given, new).attempts[ATTEMPT].end


def test_deny_attempt_ends_an_approved_attempt() -> None:
    """A denial after approval, such as a changed target, is terminal."""
    given = history(writer(), APPROVED)
    new = when(
        given, lambda s: s.deny_attempt(RUN, ATTEMPT, DenialCategory.TARGET_CHANGED, "moved")
    )
    assert [AttemptDenied] == kinds(new)
    assert AttemptEnd.DENIED == after(given, new).attempts[ATTEMPT].end


def test_mark_attempt_unknown_ends_an_open_attempt() -> None:
    """An allowed attempt whose outcome is lost is marked unknown on its run."""
    given = history(writer(), ALLOWED)
    new = when(given, lambda s: s.mark_attempt_unknown(ATTEMPT, "daemon restarted"))
    assert [AttemptOutcomeMarkedUnknown] == kinds(new)
    assert (RUN, "daemon restarted") == (new[0].run_id, new[0].reason)
    assert AttemptEnd.UNKNOWN == after(given, new).attempts[ATTEMPT].end


@pytest.mark.parametrize("ending", list(ENDED))
@commands(TERMINAL_COMMANDS)
def test_ended_attempt_refuses_a_second_outcome(ending: str, command: AttemptCommand) -> None:
    """An attempt has exactly one terminal outcome of any kind."""
    given = history(writer(), ENDED[ending])
    refused(given, lambda s: command(s, RUN, ATTEMPT), errors.AttemptAlreadyEndedError)


@commands(ATTEMPT_COMMANDS)
def test_attempt_commands_refuse_an_attempt_of_another_run(command: AttemptCommand) -> None:
    """The new writer cannot act on an attempt the superseded run started."""
    given = history(writer(), attempt_started(), writer(OTHER_RUN))
    refused(given, lambda s: command(s, OTHER_RUN, ATTEMPT), errors.AttemptRunMismatchError)


@commands(TERMINAL_COMMANDS)
def test_attempt_commands_refuse_an_unknown_attempt(command: AttemptCommand) -> None:
    """An attempt id the session never saw is unknown."""
    given = history(writer(), ALLOWED)
    refused(given, lambda s: command(s, RUN, MISSING_ATTEMPT), errors.UnknownAttemptError)


# -- receipts and the working context -----------------------------------------------------


def activity(path: str) -> FileActivity:
    """A read of `path`."""
    return FileActivity(path=path, operation=FileOperation.READ)


@pytest.mark.parametrize(
    "fields",
    [
        {"outcome": OutcomeCategory.ACCESS_DENIED, "file_activity": (activity("/a"),)},
        {"outcome": OutcomeCategory.CANCELLED, "project_declaration": "/work"},
        {"outcome": OutcomeCategory.RECOVERABLE_CORRECTION},
        {"outcome": OutcomeCategory.SUCCESS, "remediation": RemediationCode.LOAD_TOOL},
        {"outcome": OutcomeCategory.NOT_FOUND, "remediation": RemediationCode.USE_FILE_TOOL},
        {
            "outcome": OutcomeCategory.SUCCESS,
            "file_activity": ({"path": "a", "operation": "read"},),
        },
        {"outcome": OutcomeCategory.SUCCESS, "cancel_reason": CancelReason.CLIENT_CANCELLED},
    ],
    ids=[
        "failure-with-files",
        "failure-with-project",
        "correction-without-remediation",
        "success-with-remediation",
        "not-found-with-remediation",
        "relative-path",
        "success-with-cancel-reason",
    ],
)
def test_tool_receipt_rejects_an_inconsistent_payload(fields: dict[str, Any]) -> None:
    """Only success carries file effects; only a recoverable correction carries a remediation."""
    with pytest.raises(ValidationError):
        ToolReceipt(**fields)


def test_tool_receipt_accepts_a_recoverable_correction_with_its_remediation() -> None:
    """A recoverable correction names the remediation that fixes it, and has no state effect."""
    fixed = ToolReceipt(
        outcome=OutcomeCategory.RECOVERABLE_CORRECTION,
        remediation=RemediationCode.REFRESH_FILE_REVISION,
    )
    assert (RemediationCode.REFRESH_FILE_REVISION, False) == (
        fixed.remediation,
        fixed.has_state_effect,
    )


def test_receipt_with_file_activity_puts_recent_files_most_recent_first() -> None:
    """The working context lists used files newest first, each once."""
    given = history(writer(), received("/a", "/b", attempt_id=OTHER_ATTEMPT), ALLOWED)
    new = when(given, record(read_receipt("/c", "/a")))
    assert [ToolReceiptRecorded, WorkingContextChanged] == kinds(new)
    assert ("/a", "/c", "/b") == new[1].recent_files
    assert ("/a", "/c", "/b") == after(given, new).working_context.recent_files


def test_receipt_keeps_only_the_most_recent_files() -> None:
    """The recent-files list is bounded to RECENT_FILES_LIMIT entries."""
    paths = [f"/f{index}" for index in range(RECENT_FILES_LIMIT + 5)]
    given = history(writer(), ALLOWED)
    new = when(given, record(read_receipt(*paths)))
    expected = tuple(reversed(paths))[:RECENT_FILES_LIMIT]
    assert expected == after(given, new).working_context.recent_files


@pytest.mark.parametrize(
    "receipt",
    [
        SUCCESS,
        ToolReceipt(outcome=OutcomeCategory.TRANSIENT_FAILURE),
        ToolReceipt(
            outcome=OutcomeCategory.RECOVERABLE_CORRECTION,
            remediation=RemediationCode.READ_SPILLED_OUTPUT,
        ),
    ],
    ids=["success-without-files", "failure", "correction"],
)
def test_receipt_without_state_effect_leaves_the_working_context(receipt: ToolReceipt) -> None:
    """A receipt that touched no file records no working-context change."""
    given = history(writer(), received("/a", attempt_id=OTHER_ATTEMPT), ALLOWED)
    new = when(given, record(receipt))
    assert [ToolReceiptRecorded] == kinds(new)
    assert ("/a",) == after(given, new).working_context.recent_files


def test_receipt_repeating_the_newest_file_records_no_context_change() -> None:
    """Reading the newest file again changes nothing, so no change is recorded."""
    given = history(writer(), received("/b", "/a", attempt_id=OTHER_ATTEMPT), ALLOWED)
    assert [ToolReceiptRecorded] == kinds(when(given, record(read_receipt("/a"))))


def test_project_declaration_sets_the_project_directory() -> None:
    """A declared project becomes the project directory and outlives later receipts."""
    given = history(writer(), ALLOWED)
    new = when(given, record(read_receipt(project="/work/project")))
    assert [ToolReceiptRecorded, WorkingContextChanged] == kinds(new)
    assert ("/work/project", ()) == (new[1].project_directory, new[1].recent_files)
    later = when([*given, *new], received("/work/project/a.txt", attempt_id=OTHER_ATTEMPT))
    context = after([*given, *new], later).working_context
    expected = ("/work/project", ("/work/project/a.txt",))
    assert expected == (context.project_directory, context.recent_files)


@pytest.mark.parametrize(
    ("scope", "directory"),
    [(ApprovalScope.SESSION, None), (ApprovalScope.DIRECTORY, "/work/project")],
)
def test_a_standing_approval_becomes_a_grant(scope: ApprovalScope, directory: str | None) -> None:
    """Approving for the session or a directory stores a grant under the request's key."""
    given = history(writer(), pending(grant_key="write_file"))
    new = when(
        given,
        lambda s: s.decide_approval(ATTEMPT, ApprovalVerdict.APPROVED, "op", scope, directory),
    )
    grant = ApprovalGrant(key="write_file", directory=directory)
    assert (grant,) == after(given, new).approval_grants


@pytest.mark.parametrize(
    ("grant_key", "scope", "directory"),
    [
        ("", ApprovalScope.SESSION, None),
        ("write_file", ApprovalScope.DIRECTORY, None),
        ("write_file", ApprovalScope.SESSION, "/work"),
        ("write_file", ApprovalScope.ONCE, "/work"),
    ],
)
def test_an_approval_scope_that_does_not_fit_is_refused(
    grant_key: str, scope: ApprovalScope, directory: str | None
) -> None:
    """No grant key means once only; a directory goes with, and only with, directory scope."""
    refused(
        history(writer(), pending(grant_key=grant_key)),
        lambda s: s.decide_approval(ATTEMPT, ApprovalVerdict.APPROVED, "op", scope, directory),
        errors.InvalidApprovalScopeError,
    )


@pytest.mark.parametrize("outcome", [OutcomeCategory.INVALID_INPUT, OutcomeCategory.CANCELLED])
def test_a_receipt_that_says_the_tool_did_not_run_needs_no_allow(outcome: OutcomeCategory) -> None:
    """Invalid input and cancellation can end an attempt before any allow decision."""
    given = history(writer(), attempt_started())
    new = when(given, lambda s: s.record_receipt(RUN, ATTEMPT, ToolReceipt(outcome=outcome)))
    assert [ToolReceiptRecorded] == kinds(new)
    assert outcome == after(given, new).attempts[ATTEMPT].outcome


def test_a_cancelled_receipt_records_who_cancelled_it_and_old_ones_decode_without() -> None:
    """The reason travels into the event; a receipt stored before reasons existed has none."""
    given = history(writer(), attempt_started())
    cancelled = ToolReceipt(
        outcome=OutcomeCategory.CANCELLED, cancel_reason=CancelReason.CLIENT_CANCELLED
    )
    [event] = when(given, lambda s: s.record_receipt(RUN, ATTEMPT, cancelled))
    assert isinstance(event, ToolReceiptRecorded)
    assert CancelReason.CLIENT_CANCELLED == event.cancel_reason
    stored = event.model_dump(mode="json")
    del stored["cancel_reason"]
    assert ToolReceiptRecorded.model_validate(stored).cancel_reason is None


def test_loading_a_tool_schema_is_recorded_once() -> None:
    """The first load records ToolSchemaLoaded; a second load of the same tool records nothing."""
    given = history(writer())
    new = when(given, lambda s: s.load_tool_schema(RUN, "grep"))
    assert [ToolSchemaLoaded] == kinds(new)
    assert frozenset({"grep"}) == after(given, new).loaded_tools
    assert [] == when([*given, *new], lambda s: s.load_tool_schema(RUN, "grep"))


def test_only_the_latest_ended_attempts_stay_in_the_state() -> None:
    """Long sessions keep a bounded state: open attempts plus the latest ended ones."""
    session = Session.open(
        SessionOpening(SessionId.new(), "k", SessionKind.MAIN, Audience.PERSONAL)
    )
    writer()(session)
    ids = [AttemptId.new() for _ in range(RECENT_ATTEMPTS_LIMIT + 6)]
    spilled = ToolReceipt(outcome=OutcomeCategory.SUCCESS, spill_id=SpillId.new())
    for attempt_id in ids:
        evaluated(PolicyDecision.ALLOW, attempt_id)(session)
        session.record_receipt(RUN, attempt_id, spilled)
    still_open = AttemptId.new()
    evaluated(PolicyDecision.ALLOW, still_open)(session)
    state = session.state()
    assert (RECENT_ATTEMPTS_LIMIT + 6, RECENT_ATTEMPTS_LIMIT + 1) == (
        state.ended_attempts,
        len(state.attempts),
    )
    assert set(ids[6:]) | {still_open} == set(state.attempts)
    assert {CALL: spilled.spill_id} == state.spills
    with pytest.raises(errors.UnknownAttemptError):
        session.record_receipt(RUN, ids[0], spilled)
    with pytest.raises(errors.AttemptAlreadyEndedError):
        session.record_receipt(RUN, ids[-1], spilled)
