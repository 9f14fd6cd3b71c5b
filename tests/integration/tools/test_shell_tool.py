"""The shell_execute tool: its policy assessment, and real commands in real directories."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from adapters.tools.contract import CallAssessment, PathTarget, ToolOutput, ToolRun
from adapters.tools.shell import CAPTURE_LIMIT, ShellArguments, ShellExecute
from domain.ids import CallId, RunId, SessionId
from domain.shell.policy import ShellPolicy
from domain.tools.definition import Concurrency, Loading
from domain.values.authorization import ApprovalMode, DenialCategory, FileOperation
from domain.values.receipts import OutcomeCategory
from tests.integration.tools.tool_run import bind_target, path_check, trusted_root

pytestmark = pytest.mark.anyio

WRITE = FileOperation.WRITE


@pytest.fixture
def shell() -> ShellExecute:
    """The tool with the default policy and a short grace between SIGTERM and SIGKILL."""
    return ShellExecute(ShellPolicy(), terminate_grace=0.3)


def _tool_run(root: Path, assessment: CallAssessment) -> ToolRun:
    """A ToolRun as the dispatcher builds it: every target resolved and allowed under `root`."""
    check = path_check(root)
    base = root / "base"
    base.mkdir(exist_ok=True)
    tmp_dir = root / "tmp"
    tmp_dir.mkdir(exist_ok=True)
    targets = {t.argument: bind_target(t, str(base), check) for t in assessment.targets}
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    environment |= {name: str(tmp_dir) for name in ("TMPDIR", "TMP", "TEMP")}
    return ToolRun(
        call_id=CallId("call_1"),
        session_id=SessionId.new(),
        run_id=RunId.new(),
        targets=targets,
        base=base,
        tmp_dir=tmp_dir,
        environment=environment,
        check_path=check,
        visibility=lambda _name: None,
        read_spill=lambda _call, _start, _limit: None,
        roots=(trusted_root(root),),
    )


async def _run(
    shell: ShellExecute, root: Path, command: str, **fields: object
) -> tuple[ToolOutput, ToolRun]:
    arguments = ShellArguments.model_validate({"command": command, **fields})
    run = _tool_run(root, shell.assess(arguments))
    return await shell.run(arguments, run), run


def _live_members(group: int) -> list[int]:
    """Processes of a group that are still running (zombies awaiting their reaper excluded)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        state, pgid = fields[0], int(fields[2])
        if pgid == group and state not in ("Z", "X"):
            live.append(int(entry.name))
    return live


def _survivors(group: int, within: float = 2.0) -> list[int]:
    """The live members of a group once they had `within` seconds to die."""
    deadline = time.monotonic() + within
    while (live := _live_members(group)) and time.monotonic() < deadline:
        time.sleep(0.02)
    return live


def _group_of(run: ToolRun) -> int:
    """The process group the command wrote to $TMPDIR/pgid (the shell's $$)."""
    return int((run.tmp_dir / "pgid").read_text())


RECORD_GROUP = 'echo $$ > "$TMPDIR/pgid"; '


def test_definition_is_a_sequential_core_tool_that_asks_for_approval() -> None:
    """The definition carries the argument schema and asks for approval by default."""
    definition = ShellExecute.definition
    assert "shell_execute" == definition.name
    assert ShellArguments.model_json_schema() == definition.parameters
    assert Loading.CORE == definition.loading
    assert Concurrency.SEQUENTIAL == definition.concurrency
    assert ApprovalMode.REQUEST == definition.approval_mode


def test_assess_names_every_path_and_the_working_directory_as_writes(
    shell: ShellExecute,
) -> None:
    """Each path the command names and the default working directory are write targets."""
    arguments = ShellArguments(command="cat ./notes.txt > out.txt")
    assessment = shell.assess(arguments)
    expected = (
        PathTarget(argument="cwd", raw=".", operation=WRITE),
        PathTarget(argument="command:path:0", raw="./notes.txt", operation=WRITE),
        PathTarget(argument="command:path:1", raw="out.txt", operation=WRITE),
    )
    assert expected == assessment.targets
    assert "cat ./notes.txt > out.txt" == assessment.summary
    assert "cat ./notes.txt > out.txt" == assessment.grant_subject
    assert "" == assessment.reviewed_safe


def test_assess_checks_a_given_working_directory_as_a_write(shell: ShellExecute) -> None:
    """A cwd argument is the write target named cwd, as written."""
    assessment = shell.assess(ShellArguments(command="make", cwd="../other"))
    assert (PathTarget(argument="cwd", raw="../other", operation=WRITE),) == assessment.targets


def test_assess_denies_a_hard_denied_command(shell: ShellExecute) -> None:
    """A command a hard-deny rule matches is denied under the shell policy, naming the rule."""
    assessment = shell.assess(ShellArguments(command="sudo rm -rf ./build"))
    expected = (DenialCategory.SHELL_POLICY, "the shell policy forbids this command: sudo")
    assert expected == assessment.deny
    assert "" == assessment.reviewed_safe


def test_assess_asks_approval_for_a_command_it_cannot_read(shell: ShellExecute) -> None:
    """An unparsed command needs approval, is never reviewed-safe and has no grant subject."""
    assessment = shell.assess(ShellArguments(command="echo $HOME"))
    assert "'$' expands parameters or substitutes commands when the shell runs" == (
        assessment.needs_approval
    )
    assert ("", None, None) == (
        assessment.reviewed_safe,
        assessment.grant_subject,
        assessment.deny,
    )


def test_assess_passes_on_a_reviewed_safe_candidate(shell: ShellExecute) -> None:
    """A parsed read-only command carries its reviewed-safe phrase and its exact text."""
    assessment = shell.assess(ShellArguments(command="ls -la ./src | wc -l"))
    assert "ls" == assessment.reviewed_safe
    assert "ls -la ./src | wc -l" == assessment.grant_subject
    assert ("", None) == (assessment.needs_approval, assessment.deny)


def test_timeout_uses_the_configured_default_and_maximum() -> None:
    """Without a timeout argument the default applies; any timeout is capped at the maximum."""
    shell = ShellExecute(ShellPolicy(), default_timeout=5, max_timeout=30)
    assert 5 == shell.timeout(ShellArguments(command="true"))
    assert 7 == shell.timeout(ShellArguments(command="true", timeout_seconds=7))
    assert 30 == shell.timeout(ShellArguments(command="true", timeout_seconds=600))


async def test_run_returns_combined_output_and_the_exit_code(
    shell: ShellExecute, tmp_path: Path
) -> None:
    """Stdout and stderr come back together, and a non-zero exit still completes the call."""
    output, _ = await _run(shell, tmp_path, "echo hello; echo oops >&2; exit 3")
    assert OutcomeCategory.SUCCESS == output.outcome
    assert "hello\noops\nexit code: 3" == output.text
    assert () == output.file_activity


async def test_run_sets_the_managed_temp_dir_for_the_child(
    shell: ShellExecute, tmp_path: Path
) -> None:
    """The child sees the environment the dispatcher built, TMPDIR included."""
    output, run = await _run(shell, tmp_path, "echo $TMPDIR")
    assert f"{run.tmp_dir}\nexit code: 0" == output.text


async def test_run_starts_in_the_base_directory_by_default(
    shell: ShellExecute, tmp_path: Path
) -> None:
    """Without a cwd the command runs in the selected relative base."""
    output, run = await _run(shell, tmp_path, "pwd")
    assert f"{run.base}\nexit code: 0" == output.text


async def test_run_honours_the_working_directory(shell: ShellExecute, tmp_path: Path) -> None:
    """A relative cwd runs the command in that directory, at its real location."""
    (tmp_path / "base" / "sub").mkdir(parents=True)
    output, _ = await _run(shell, tmp_path, "pwd", cwd="sub")
    assert f"{tmp_path / 'base' / 'sub'}\nexit code: 0" == output.text


async def test_run_reports_a_missing_working_directory(shell: ShellExecute, tmp_path: Path) -> None:
    """A cwd that does not exist is not found, and nothing runs."""
    output, run = await _run(shell, tmp_path, RECORD_GROUP, cwd="missing")
    assert OutcomeCategory.NOT_FOUND == output.outcome
    assert "working directory missing: no such directory" == output.text
    assert not (run.tmp_dir / "pgid").exists()


async def test_run_refuses_a_file_as_working_directory(shell: ShellExecute, tmp_path: Path) -> None:
    """A cwd that is a file is invalid input."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "file").write_text("x")
    output, _ = await _run(shell, tmp_path, "pwd", cwd="file")
    assert OutcomeCategory.INVALID_INPUT == output.outcome


async def test_run_replaces_undecodable_bytes(shell: ShellExecute, tmp_path: Path) -> None:
    """Output that is not UTF-8 is decoded with replacement characters."""
    output, _ = await _run(shell, tmp_path, r"printf '\377ok\n'")
    assert "\ufffdok\nexit code: 0" == output.text


async def test_run_names_the_signal_that_ended_the_shell(
    shell: ShellExecute, tmp_path: Path
) -> None:
    """A shell killed by a signal reports the signal and the negative exit code."""
    output, _ = await _run(shell, tmp_path, "kill -9 $$")
    assert "terminated by signal SIGKILL\nexit code: -9" == output.text


async def test_run_bounds_the_captured_output(shell: ShellExecute, tmp_path: Path) -> None:
    """Only the first 4 MiB are kept; the rest is drained, counted and noted."""
    total = CAPTURE_LIMIT + 1000
    output, _ = await _run(shell, tmp_path, f"yes | head -c {total}")
    kept = "y\n" * (CAPTURE_LIMIT // 2)
    note = f"[output truncated: kept the first {CAPTURE_LIMIT} of {total} bytes]"
    assert f"{kept}{note}\nexit code: 0" == output.text


async def test_run_times_out_and_stops_the_whole_group(shell: ShellExecute, tmp_path: Path) -> None:
    """A timeout stops the shell and its background children, keeping the output so far."""
    command = RECORD_GROUP + "echo started; sleep 100 & sleep 100"
    started = time.monotonic()
    output, run = await _run(shell, tmp_path, command, timeout_seconds=1)
    assert time.monotonic() - started < 5
    assert OutcomeCategory.TRANSIENT_FAILURE == output.outcome
    assert "started\ntimed out after 1 s" == output.text
    assert [] == _survivors(_group_of(run))


async def test_run_kills_children_that_ignore_sigterm(shell: ShellExecute, tmp_path: Path) -> None:
    """Processes that ignore SIGTERM are killed once the grace period ends."""
    command = RECORD_GROUP + "trap '' TERM; sleep 100 & sleep 100"
    output, run = await _run(shell, tmp_path, command, timeout_seconds=1)
    assert OutcomeCategory.TRANSIENT_FAILURE == output.outcome
    assert [] == _survivors(_group_of(run))


async def test_run_stops_background_children_after_a_normal_exit(
    shell: ShellExecute, tmp_path: Path
) -> None:
    """Background processes, even one holding the output pipe, do not outlive the call."""
    command = RECORD_GROUP + "sleep 100 & sleep 100 > sleep.log & echo done"
    started = time.monotonic()
    output, run = await _run(shell, tmp_path, command)
    assert time.monotonic() - started < 5
    assert "done\nexit code: 0" == output.text
    assert [] == _survivors(_group_of(run))


async def test_cancelling_run_kills_the_group_and_propagates(
    shell: ShellExecute, tmp_path: Path
) -> None:
    """A cancelled call kills the whole group and lets the cancellation through."""
    arguments = ShellArguments(command=RECORD_GROUP + "sleep 100 & sleep 100")
    run = _tool_run(tmp_path, shell.assess(arguments))
    returned = False
    with anyio.move_on_after(0.5) as scope:
        await shell.run(arguments, run)
        returned = True
    assert scope.cancelled_caught
    assert not returned
    assert [] == _survivors(_group_of(run))
