"""Each projection fed real aggregate events, its statements run on in-memory SQLite; unit tests."""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import pytest
import sqlite_utils
from pydantic import JsonValue

from domain.base import DomainEvent
from domain.devices.aggregate import DeviceRegistry
from domain.ids import AttemptId, CallId, DeviceId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.shell.confinement import Confinement, SandboxMode
from domain.tools.exposure import NO_SUCH_TOOL
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.receipts import (
    FileActivity,
    InputProblem,
    OutcomeCategory,
    RecordedArguments,
    RemediationCode,
    ShellRun,
    ToolReceipt,
)
from domain.values.runs import RunEndReason, SessionCloseReason
from projections import registry
from projections.authorization_audit import AuthorizationAudit, compact_json
from projections.catalog import SessionCatalog
from projections.contract import Batch, DecodedEvents, Projection
from projections.daily_stats import UNKNOWN_TOOL, DailyStats
from projections.devices import DeviceList
from projections.file_activity import FileActivityLog
from projections.working_context import WorkingContextView

SESSION = SessionId.from_uuid(UUID(int=1))
PARENT = SessionId.from_uuid(UUID(int=2))
RUN = RunId.from_uuid(UUID(int=10))
A1, A2, A3, A4, A5, A6 = (AttemptId.from_uuid(UUID(int=20 + i)) for i in range(6))
PHONE = DeviceId.from_uuid(UUID(int=30))
LAPTOP = DeviceId.from_uuid(UUID(int=31))
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
README = "/work/project/README.md"
NOTES = "/work/project/notes.txt"
PROJECT = "/work/project"
SUCCESS = ToolReceipt(outcome=OutcomeCategory.SUCCESS)

Command = Callable[[Session], object]


# -- driving aggregates and running statements ---------------------------------------------


class Timeline:
    """A session driven by its commands, each step's events stamped at a chosen time."""

    def __init__(self, kind: SessionKind = SessionKind.MAIN, start: datetime = T0) -> None:
        parent = PARENT if kind is SessionKind.SUBAGENT else None
        self.session = Session.open(
            SessionOpening(SESSION, "main:cli", kind, Audience.PERSONAL, parent)
        )
        self.start = start
        self.events: list[DomainEvent] = []
        self.at(0, lambda s: s.start_run(RUN), lambda s: s.claim_writer(RUN))

    def at(self, seconds: float, *commands: Command) -> Timeline:
        """Run `commands` and stamp their events `seconds` after the start."""
        for command in commands:
            command(self.session)
        when = self.start + timedelta(seconds=seconds)
        self.events.extend(e.model_copy(update={"timestamp": when}) for e in collect(self.session))
        return self


def collect(aggregate: Session | DeviceRegistry) -> list[DomainEvent]:
    """The events `aggregate` triggered since it was built or last collected."""
    events = list(aggregate.collect_events())
    assert all(isinstance(e, DomainEvent) for e in events)
    return [e for e in events if isinstance(e, DomainEvent)]


def iso(seconds: float, start: datetime = T0) -> str:
    """The stored form of the time `seconds` after `start`."""
    return (start + timedelta(seconds=seconds)).isoformat()


def started(attempt: AttemptId, tool: str = "read_file") -> Command:
    """Start `attempt` of `tool` on RUN."""
    return lambda s: s.start_attempt(RUN, attempt, CallId(f"call_{attempt.hex[-2:]}"), tool)


def allowed(
    attempt: AttemptId, rule: str = "path access (read)", *targets: FileActivity
) -> Command:
    """Allow `attempt` by `rule`, about `targets`."""
    return lambda s: s.evaluate_policy(
        RUN, attempt, PolicyDecision.ALLOW, rule=rule, targets=targets
    )


def needs_approval(attempt: AttemptId, grant_key: str = "") -> Command:
    """Decide that `attempt` needs consent, and ask for it."""

    def command(session: Session) -> None:
        session.evaluate_policy(
            RUN,
            attempt,
            PolicyDecision.APPROVAL_REQUIRED,
            rule="shell.needs_approval",
            approval_mode=ApprovalMode.REQUEST,
        )
        session.request_approval(RUN, attempt, "touch a.txt", ApprovalMode.REQUEST, grant_key)

    return command


def receipt(attempt: AttemptId, outcome: ToolReceipt = SUCCESS) -> Command:
    """Record `outcome` for `attempt`."""
    return lambda s: s.record_receipt(RUN, attempt, outcome)


def touched(*activity: tuple[str, FileOperation], project: str | None = None) -> ToolReceipt:
    """A successful receipt with `activity` (path, operation)."""
    return ToolReceipt(
        outcome=OutcomeCategory.SUCCESS,
        file_activity=tuple(FileActivity(path=p, operation=o) for p, o in activity),
        project_declaration=project,
    )


def project(projection: Projection, *batches: Sequence[DomainEvent]) -> sqlite3.Connection:
    """A fresh in-memory database with `projection`'s tables, after applying `batches`."""
    db = sqlite3.connect(":memory:")
    tables = sqlite_utils.Database(db)
    for table in projection.tables:
        created = tables.table(table.name)
        created.create(table.columns, pk=table.pk)
        for columns in table.indexes:
            created.create_index(columns)
    log = 0
    for events in batches:
        batch = Batch()
        stored = DecodedEvents.of_events(events, first=log + 1)
        log += len(stored)
        projection.apply_batch(stored, batch)
        for statement in batch.statements:
            if statement.many:
                db.executemany(statement.sql, statement.params)
            else:
                db.execute(statement.sql, tuple(statement.params))
    return db


def rows(db: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    """Every row of `table` in insertion order, as dicts."""
    cursor = db.execute(f"SELECT * FROM {table} ORDER BY rowid")  # noqa: S608 - test tables
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor]


def split(events: Sequence[DomainEvent], size: int) -> list[Sequence[DomainEvent]]:
    """`events` in batches of `size`."""
    return [events[i : i + size] for i in range(0, len(events), size)]


# -- the session catalog -------------------------------------------------------------------


def test_the_catalog_counts_a_sessions_runs_calls_and_denials() -> None:
    """The catalog row counts runs, tool calls and denials, and names the last run's end."""
    timeline = (
        Timeline()
        .at(1, started(A1), allowed(A1), receipt(A1))
        .at(2, started(A2), lambda s: s.deny_attempt(RUN, A2, DenialCategory.POLICY, "no"))
        .at(3, lambda s: s.end_run(RUN, RunEndReason.STRATEGY_STOP, "the run reached 50 turns"))
    )
    expected = {
        "session_id": SESSION,
        "session_key": "main:cli",
        "kind": "main",
        "parent_session_id": None,
        "audience": "personal",
        "client": "main",
        "client_name": None,
        "client_version": None,
        "status": "idle",
        "created_at": iso(0),
        "last_activity_at": iso(3),
        "runs": 1,
        "live_runs": 0,
        "messages": 0,
        "tool_calls": 2,
        "denials": 1,
        "storage_root": None,
        "closed_at": None,
        "close_reason": None,
        "last_run_end": "strategy_stop: the run reached 50 turns",
        "model_requests": 0,
    }
    assert [expected] == rows(
        project(registry.by_name(SessionCatalog.name), timeline.events), "sessions"
    )


def test_a_closed_session_stays_closed_in_the_catalog() -> None:
    """Closing ends the live run first; the row says closed, when and why."""
    timeline = (
        Timeline().at(1, started(A1), allowed(A1)).at(2, lambda s: s.close(SessionCloseReason.IDLE))
    )
    [row] = rows(project(registry.by_name(SessionCatalog.name), timeline.events), "sessions")
    assert (row["status"], row["live_runs"], row["close_reason"], row["closed_at"]) == (
        "closed",
        0,
        "idle",
        iso(2),
    )


# -- working context -----------------------------------------------------------------------


def test_each_context_change_replaces_the_sessions_row() -> None:
    """The row holds the latest project directory and recent files, most recent first."""
    timeline = (
        Timeline()
        .at(1, started(A1), allowed(A1), receipt(A1, touched((README, FileOperation.READ))))
        .at(
            2,
            started(A2, "declare_project"),
            allowed(A2),
            receipt(A2, touched((NOTES, FileOperation.WRITE), project=PROJECT)),
        )
    )
    expected = [
        {
            "session_id": SESSION,
            "project_directory": PROJECT,
            "recent_files": f'["{NOTES}","{README}"]',
            "updated_at": iso(2),
        }
    ]
    assert expected == rows(project(WorkingContextView(), timeline.events), "working_context")


def test_a_subagent_session_has_no_working_context_row() -> None:
    """A subagent keeps its context for the run only, so the view has no row for it."""
    timeline = Timeline(SessionKind.SUBAGENT).at(
        1, started(A1), allowed(A1), receipt(A1, touched((README, FileOperation.READ)))
    )
    assert [] == rows(project(WorkingContextView(), timeline.events), "working_context")


# -- file activity -------------------------------------------------------------------------


def test_a_successful_call_logs_each_file_with_its_tool() -> None:
    """Each path and operation of a successful receipt is one row naming the call's tool."""
    timeline = (
        Timeline()
        .at(1, started(A1, "write_file"), allowed(A1, "path access (write)"))
        .at(
            2,
            receipt(
                A1,
                touched(
                    (NOTES, FileOperation.READ),
                    (NOTES, FileOperation.WRITE),
                    (NOTES, FileOperation.WRITE),
                ),
            ),
        )
        .at(3, started(A2), allowed(A2), receipt(A2, touched((README, FileOperation.READ))))
    )
    db = project(FileActivityLog(), timeline.events)
    base = {"session_id": SESSION, "run_id": RUN}
    expected = [
        {"attempt_id": A1, "path": NOTES, "operation": "read", **base, "tool": "write_file"},
        {"attempt_id": A1, "path": NOTES, "operation": "write", **base, "tool": "write_file"},
        {"attempt_id": A2, "path": README, "operation": "read", **base, "tool": "read_file"},
    ]
    expected = [{**row, "at": iso(2 if row["attempt_id"] == A1 else 3)} for row in expected]
    assert expected == rows(db, "file_activity")
    assert [] == rows(db, "file_activity_attempts")


def test_a_call_started_in_an_earlier_batch_still_names_its_tool() -> None:
    """The tool comes from the helper row written when the attempt started, batches before."""
    timeline = (
        Timeline()
        .at(1, started(A1, "attach_file"), allowed(A1, "path access (attach)"))
        .at(2, receipt(A1, touched((README, FileOperation.ATTACH))))
    )
    db = project(FileActivityLog(), *split(timeline.events, 1))
    assert ["attach_file"] == [row["tool"] for row in rows(db, "file_activity")]


def test_calls_that_did_not_succeed_log_no_file_and_leave_no_helper_row() -> None:
    """Denied, corrected, failed and unknown calls log nothing, and their helper rows go."""
    timeline = (
        Timeline()
        .at(1, started(A1), lambda s: s.deny_attempt(RUN, A1, DenialCategory.POLICY, "no"))
        .at(2, started(A2), lambda s: s.issue_correction(RUN, A2, RemediationCode.LOAD_TOOL, ""))
        .at(
            3, started(A3), allowed(A3), receipt(A3, ToolReceipt(outcome=OutcomeCategory.NOT_FOUND))
        )
        .at(4, started(A4), allowed(A4), lambda s: s.mark_attempt_unknown(A4, "lost"))
    )
    db = project(FileActivityLog(), timeline.events)
    assert ([], []) == (rows(db, "file_activity"), rows(db, "file_activity_attempts"))


SHELL_RUN = ShellRun(
    command="touch notes.txt",
    cwd=PROJECT,
    exit_code=0,
    duration_ms=7,
    output_bytes=3,
    candidates=(PROJECT, NOTES),
)


def shell_started(attempt: AttemptId, command: JsonValue = "touch notes.txt") -> Command:
    """Start a shell attempt on RUN whose recorded arguments hold `command`."""
    recorded = RecordedArguments(arguments={"command": command})
    call = CallId(f"call_{attempt.hex[-2:]}")
    return lambda s: s.start_attempt(RUN, attempt, call, "shell_execute", recorded)


@pytest.mark.parametrize(
    "outcome", [OutcomeCategory.SUCCESS, OutcomeCategory.TRANSIENT_FAILURE], ids=str
)
def test_a_shell_command_logs_the_paths_it_was_checked_for_as_candidates(
    outcome: OutcomeCategory,
) -> None:
    """Its working directory and named paths are shell_candidate rows, never writes."""
    timed_out = outcome is OutcomeCategory.TRANSIENT_FAILURE
    facts = SHELL_RUN.model_copy(
        update={"timed_out": timed_out, "exit_code": None if timed_out else 0}
    )
    timeline = (
        Timeline()
        .at(1, shell_started(A1), allowed(A1, "reviewed-safe: touch"))
        .at(2, receipt(A1, ToolReceipt(outcome=outcome, shell=facts)))
    )
    db = project(FileActivityLog(), *split(timeline.events, 1))
    expected = [
        (PROJECT, "shell_candidate", "shell_execute"),
        (NOTES, "shell_candidate", "shell_execute"),
    ]
    assert expected == [(r["path"], r["operation"], r["tool"]) for r in rows(db, "file_activity")]


def test_the_audit_row_of_a_shell_call_has_its_arguments_command_and_how_it_ran() -> None:
    """The start gives the arguments and the command; the receipt the directory, exit, size."""
    timeline = (
        Timeline()
        .at(1, shell_started(A1), allowed(A1, "reviewed-safe: touch"))
        .at(2, receipt(A1, ToolReceipt(outcome=OutcomeCategory.SUCCESS, shell=SHELL_RUN)))
    )
    [row] = audit(timeline)
    assert {
        "arguments": '{"command":"touch notes.txt"}',
        "command": "touch notes.txt",
        "shell_cwd": PROJECT,
        "shell_exit_code": 0,
        "shell_timed_out": 0,
        "shell_duration_ms": 7,
        "shell_output_bytes": 3,
    } == {key: row[key] for key in ("arguments", "command")} | {
        key: row[key] for key in row if key.startswith("shell_")
    }


def test_the_audit_row_of_a_shell_call_says_which_sandbox_confined_it() -> None:
    """The receipt's confinement becomes the sandbox columns: mode, ABI, network, rules, gaps."""
    confinement = Confinement(
        mode=SandboxMode.BEST_EFFORT,
        abi=3,
        confined=True,
        rules_digest="cd" * 32,
        network=False,
        missing=("TCP bind and connect (ABI 4)", "device ioctl (ABI 5)"),
    )
    receipt_with = ToolReceipt(
        outcome=OutcomeCategory.SUCCESS, shell=SHELL_RUN, confinement=confinement
    )
    timeline = (
        Timeline()
        .at(1, shell_started(A1), allowed(A1, "reviewed-safe: touch"))
        .at(2, receipt(A1, receipt_with))
    )
    [row] = audit(timeline)
    assert {
        "sandbox": "confined (best_effort)",
        "sandbox_abi": 3,
        "sandbox_network": 0,
        "sandbox_rules": "cd" * 32,
        "sandbox_missing": "TCP bind and connect (ABI 4); device ioctl (ABI 5)",
    } == {key: row[key] for key in row if key.startswith("sandbox")}


def test_a_bounded_command_argument_shows_its_head_until_a_receipt_gives_it_whole() -> None:
    """A denied command too long to record whole is known by its first bytes."""
    head: JsonValue = {"sha256": "ab" * 32, "size": 5000, "head": "echo aaaa"}
    timeline = Timeline().at(
        1,
        shell_started(A1, head),
        lambda s: s.evaluate_policy(
            RUN, A1, PolicyDecision.DENY, rule="tool policy", denial=DenialCategory.SHELL_POLICY
        ),
    )
    [row] = audit(timeline)
    assert ("echo aaaa…", "denied") == (row["command"], row["decision"])


def test_the_audit_row_of_invalid_input_names_each_field_and_message() -> None:
    """An invalid-input receipt's problems become the row's detail."""
    problems = (
        InputProblem(field="path", message="Field required"),
        InputProblem(field="limit", message="Input should be a valid integer"),
    )
    invalid = ToolReceipt(outcome=OutcomeCategory.INVALID_INPUT, problems=problems)
    timeline = Timeline().at(1, started(A1), receipt(A1, invalid))
    [row] = audit(timeline)
    expected = "path: Field required; limit: Input should be a valid integer"
    assert (expected, "not_run", "invalid_input") == (
        row["detail"],
        row["decision"],
        row["outcome"],
    )


def test_a_batch_folded_in_memory_gives_the_rows_of_one_event_at_a_time() -> None:
    """Shell runs, sandboxes, invalid input, approvals, corrections, run ends: same rows."""
    confinement = Confinement(
        mode=SandboxMode.REQUIRED, abi=4, confined=False, rules_digest=None, missing=("x",)
    )
    invalid = ToolReceipt(
        outcome=OutcomeCategory.INVALID_INPUT,
        problems=(InputProblem(field="path", message="Field required"),),
    )
    ran = ToolReceipt(outcome=OutcomeCategory.SUCCESS, shell=SHELL_RUN, confinement=confinement)
    read = touched((README, FileOperation.READ), (README, FileOperation.READ))
    timeline = (
        Timeline()
        .at(1, shell_started(A1, {"command": "echo", "limit": 1e-7}), allowed(A1, "ok"))
        .at(2, receipt(A1, ran), started(A2), receipt(A2, invalid))
        .at(3, started(A3, "shell_execute"), needs_approval(A3, "shell:touch"))
        .at(4, lambda s: s.decide_approval(A3, ApprovalVerdict.APPROVED, "alice"))
        .at(5, receipt(A3, read), started(A4, "find_files"))
        .at(6, lambda s: s.issue_correction(RUN, A4, RemediationCode.LOAD_TOOL, "deferred"))
        .at(
            7,
            started(A5),
            allowed(
                A5, "path access (read)", FileActivity(path=NOTES, operation=FileOperation.READ)
            ),
        )
        .at(7, started(A6, "shell_execute"), needs_approval(A6))
        .at(9, lambda s: s.end_run(RUN, RunEndReason.ABORT))
    )
    for projection in (AuthorizationAudit(), DailyStats(), FileActivityLog(), SessionCatalog()):
        whole = project(projection, timeline.events)
        one_by_one = project(projection, *split(timeline.events, 1))
        for table in projection.tables:
            expected = sorted(rows(one_by_one, table.name), key=repr)
            assert expected == sorted(rows(whole, table.name), key=repr), table.name


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {"path": "é/\n\u2028", "n": [1, 2.5, None, True]},
            '{"path":"é/\\n\u2028","n":[1,2.5,null,true]}',
        ),
        ({"tiny": 1e-7, "huge": 1e16}, '{"tiny":1e-7,"huge":1e+16}'),
        ({"past_64_bits": 2**70}, '{"past_64_bits":1180591620717411303424}'),
    ],
    ids=["text", "floats", "big-int"],
)
def test_the_audit_writes_recorded_arguments_as_compact_json(value: object, text: str) -> None:
    """Compact, non-ASCII kept, floats in their shortest form; an integer past 64 bits too."""
    assert text == compact_json(value)


# -- devices -------------------------------------------------------------------------------


def test_devices_show_pairing_last_seen_and_revocation_and_never_the_secret() -> None:
    """A row per device with its times; the salt and the token hash are not stored."""
    paired_at = datetime(2026, 1, 1, tzinfo=UTC)
    registry_ = DeviceRegistry.create()
    registry_.pair(PHONE, "Pixel", bytes(range(16)), "s" * 40, paired_at)
    registry_.pair(LAPTOP, "ThinkPad", bytes(range(16, 32)), "t" * 40, paired_at)
    registry_.mark_seen(PHONE, paired_at + timedelta(hours=1))
    registry_.revoke(LAPTOP, paired_at + timedelta(hours=2))
    events = collect(registry_)
    expected = [
        {
            "device_id": PHONE,
            "name": "Pixel",
            "created_at": "2026-01-01T00:00:00+00:00",
            "last_seen_at": "2026-01-01T01:00:00+00:00",
            "revoked_at": None,
        },
        {
            "device_id": LAPTOP,
            "name": "ThinkPad",
            "created_at": "2026-01-01T00:00:00+00:00",
            "last_seen_at": None,
            "revoked_at": "2026-01-01T02:00:00+00:00",
        },
    ]
    assert expected == rows(project(DeviceList(), events), "devices")


# -- authorization audit -------------------------------------------------------------------


def audited(attempt: AttemptId, tool: str = "read_file", **changes: Any) -> dict[str, Any]:
    """The audit row of `attempt` started at second 1, with `changes`."""
    return {
        "attempt_id": attempt,
        "session_id": SESSION,
        "run_id": RUN,
        "call_id": f"call_{attempt.hex[-2:]}",
        "tool": tool,
        "operations": "[]",
        "paths": "[]",
        "decision": "pending",
        "rule": None,
        "approval_mode": None,
        "reviewed_safe": 0,
        "failure_category": None,
        "detail": None,
        "approval_asked": 0,
        "grant_key": None,
        "approval_verdict": None,
        "approval_scope": None,
        "decided_by": None,
        "decided_at": None,
        "outcome": None,
        "remediation": None,
        "spill_id": None,
        "started_at": iso(1),
        "ended_at": None,
        "duration_ms": None,
        "arguments": None,
        "bounded_arguments": None,
        "arguments_spill_id": None,
        "command": None,
        "shell_cwd": None,
        "shell_exit_code": None,
        "shell_timed_out": None,
        "shell_duration_ms": None,
        "shell_output_bytes": None,
        "sandbox": None,
        "sandbox_abi": None,
        "sandbox_network": None,
        "sandbox_rules": None,
        "sandbox_missing": None,
    } | changes


def audit(timeline: Timeline) -> list[dict[str, Any]]:
    """The audit rows after `timeline`, applied one event per batch."""
    return rows(project(AuthorizationAudit(), *split(timeline.events, 1)), "authorization_audit")


def test_an_allowed_call_records_its_targets_rule_outcome_and_duration() -> None:
    """The decision's distinct operations and paths, its rule, the outcome, and the time."""
    targets = (
        FileActivity(path=README, operation=FileOperation.READ),
        FileActivity(path=NOTES, operation=FileOperation.WRITE),
        FileActivity(path=README, operation=FileOperation.WRITE),
    )
    timeline = (
        Timeline()
        .at(1, started(A1, "edit_file"))
        .at(1.5, allowed(A1, "path access (write)", *targets))
        .at(3.25, receipt(A1, touched((NOTES, FileOperation.WRITE))))
    )
    expected = audited(
        A1,
        "edit_file",
        operations='["read","write"]',
        paths=f'["{README}","{NOTES}"]',
        decision="allowed",
        rule="path access (write)",
        outcome="success",
        ended_at=iso(3.25),
        duration_ms=2250.0,
    )
    assert [expected] == audit(timeline)


def test_a_receipt_names_the_paths_of_a_call_whose_decision_named_none() -> None:
    """Without decided targets, the operations and paths come from the receipt."""
    timeline = Timeline().at(
        1,
        started(A1, "shell_execute"),
        allowed(A1, "reviewed-safe: cat"),
        receipt(A1, touched((README, FileOperation.READ))),
    )
    expected = audited(
        A1,
        "shell_execute",
        operations='["read"]',
        paths=f'["{README}"]',
        decision="allowed",
        rule="reviewed-safe: cat",
        reviewed_safe=1,
        outcome="success",
        ended_at=iso(1),
        duration_ms=0.0,
    )
    assert [expected] == audit(timeline)


def test_a_policy_denial_records_its_category_and_why() -> None:
    """A deny ends the call as denied, with the rule, the denial category and the detail."""
    timeline = (
        Timeline()
        .at(1, started(A1))
        .at(
            2,
            lambda s: s.evaluate_policy(
                RUN,
                A1,
                PolicyDecision.DENY,
                rule="path access (read)",
                detail="/etc/hostname is outside every root",
                denial=DenialCategory.OUTSIDE_ROOTS,
                targets=(FileActivity(path="/etc/hostname", operation=FileOperation.READ),),
            ),
        )
    )
    expected = audited(
        A1,
        operations='["read"]',
        paths='["/etc/hostname"]',
        decision="denied",
        rule="path access (read)",
        failure_category="outside_roots",
        detail="/etc/hostname is outside every root",
        ended_at=iso(2),
        duration_ms=1000.0,
    )
    assert [expected] == audit(timeline)


def test_an_approved_call_records_who_approved_what_and_when() -> None:
    """The request, the operator's verdict, scope and time, then the receipt."""
    timeline = (
        Timeline()
        .at(1, started(A1, "shell_execute"), needs_approval(A1, "shell:touch"))
        .at(
            5,
            lambda s: s.decide_approval(
                A1, ApprovalVerdict.APPROVED, "alice", ApprovalScope.SESSION
            ),
        )
        .at(6, receipt(A1))
    )
    expected = audited(
        A1,
        "shell_execute",
        decision="allowed",
        rule="shell.needs_approval",
        approval_mode="request",
        approval_asked=1,
        grant_key="shell:touch",
        approval_verdict="approved",
        approval_scope="session",
        decided_by="alice",
        decided_at=iso(5),
        outcome="success",
        ended_at=iso(6),
        duration_ms=5000.0,
    )
    assert [expected] == audit(timeline)


@pytest.mark.parametrize(
    ("verdict", "category"),
    [
        (ApprovalVerdict.REJECTED, DenialCategory.APPROVAL_REJECTED),
        (ApprovalVerdict.EXPIRED, DenialCategory.APPROVAL_EXPIRED),
    ],
)
def test_a_rejected_or_expired_approval_denies_the_call(
    verdict: ApprovalVerdict, category: DenialCategory
) -> None:
    """A rejection or an expiry is a denial, with the verdict and who gave it."""
    timeline = (
        Timeline()
        .at(1, started(A1, "shell_execute"), needs_approval(A1))
        .at(3, lambda s: s.decide_approval(A1, verdict, "alice"))
    )
    expected = audited(
        A1,
        "shell_execute",
        decision="denied",
        rule="shell.needs_approval",
        approval_mode="request",
        failure_category=str(category),
        detail=f"approval {verdict} by alice",
        approval_asked=1,
        approval_verdict=str(verdict),
        approval_scope="once",
        decided_by="alice",
        decided_at=iso(3),
        ended_at=iso(3),
        duration_ms=2000.0,
    )
    assert [expected] == audit(timeline)


def test_a_target_change_after_approval_denies_the_approved_call() -> None:
    """An approved call whose target changed ends denied, keeping the approval on record."""
    timeline = (
        Timeline()
        .at(1, started(A1, "write_file"), needs_approval(A1))
        .at(2, lambda s: s.decide_approval(A1, ApprovalVerdict.APPROVED, "alice"))
        .at(
            2.5,
            lambda s: s.deny_attempt(RUN, A1, DenialCategory.TARGET_CHANGED, "data is a link now"),
        )
    )
    [row] = audit(timeline)
    expected = ("denied", "target_changed", "data is a link now", "approved", 1500.0)
    actual = tuple(
        row[c]
        for c in ("decision", "failure_category", "detail", "approval_verdict", "duration_ms")
    )
    assert expected == actual


def test_a_receipt_before_any_allow_is_not_run() -> None:
    """Invalid input ends a pending call with a receipt: the tool never ran."""
    invalid = ToolReceipt(outcome=OutcomeCategory.INVALID_INPUT)
    timeline = Timeline().at(1, started(A1)).at(1.001, receipt(A1, invalid))
    expected = audited(
        A1, decision="not_run", outcome="invalid_input", ended_at=iso(1.001), duration_ms=1.0
    )
    assert [expected] == audit(timeline)


def test_a_correction_ends_the_call_as_corrected() -> None:
    """A correction is terminal and names its remediation."""
    timeline = Timeline().at(
        1,
        started(A1, "find_files"),
        lambda s: s.issue_correction(RUN, A1, RemediationCode.LOAD_TOOL, "find_files is deferred"),
    )
    expected = audited(
        A1,
        "find_files",
        decision="corrected",
        remediation="load_tool",
        detail="find_files is deferred",
        ended_at=iso(1),
        duration_ms=0.0,
    )
    assert [expected] == audit(timeline)


def test_ending_a_run_ends_its_open_calls_as_unknown_or_denied() -> None:
    """An allowed call gets the outcome unknown; a pending one is denied as run_ended."""
    timeline = (
        Timeline()
        .at(1, started(A1, "shell_execute"), allowed(A1, "reviewed-safe: ls"))
        .at(1, started(A2, "shell_execute"), needs_approval(A2))
        .at(4, lambda s: s.end_run(RUN, RunEndReason.ABORT))
    )
    expected = [
        audited(
            A1,
            "shell_execute",
            decision="allowed",
            rule="reviewed-safe: ls",
            reviewed_safe=1,
            outcome="unknown",
            detail="run ended: abort",
            ended_at=iso(4),
            duration_ms=3000.0,
        ),
        audited(
            A2,
            "shell_execute",
            decision="denied",
            rule="shell.needs_approval",
            approval_mode="request",
            approval_asked=1,
            failure_category="run_ended",
            detail="run ended (abort) before the attempt was allowed",
            ended_at=iso(4),
            duration_ms=3000.0,
        ),
    ]
    assert expected == audit(timeline)


# -- daily statistics ----------------------------------------------------------------------


def stat(tool: str, outcome: str, *durations: float, **counts: int) -> dict[str, Any]:
    """The daily_stats row of `tool` and `outcome` on T0's day, one call per duration."""
    return {
        "day": "2026-03-01",
        "tool": tool,
        "outcome": outcome,
        "calls": len(durations),
        "total_duration_ms": sum(durations),
        "p95_duration_ms": sorted(durations)[-(-95 * len(durations) // 100) - 1],
        "denials": 0,
        "approvals_asked": 0,
        "approvals_granted": 0,
        "approvals_timed_out": 0,
    } | counts


def test_calls_are_counted_per_day_tool_and_outcome() -> None:
    """Counters, durations, denials and approvals land in the group each call ended in."""
    timeline = (
        Timeline()
        .at(0, started(A1), allowed(A1))
        .at(2, receipt(A1))
        .at(3, started(A2), allowed(A2))
        .at(4, receipt(A2))
        .at(5, started(A3))
        .at(5.5, lambda s: s.deny_attempt(RUN, A3, DenialCategory.POLICY, "no"))
        .at(6, started(A4, "shell_execute"), needs_approval(A4))
        .at(8, lambda s: s.decide_approval(A4, ApprovalVerdict.APPROVED, "alice"))
        .at(9, receipt(A4))
        .at(10, started(A5, "shell_execute"), needs_approval(A5))
        .at(12, lambda s: s.decide_approval(A5, ApprovalVerdict.EXPIRED, "timeout"))
        .at(13, started(A6, "find_files"))
        .at(13.1, lambda s: s.issue_correction(RUN, A6, RemediationCode.LOAD_TOOL, ""))
    )
    db = project(DailyStats(), *split(timeline.events, 4))
    expected = [
        stat("read_file", "success", 2000.0, 1000.0),
        stat("read_file", "denied", 500.0, denials=1),
        stat("shell_execute", "success", 3000.0, approvals_asked=1, approvals_granted=1),
        stat(
            "shell_execute", "denied", 2000.0, denials=1, approvals_asked=1, approvals_timed_out=1
        ),
        stat("find_files", "corrected", 100.0),
    ]
    assert expected == rows(db, "daily_stats")
    assert [] == rows(db, "daily_attempts")
    assert [A1, A2, A3, A4, A5, A6] == [row["attempt_id"] for row in rows(db, "daily_durations")]


@pytest.mark.parametrize(("calls", "p95"), [(1, 1000.0), (2, 2000.0), (20, 19000.0), (21, 20000.0)])
def test_p95_is_the_nearest_rank_duration(calls: int, p95: float) -> None:
    """With durations of 1..n seconds the p95 is the ceil(0.95 n)-th smallest, across batches."""
    attempts = [AttemptId.from_uuid(UUID(int=100 + i)) for i in range(calls)]
    timeline = Timeline()
    for attempt in attempts:
        timeline.at(0, started(attempt), allowed(attempt))
    for seconds, attempt in enumerate(attempts, start=1):
        timeline.at(seconds, receipt(attempt))
    [row] = rows(project(DailyStats(), *split(timeline.events, 7)), "daily_stats")
    assert (calls, p95) == (row["calls"], row["p95_duration_ms"])


def test_the_day_is_the_utc_date_the_call_started() -> None:
    """A call started before midnight UTC (01:30 at +02:00) counts on that day when it ends."""
    start = datetime(2026, 3, 2, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    timeline = Timeline(start=start).at(0, started(A1), allowed(A1)).at(5400, receipt(A1))
    [row] = rows(project(DailyStats(), timeline.events), "daily_stats")
    assert ("2026-03-01", 5_400_000.0) == (row["day"], row["total_duration_ms"])


def test_a_group_is_recomputed_when_a_later_batch_ends_another_call() -> None:
    """Counters add up and the p95 follows each batch that ends a call of the group."""
    timeline = (
        Timeline()
        .at(0, started(A1), allowed(A1), started(A2), allowed(A2))
        .at(1, receipt(A1))
        .at(3, receipt(A2))
    )
    first, second = timeline.events[:-1], timeline.events[-1:]
    assert [stat("read_file", "success", 1000.0, 3000.0)] == rows(
        project(DailyStats(), first, second), "daily_stats"
    )


def not_exposed(attempt: AttemptId, detail: str) -> Command:
    """Deny `attempt` at the exposure step, as the pipeline does, for `detail`."""
    return lambda s: s.evaluate_policy(
        RUN,
        attempt,
        PolicyDecision.DENY,
        rule="exposure",
        detail=detail,
        denial=DenialCategory.NOT_EXPOSED,
    )


def test_made_up_tool_names_share_one_row_and_keep_their_names_in_the_audit() -> None:
    """Two unregistered names count as `(unknown)`; a hidden real tool keeps its own row."""
    timeline = (
        Timeline()
        .at(0, started(A1, "shel_execute"), not_exposed(A1, NO_SUCH_TOOL))
        .at(1, started(A2, "read_fiel"))
        .at(1.5, not_exposed(A2, NO_SUCH_TOOL))
        .at(2, started(A3, "shell_execute"))
        .at(2.25, not_exposed(A3, "denied for public sessions"))
    )
    db = project(DailyStats(), *split(timeline.events, 3))
    expected = [
        stat(UNKNOWN_TOOL, "denied", 0.0, 500.0, denials=2),
        stat("shell_execute", "denied", 250.0, denials=1),
    ]
    assert expected == rows(db, "daily_stats")
    audited_tools = [row["tool"] for row in audit(timeline)]
    assert ["shel_execute", "read_fiel", "shell_execute"] == audited_tools


# -- the registry --------------------------------------------------------------------------


def test_every_projection_is_found_by_its_name() -> None:
    """`by_name` returns the registered projection of that name."""
    assert list(registry.ALL_PROJECTIONS) == [
        registry.by_name(p.name) for p in registry.ALL_PROJECTIONS
    ]


def test_an_unknown_projection_name_is_refused() -> None:
    """A name no projection has raises UnknownProjectionError naming the known ones."""
    with pytest.raises(registry.UnknownProjectionError, match="known: sessions"):
        registry.by_name("nope")


def test_no_two_projections_share_a_name_or_a_table() -> None:
    """Positions and rebuilds are per projection, so names and tables are never shared."""
    names = [p.name for p in registry.ALL_PROJECTIONS]
    tables = [t.name for p in registry.ALL_PROJECTIONS for t in p.tables]
    assert (len(set(names)), len(set(tables))) == (len(names), len(tables))


def test_table_docs_describe_each_public_table_in_one_line() -> None:
    """Every projection's main table has a one-line description; helper tables have none."""
    expected = [
        "sessions",
        "working_context",
        "authorization_audit",
        "file_activity",
        "daily_stats",
        "devices",
    ]
    assert expected == list(registry.TABLE_DOCS)
    assert all(doc and "\n" not in doc for doc in registry.TABLE_DOCS.values())


def test_every_projection_module_names_its_layer() -> None:
    """Each projection's module docstring ends by naming the projection layer."""
    modules = {type(p).__module__ for p in registry.ALL_PROJECTIONS} | {registry.__name__}
    docs = {m: importlib.import_module(m).__doc__ or "" for m in modules}
    assert [] == [m for m, doc in docs.items() if not doc.rstrip().endswith("; projection layer.")]
