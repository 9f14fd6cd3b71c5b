"""The dispatcher on a real journal: each way a call can end, read back from the journal."""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from adapters.errors import JournalError
from adapters.runtime.approvers import StandingApprover, TerminalApprover
from adapters.settings.journal import JournalSettings
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.session.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptDenied,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    PolicyEvaluated,
    SessionEvent,
    ToolReceiptRecorded,
    ToolSchemaLoaded,
    WorkingContextChanged,
)
from domain.tools.exposure import ExposurePolicy
from domain.values.attempts import AttemptEnd
from domain.values.audience import Audience
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.receipts import OutcomeCategory, RemediationCode
from tests.pipeline import ALL, Pipeline, approving, make_pipeline

E = TypeVar("E")


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    """A pipeline with no configured roots: the session's envelope is its only root."""
    built = make_pipeline(tmp_path)
    yield built
    built.close()


def _of(pipeline: Pipeline, kind: type[E]) -> list[E]:
    return [e for e in pipeline.events() if isinstance(e, kind)]


def _terminal_events(pipeline: Pipeline) -> list[SessionEvent]:
    kinds = (ToolReceiptRecorded, AttemptDenied, CorrectionIssued)
    return [e for e in pipeline.events() if isinstance(e, kinds)]


class BlockingApprover:
    """An operator who never answers until cancelled."""

    def available(self) -> bool:
        """Someone is there."""
        return True

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Wait forever."""
        del request
        await anyio.sleep_forever()
        return None

    async def report(self, request: ApprovalRequest) -> None:
        """Nothing to report."""
        del request


class SwappingApprover(StandingApprover):
    """Approves, but first swaps the call's directory for a link to somewhere else."""

    def __init__(self, directory: Path, elsewhere: Path) -> None:
        super().__init__(ApprovalVerdict.APPROVED, "swapping operator")
        self.directory = directory
        self.elsewhere = elsewhere

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Swap, then approve."""
        shutil.rmtree(self.directory)
        self.directory.symlink_to(self.elsewhere)
        return await super().ask(request)


# -- denied ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_denied_call_is_journaled_with_its_category_and_never_runs(pipeline) -> None:
    """A read outside every root ends as a denial; the journal holds the decision and why."""
    result = await pipeline.call("read_file", path="/etc/hostname")
    assert AttemptEnd.DENIED == result.end
    assert DenialCategory.OUTSIDE_ROOTS == result.denial
    [decision] = _of(pipeline, PolicyEvaluated)
    assert (PolicyDecision.DENY, "path access (read)") == (decision.decision, decision.rule)
    [denied] = _of(pipeline, AttemptDenied)
    assert DenialCategory.OUTSIDE_ROOTS == denied.category
    assert "/etc/hostname" in denied.detail
    assert [] == _of(pipeline, ToolReceiptRecorded)


@pytest.mark.anyio
async def test_the_database_is_denied_even_under_a_configured_root(tmp_path: Path) -> None:
    """A root over the whole home still cannot open the journal or its WAL."""
    pipeline = make_pipeline(tmp_path, roots=[(tmp_path, ALL)])
    try:
        for name in ("ledgerclaw.db", "ledgerclaw.db-wal", "config.toml"):
            result = await pipeline.call("read_file", path=str(pipeline.home.root / name))
            assert DenialCategory.PROTECTED_PATH == result.denial
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_an_unknown_tool_is_denied_as_not_exposed(pipeline) -> None:
    """A name that is not registered is refused before any authorization."""
    result = await pipeline.call("delete_everything")
    assert DenialCategory.NOT_EXPOSED == result.denial
    assert "no such tool" in result.text


@pytest.mark.anyio
async def test_a_hidden_tool_is_denied_for_its_audience(tmp_path: Path) -> None:
    """Public sessions do not see the shell, so a shell call is not exposed."""
    pipeline = make_pipeline(tmp_path, audience=Audience.PUBLIC, approver=approving())
    try:
        result = await pipeline.call("shell_execute", command="ls")
        assert DenialCategory.NOT_EXPOSED == result.denial
        assert "denied for public sessions" in result.text
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_invalid_arguments_are_a_receipt_not_an_exception(pipeline) -> None:
    """Missing and mistyped arguments end the attempt with an invalid_input receipt."""
    result = await pipeline.call("read_file", start_line="first")
    assert (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT) == (result.end, result.outcome)
    assert "path" in result.text
    assert [] == _of(pipeline, PolicyEvaluated)
    [receipt] = _of(pipeline, ToolReceiptRecorded)
    assert OutcomeCategory.INVALID_INPUT == receipt.outcome


# -- approved, rejected, no one to ask ---------------------------------------------------


@pytest.mark.anyio
async def test_an_approved_call_records_request_decision_and_receipt(tmp_path: Path) -> None:
    """A shell command that needs consent runs after approval, all in one attempt."""
    approver = approving()
    pipeline = make_pipeline(tmp_path, approver=approver)
    try:
        result = await pipeline.call("shell_execute", command="touch made.txt")
        assert OutcomeCategory.SUCCESS == result.outcome
        assert (pipeline.workspace / "made.txt").exists()
        [requested] = _of(pipeline, ApprovalRequested)
        [decided] = _of(pipeline, ApprovalDecided)
        [receipt] = _of(pipeline, ToolReceiptRecorded)
        assert ApprovalMode.REQUEST == requested.mode
        assert (ApprovalVerdict.APPROVED, "test operator") == (decided.verdict, decided.decided_by)
        assert {result.attempt_id} == {requested.attempt_id, decided.attempt_id, receipt.attempt_id}
        assert 1 == len(_of(pipeline, AuthorizationAttemptStarted))
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_rejected_call_is_denied_and_never_runs(tmp_path: Path) -> None:
    """A rejection ends the attempt as approval_rejected; the command never ran."""
    pipeline = make_pipeline(tmp_path, approver=approving(ApprovalVerdict.REJECTED))
    try:
        result = await pipeline.call("shell_execute", command="touch made.txt")
        assert DenialCategory.APPROVAL_REJECTED == result.denial
        assert not (pipeline.workspace / "made.txt").exists()
        assert [] == _of(pipeline, ToolReceiptRecorded)
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_call_that_needs_consent_is_denied_when_no_one_can_be_asked(pipeline) -> None:
    """Without an approver the call is denied at once instead of hanging."""
    result = await pipeline.call("shell_execute", command="touch made.txt")
    assert DenialCategory.NO_APPROVER == result.denial
    assert not (pipeline.workspace / "made.txt").exists()
    assert [] == _of(pipeline, ApprovalRequested)


@pytest.mark.anyio
async def test_a_reviewed_safe_command_runs_without_asking(tmp_path: Path) -> None:
    """`ls` is reviewed-safe: allowed by that rule, and the operator is never asked."""
    approver = approving()
    pipeline = make_pipeline(tmp_path, approver=approver)
    try:
        result = await pipeline.call("shell_execute", command="ls")
        assert OutcomeCategory.SUCCESS == result.outcome
        [decision] = _of(pipeline, PolicyEvaluated)
        assert "reviewed-safe: ls" == decision.rule
        assert [] == approver.asked
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_session_approval_covers_the_same_command_only(tmp_path: Path) -> None:
    """Approving for the session lets the same command run again unasked, not another one."""

    class SessionApprover(StandingApprover):
        async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
            self.asked.append(request)
            return ApprovalAnswer(
                verdict=ApprovalVerdict.APPROVED,
                decided_by="operator",
                scope=ApprovalScope.SESSION,
            )

    approver = SessionApprover(ApprovalVerdict.APPROVED, "operator")
    pipeline = make_pipeline(tmp_path, approver=approver)
    try:
        await pipeline.call("shell_execute", command="touch a.txt")
        second = await pipeline.call("shell_execute", command="touch a.txt")
        assert OutcomeCategory.SUCCESS == second.outcome
        assert 1 == len(approver.asked)
        assert "standing approval" == _of(pipeline, PolicyEvaluated)[-1].rule
        await pipeline.call("shell_execute", command="touch b.txt")
        assert 2 == len(approver.asked)
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_an_unparseable_command_is_approved_once_only(tmp_path: Path) -> None:
    """A command with `$` needs approval and can never be granted beyond this call."""
    approver = approving()
    pipeline = make_pipeline(tmp_path, approver=approver)
    try:
        result = await pipeline.call("shell_execute", command="echo $TMPDIR")
        assert str(pipeline.run.tmp_dir) in result.text
        assert "" == approver.asked[0].grant_key
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_report_mode_runs_without_waiting_and_tells_the_operator(tmp_path: Path) -> None:
    """Report mode allows the call at once and reports it to the approver."""
    approver = approving()
    pipeline = make_pipeline(
        tmp_path,
        approver=approver,
        exposure=ExposurePolicy(approval_modes={"write_file": ApprovalMode.REPORT}),
    )
    try:
        result = await pipeline.call("write_file", path="a.txt", content="x")
        assert OutcomeCategory.SUCCESS == result.outcome
        assert ([], 1) == (approver.asked, len(approver.reported))
        assert ApprovalMode.REPORT == _of(pipeline, PolicyEvaluated)[0].approval_mode
    finally:
        pipeline.close()


# -- the approval-then-swap race -----------------------------------------------------------


@pytest.mark.anyio
async def test_a_directory_swapped_for_a_link_during_approval_is_denied(tmp_path: Path) -> None:
    """After approval the target is resolved again; a swapped-in link is target_changed."""
    outside = tmp_path / "outside"
    outside.mkdir()
    pipeline = make_pipeline(tmp_path)
    data = pipeline.workspace / "data"
    data.mkdir()
    swapper = SwappingApprover(data, outside)
    pipeline.dispatcher.approver = swapper
    pipeline.dispatcher.policy = pipeline.dispatcher.policy.__class__(
        **{
            **pipeline.dispatcher.policy.__dict__,
            "exposure": ExposurePolicy(approval_modes={"write_file": ApprovalMode.REQUEST}),
        }
    )
    try:
        result = await pipeline.call("write_file", path="data/secret.txt", content="x")
        assert DenialCategory.TARGET_CHANGED == result.denial
        assert not (outside / "secret.txt").exists()
        assert [ApprovalDecided] == [type(e) for e in _of(pipeline, ApprovalDecided)]
        [denied] = _of(pipeline, AttemptDenied)
        assert DenialCategory.TARGET_CHANGED == denied.category
        assert [] == _of(pipeline, ToolReceiptRecorded)
    finally:
        pipeline.close()


# -- corrected ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_deferred_tool_gets_a_load_tool_correction_then_works(pipeline) -> None:
    """find_files is deferred: the first call is corrected, load_tool makes it callable."""
    (pipeline.workspace / "a.py").write_text("x")
    corrected = await pipeline.call("find_files", pattern="*.py")
    assert (AttemptEnd.CORRECTED, RemediationCode.LOAD_TOOL) == (
        corrected.end,
        corrected.remediation,
    )
    assert "Next action: call load_tool" in corrected.text
    [correction] = _of(pipeline, CorrectionIssued)
    assert RemediationCode.LOAD_TOOL == correction.remediation
    loaded = await pipeline.call("load_tool", name="find_files")
    assert OutcomeCategory.SUCCESS == loaded.outcome
    assert ["find_files"] == [e.tool_name for e in _of(pipeline, ToolSchemaLoaded)]
    found = await pipeline.call("find_files", pattern="*.py")
    assert OutcomeCategory.SUCCESS == found.outcome
    assert "a.py" in found.text


@pytest.mark.anyio
async def test_a_stale_revision_is_a_recoverable_correction(pipeline) -> None:
    """edit_file with an old revision runs, changes nothing, and says to read again."""
    target = pipeline.workspace / "notes.txt"
    target.write_text("one\n")
    result = await pipeline.call(
        "edit_file", path="notes.txt", old_text="one", new_text="two", revision="sha256:0"
    )
    assert OutcomeCategory.RECOVERABLE_CORRECTION == result.outcome
    assert RemediationCode.REFRESH_FILE_REVISION == result.remediation
    assert "Next action: call read_file" in result.text
    assert "one\n" == target.read_text()
    [receipt] = _of(pipeline, ToolReceiptRecorded)
    assert RemediationCode.REFRESH_FILE_REVISION == receipt.remediation


@pytest.mark.anyio
async def test_the_presenter_keeps_the_result_when_the_named_tool_is_hidden(
    tmp_path: Path,
) -> None:
    """With read_file hidden, a stale revision gets its facts but no instruction."""
    pipeline = make_pipeline(
        tmp_path,
        exposure=ExposurePolicy(approval_modes={"read_file": ApprovalMode.DENY}),
    )
    try:
        (pipeline.workspace / "notes.txt").write_text("one\n")
        result = await pipeline.call(
            "edit_file", path="notes.txt", old_text="one", new_text="two", revision="sha256:0"
        )
        assert OutcomeCategory.RECOVERABLE_CORRECTION == result.outcome
        assert "Next action" not in result.text
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_no_relative_base_is_a_set_working_directory_correction(pipeline) -> None:
    """Without a project or workspace directory a relative path cannot be resolved."""
    shutil.rmtree(pipeline.workspace)
    result = await pipeline.call("read_file", path="notes.txt")
    assert RemediationCode.SET_WORKING_DIRECTORY == result.remediation
    assert "Next action: call set_working_directory" in result.text


# -- spilled -----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_large_result_is_spilled_and_read_back_by_call_id(tmp_path: Path) -> None:
    """Output past the inline bound is kept whole; tool_output_read reads it by call id."""
    pipeline = make_pipeline(tmp_path, inline_limit=1000)
    try:
        lines = [f"line {n:05d} " + "x" * 40 for n in range(200)]
        (pipeline.workspace / "big.txt").write_text("\n".join(lines) + "\n")
        request = pipeline.request("read_file", path="big.txt")
        result = await pipeline.dispatcher.call(pipeline.run, request)
        assert result.spill_id is not None
        assert "Next action: call tool_output_read" in result.text
        assert str(pipeline.run.envelope.root) not in result.text.split("\n", 1)[1]
        assert "spills" not in result.text
        [receipt] = _of(pipeline, ToolReceiptRecorded)
        assert result.spill_id == receipt.spill_id
        window = await pipeline.call(
            "tool_output_read", call_id=request.call_id, start=1000, limit=500
        )
        assert OutcomeCategory.SUCCESS == window.outcome
        assert "line 0000" not in window.text
        assert "next start: 1500" in window.text
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_secrets_are_redacted_before_bounding_and_spilling(tmp_path: Path) -> None:
    """An exact secret value never reaches the result, inline or spilled."""
    secret = "hunter2-very-secret"
    pipeline = make_pipeline(tmp_path, secrets=frozenset({secret}), inline_limit=1000)
    try:
        (pipeline.workspace / "a.txt").write_text(f"token={secret}\n" * 100)
        result = await pipeline.call("read_file", path="a.txt")
        assert secret not in result.text
        assert "[redacted]" in result.text
        spilled = (pipeline.run.envelope.spills / f"{result.spill_id}.txt").read_text()
        assert secret not in spilled
    finally:
        pipeline.close()


# -- cancelled ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_cancelled_call_records_a_cancelled_receipt(tmp_path: Path) -> None:
    """Cancelling a running command kills it and ends the attempt as cancelled."""
    pipeline = make_pipeline(tmp_path, approver=approving())
    try:
        with anyio.move_on_after(1.0) as scope:
            await pipeline.call("shell_execute", command="sleep 30")
        assert scope.cancelled_caught
        [receipt] = _of(pipeline, ToolReceiptRecorded)
        assert OutcomeCategory.CANCELLED == receipt.outcome
        assert 1 == len(_terminal_events(pipeline))
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_cancelling_while_waiting_for_approval_ends_the_attempt(tmp_path: Path) -> None:
    """A call cancelled during its approval wait is cancelled, never run, never left open."""
    pipeline = make_pipeline(tmp_path, approver=BlockingApprover())
    try:
        with anyio.move_on_after(0.3):
            await pipeline.call("shell_execute", command="touch late.txt")
        assert not (pipeline.workspace / "late.txt").exists()
        [receipt] = _of(pipeline, ToolReceiptRecorded)
        assert OutcomeCategory.CANCELLED == receipt.outcome
        assert [] == pipeline.journal.session(pipeline.run.session_id).open_attempts()
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_an_unanswered_approval_expires(tmp_path: Path) -> None:
    """The approval wait is bounded: no answer in time denies the call as expired."""
    pipeline = make_pipeline(tmp_path, approver=BlockingApprover(), approval_timeout_seconds=0.2)
    try:
        result = await pipeline.call("shell_execute", command="touch late.txt")
        assert DenialCategory.APPROVAL_EXPIRED == result.denial
        [decided] = _of(pipeline, ApprovalDecided)
        assert (ApprovalVerdict.EXPIRED, "timeout") == (decided.verdict, decided.decided_by)
    finally:
        pipeline.close()


# -- working context ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_successful_file_calls_move_the_working_context(tmp_path: Path) -> None:
    """Writes, reads and a project declaration update the context; replay agrees."""
    project = tmp_path / "project"
    project.mkdir()
    pipeline = make_pipeline(tmp_path, roots=[(tmp_path / "project", ALL)])
    try:
        await pipeline.call("write_file", path="a.txt", content="a")
        declared = await pipeline.call("set_working_directory", path=str(project))
        assert OutcomeCategory.SUCCESS == declared.outcome
        await pipeline.call("write_file", path="b.txt", content="b")
        assert (project / "b.txt").exists()
        await pipeline.call("read_file", path="/etc/hostname")
        live = pipeline.journal.session(pipeline.run.session_id).working_context
        assert os.path.realpath(project) == live.project_directory
        assert (
            os.path.realpath(project / "b.txt"),
            os.path.realpath(pipeline.workspace / "a.txt"),
        ) == live.recent_files
        assert 3 == len(_of(pipeline, WorkingContextChanged))
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_parallel_safe_calls_of_a_batch_each_get_one_result(pipeline) -> None:
    """A batch returns one result per call, in order, whatever ran together."""
    (pipeline.workspace / "a.txt").write_text("a\n")
    calls = [
        pipeline.request("read_file", path="a.txt"),
        pipeline.request("list_directory"),
        pipeline.request("read_file", path="/etc/hostname"),
        pipeline.request("write_file", path="b.txt", content="b"),
        pipeline.request("grep", pattern="a"),
    ]
    results = await pipeline.dispatcher.call_batch(pipeline.run, calls)
    assert [c.call_id for c in calls] == [r.call_id for r in results]
    assert 5 == len(_terminal_events(pipeline))


class BrokenApprover(StandingApprover):
    """An approval channel that fails whenever it is used."""

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Fail."""
        del request
        msg = "approval channel closed"
        raise ConnectionError(msg)

    async def report(self, request: ApprovalRequest) -> None:
        """Fail."""
        del request
        msg = "approval channel closed"
        raise ConnectionError(msg)


@pytest.mark.anyio
async def test_an_approver_that_fails_denies_the_call_and_closes_it(tmp_path: Path) -> None:
    """A failing approval channel is no answer: denied, said why, nothing left open."""
    pipeline = make_pipeline(tmp_path, approver=BrokenApprover(ApprovalVerdict.APPROVED, "x"))
    try:
        result = await pipeline.call("shell_execute", command="touch made.txt")
        assert DenialCategory.NO_APPROVER == result.denial
        assert "ConnectionError: approval channel closed" in result.text
        assert not (pipeline.workspace / "made.txt").exists()
        assert [] == pipeline.journal.session(pipeline.run.session_id).open_attempts()
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_failing_report_never_blocks_a_report_mode_call(tmp_path: Path) -> None:
    """Report mode runs the call even when the notice cannot be delivered."""
    pipeline = make_pipeline(
        tmp_path,
        approver=BrokenApprover(ApprovalVerdict.APPROVED, "x"),
        exposure=ExposurePolicy(approval_modes={"write_file": ApprovalMode.REPORT}),
    )
    try:
        result = await pipeline.call("write_file", path="a.txt", content="x")
        assert OutcomeCategory.SUCCESS == result.outcome
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_spill_that_cannot_be_kept_still_returns_the_preview(tmp_path: Path) -> None:
    """If the spill cannot be written, the call succeeds with its preview and says so."""
    pipeline = make_pipeline(tmp_path, inline_limit=1000)
    try:
        (pipeline.workspace / "big.txt").write_text("x\n" * 2000)
        shutil.rmtree(pipeline.run.envelope.spills)
        pipeline.run.envelope.spills.write_text("not a directory")
        result = await pipeline.call("read_file", path="big.txt")
        assert (OutcomeCategory.SUCCESS, None) == (result.outcome, result.spill_id)
        assert "the rest could not be kept" in result.text
        assert "spills" not in result.text
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_call_the_runtime_fails_after_its_allow_gets_an_unknown_result(
    tmp_path: Path,
) -> None:
    """A failure inside the pipeline after the allow: one result, the attempt ends unknown."""
    pipeline = make_pipeline(tmp_path)
    try:
        shutil.rmtree(pipeline.run.envelope.root / "tmp")
        (pipeline.run.envelope.root / "tmp").write_text("not a directory")
        (pipeline.workspace / "a.txt").write_text("a\n")
        result = await pipeline.call("read_file", path="a.txt")
        assert AttemptEnd.UNKNOWN == result.end
        assert "outcome is unknown" in result.text
        assert str(pipeline.run.envelope.root) not in result.text
        [unknown] = [
            e for e in pipeline.events() if type(e).__name__ == "AttemptOutcomeMarkedUnknown"
        ]
        assert "failed after it was allowed" in unknown.reason
        assert [] == pipeline.journal.session(pipeline.run.session_id).open_attempts()
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_secret_cut_by_a_line_bound_does_not_leak_its_start(tmp_path: Path) -> None:
    """read_file and grep cut long lines; a secret on the cut is redacted, not half shown."""
    secret = "sk-live-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    pipeline = make_pipeline(tmp_path, secrets=frozenset({secret}))
    try:
        (pipeline.workspace / "read.txt").write_text("r" * 1990 + secret + "\n")
        (pipeline.workspace / "grep.txt").write_text("g" * 490 + secret + "\n")
        read = await pipeline.call("read_file", path="read.txt")
        found = await pipeline.call("grep", pattern="g", path="grep.txt")
        for result in (read, found):
            assert "sk-live-ABCD" not in result.text
            assert "[redacted]" in result.text
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_defer_mode_leaves_consent_to_the_tools_own_policy(tmp_path: Path) -> None:
    """With the shell deferred, a parsed command runs unasked; an unparseable one still asks."""
    approver = approving()
    pipeline = make_pipeline(
        tmp_path,
        approver=approver,
        exposure=ExposurePolicy(approval_modes={"shell_execute": ApprovalMode.DEFER}),
    )
    try:
        ran = await pipeline.call("shell_execute", command="touch deferred.txt")
        assert OutcomeCategory.SUCCESS == ran.outcome
        assert "deferred to the tool's own policy" == _of(pipeline, PolicyEvaluated)[0].rule
        assert [] == approver.asked
        await pipeline.call("shell_execute", command="echo $HOME")
        assert [ApprovalMode.DEFER] == [request.mode for request in approver.asked]
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_project_declared_under_a_read_only_root_stays_read_only(tmp_path: Path) -> None:
    """Declaring a project grants only what its root grants: no write under a read-only root."""
    project = tmp_path / "ro" / "proj"
    project.mkdir(parents=True)
    (project / "main.py").write_text("original\n")
    ops = (FileOperation.READ, FileOperation.DECLARE_PROJECT_SCOPE)
    pipeline = make_pipeline(tmp_path, roots=[(tmp_path / "ro", ops)])
    try:
        declared = await pipeline.call("set_working_directory", path=str(project))
        assert OutcomeCategory.SUCCESS == declared.outcome
        read = await pipeline.call("read_file", path="main.py")
        assert OutcomeCategory.SUCCESS == read.outcome
        written = await pipeline.call("write_file", path="main.py", content="changed\n")
        assert DenialCategory.OUTSIDE_ROOTS == written.denial
        assert "original\n" == (project / "main.py").read_text()
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_shell_paths_are_checked_from_the_commands_working_directory(
    tmp_path: Path,
) -> None:
    """With cwd set, `../x` in the command is checked where the shell will resolve it."""
    other = tmp_path / "home" / "sessions" / "other"
    pipeline = make_pipeline(tmp_path, approver=approving())
    try:
        other.mkdir(parents=True)
        (other / "private.txt").write_text("other session secret\n")
        root = pipeline.run.envelope.root
        result = await pipeline.call(
            "shell_execute", command="cat ../other/private.txt", cwd=str(root)
        )
        assert DenialCategory.OUTSIDE_ROOTS == result.denial
        assert "other session secret" not in result.text
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_journal_that_cannot_commit_fails_the_call_instead_of_hanging(
    tmp_path: Path,
) -> None:
    """A locked database is a typed error for the caller, within the busy timeout."""
    pipeline = make_pipeline(tmp_path, journal_settings=JournalSettings(busy_timeout_seconds=1))
    blocker = sqlite3.connect(pipeline.home.database, timeout=0.1)
    try:
        blocker.execute("PRAGMA busy_timeout = 100")
        blocker.execute("BEGIN IMMEDIATE")
        with anyio.fail_after(30), pytest.raises(JournalError):
            await pipeline.call("list_directory")
    finally:
        blocker.rollback()
        blocker.close()
        pipeline.close()


@pytest.mark.anyio
async def test_a_session_grant_for_a_command_does_not_follow_it_to_another_project(
    tmp_path: Path,
) -> None:
    """The same command text in another working directory is a new question."""

    class SessionApprover(StandingApprover):
        async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
            self.asked.append(request)
            return ApprovalAnswer(
                verdict=ApprovalVerdict.APPROVED, decided_by="op", scope=ApprovalScope.SESSION
            )

    for name in ("scratch", "important"):
        (tmp_path / "src" / name).mkdir(parents=True)
        (tmp_path / "src" / name / "data.txt").write_text("data\n")
    approver = SessionApprover(ApprovalVerdict.APPROVED, "op")
    pipeline = make_pipeline(tmp_path, roots=[(tmp_path / "src", ALL)], approver=approver)
    try:
        await pipeline.call("set_working_directory", path=str(tmp_path / "src" / "scratch"))
        await pipeline.call("shell_execute", command="rm -f data.txt")
        await pipeline.call("set_working_directory", path=str(tmp_path / "src" / "important"))
        await pipeline.call("shell_execute", command="rm -f data.txt")
        assert 2 == len(approver.asked)
        assert approver.asked[0].grant_key != approver.asked[1].grant_key
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_protected_files_stay_protected_through_the_homes_real_path(
    tmp_path: Path,
) -> None:
    """A home reached through a link: its key store is denied by either spelling."""
    real_home = tmp_path / "data" / "lc"
    real_home.mkdir(parents=True)
    (tmp_path / "home").symlink_to(real_home)
    pipeline = make_pipeline(tmp_path, roots=[(tmp_path / "data", ALL)])
    try:
        (real_home / "keys").mkdir()
        (real_home / "keys" / "device.key").write_text("SECRET-KEY\n")
        for home in (tmp_path / "home", real_home):
            result = await pipeline.call("read_file", path=str(home / "keys" / "device.key"))
            assert DenialCategory.PROTECTED_PATH == result.denial
        written = await pipeline.call(
            "write_file", path=str(real_home / "secrets.toml"), content="x"
        )
        assert DenialCategory.PROTECTED_PATH == written.denial
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_terminal_answer_after_the_timeout_does_not_count(tmp_path: Path) -> None:
    """A person who answers too late is too late: the call expires and never runs."""

    def slow_yes(_question: str) -> str:
        time.sleep(1.5)
        return "y"

    approver = TerminalApprover("terminal", ask_line=slow_yes)
    pipeline = make_pipeline(tmp_path, approver=approver, approval_timeout_seconds=0.2)
    try:
        started = time.monotonic()
        result = await pipeline.call("shell_execute", command="touch late.txt")
        assert DenialCategory.APPROVAL_EXPIRED == result.denial
        assert time.monotonic() - started < 1.2
        assert not (pipeline.workspace / "late.txt").exists()
    finally:
        pipeline.close()


@pytest.mark.anyio
async def test_a_key_file_created_later_is_protected_from_the_next_run(tmp_path: Path) -> None:
    """File identities are gathered per run, so a hard link to a new key is recognised."""
    pipeline = make_pipeline(tmp_path)
    try:
        keys = pipeline.home.root / "keys"
        keys.mkdir()
        (keys / "new.key").write_text("NEW-KEY\n")
        os.link(keys / "new.key", pipeline.workspace / "innocent.txt")
        pipeline.new_run()
        result = await pipeline.call("read_file", path="innocent.txt")
        assert DenialCategory.PROTECTED_PATH == result.denial
        assert "NEW-KEY" not in result.text
    finally:
        pipeline.close()
