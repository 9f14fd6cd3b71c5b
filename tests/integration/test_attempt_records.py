"""What the journal says ran, through the real pipeline: arguments, shell facts, input problems.

Every call goes through the real dispatcher on a real SQLite journal, with secrets read from
the home's `secrets.toml`, and the journal file's bytes are read back raw to prove that no
secret value reached them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.home import Home, ensure_home
from adapters.pipeline.spills import spill_path
from domain.ids import SpillId
from domain.session.events import AuthorizationAttemptStarted, ToolReceiptRecorded
from domain.tools.arguments import HEAD_LIMIT, VALUE_LIMIT
from domain.tools.output import REDACTED
from domain.values.receipts import InputProblem, OutcomeCategory
from tests.pipeline import Pipeline, approving, make_pipeline

SECRET = "tok-7f3a9c1e5b"


@pytest.fixture
def pipeline(tmp_path: Path) -> Iterator[Pipeline]:
    """A pipeline whose home redacts SECRET and whose approver approves every call."""
    home = ensure_home(Home(tmp_path / "home"))
    home.secrets.write_text(f'[redact]\nvalues = ["{SECRET}"]\n')
    home.secrets.chmod(0o600)
    built = make_pipeline(tmp_path, approver=approving())
    assert SECRET in built.dispatcher.policy.secrets
    yield built
    built.close()


def of_type(pipeline: Pipeline, kind: type[Any]) -> list[Any]:
    """The session's events of `kind`, in order."""
    return [event for event in pipeline.events() if isinstance(event, kind)]


def journal_bytes(home: Path) -> bytes:
    """The raw bytes of the journal file and its companions, as they are on disk."""
    return b"".join(path.read_bytes() for path in sorted(home.glob("ledgerclaw.db*")))


@pytest.mark.anyio
async def test_an_attempt_journals_the_arguments_it_was_called_with(pipeline: Pipeline) -> None:
    """The attempt's start holds the call's arguments as the caller sent them."""
    await pipeline.call("read_file", path="notes.txt", start_line=3)

    [started] = of_type(pipeline, AuthorizationAttemptStarted)
    assert ({"path": "notes.txt", "start_line": 3}, (), None) == (
        started.arguments,
        started.bounded_arguments,
        started.arguments_spill_id,
    )


@pytest.mark.anyio
async def test_a_long_argument_is_journaled_by_digest_and_spilled_whole(
    pipeline: Pipeline,
) -> None:
    """A value over the bound keeps digest, size and head; the spill has the whole call."""
    content = "line\n" * VALUE_LIMIT
    await pipeline.call("write_file", path="big.txt", content=content)

    [started] = of_type(pipeline, AuthorizationAttemptStarted)
    bounded = started.arguments["content"]
    assert (("/content",), len(content), content[:HEAD_LIMIT]) == (
        started.bounded_arguments,
        bounded["size"],
        bounded["head"],
    )
    spilled = spill_path(pipeline.run.envelope.spills, SpillId(started.arguments_spill_id))
    assert {"path": "big.txt", "content": content} == json.loads(spilled.read_text())


@pytest.mark.anyio
async def test_a_secret_in_arguments_never_reaches_the_journal_file(pipeline: Pipeline) -> None:
    """Content, a command (asked, approved, run), keys and bad input: no byte of SECRET."""
    await pipeline.call("write_file", path="a.txt", content=f"key={SECRET}\n")
    await pipeline.call("write_file", path="b.txt", content=f"{SECRET}\n" * 400)
    await pipeline.call("shell_execute", command=f"printf %s {SECRET} > out.txt")
    await pipeline.call("shell_execute", command=f"echo {SECRET} $HOME")
    await pipeline.call("read_file", path="a.txt", **{SECRET: 1})
    await pipeline.call("read_file", path=f"/nowhere/{SECRET}")

    assert SECRET in (pipeline.workspace / "out.txt").read_text()
    [*_, unasked, bad_key, _] = of_type(pipeline, AuthorizationAttemptStarted)
    assert f"echo {REDACTED} $HOME" == unasked.arguments["command"]
    assert {"path": "a.txt", REDACTED: 1} == bad_key.arguments
    pipeline.close()
    assert SECRET.encode() not in journal_bytes(pipeline.home.root)
    spilled = b"".join(p.read_bytes() for p in pipeline.run.envelope.spills.iterdir())
    assert (True, False) == (REDACTED.encode() in spilled, SECRET.encode() in spilled)


@pytest.mark.anyio
async def test_a_shell_receipt_has_the_command_where_it_ran_its_exit_and_output(
    pipeline: Pipeline,
) -> None:
    """Full command, working directory, exit code, duration, output size and candidates."""
    command = "printf 'hello' && touch made.txt && exit 3"
    result = await pipeline.call("shell_execute", command=command)

    assert OutcomeCategory.SUCCESS == result.outcome
    [receipt] = of_type(pipeline, ToolReceiptRecorded)
    shell = receipt.shell
    workspace = str(pipeline.workspace.resolve())
    assert (command, workspace, 3, False, len("hello")) == (
        shell.command,
        shell.cwd,
        shell.exit_code,
        shell.timed_out,
        shell.output_bytes,
    )
    assert shell.duration_ms >= 0
    # Every word that may be a path is a candidate: what the command may have changed.
    expected = (workspace, *(f"{workspace}/{word}" for word in ("hello", "made.txt", "3")))
    assert expected == shell.candidates
    assert () == receipt.file_activity


@pytest.mark.anyio
async def test_a_command_that_times_out_records_no_exit_code(pipeline: Pipeline) -> None:
    """A timeout is a transient failure whose receipt says the command did not exit itself."""
    result = await pipeline.call(
        "shell_execute", command="echo started; sleep 30", timeout_seconds=1
    )

    assert OutcomeCategory.TRANSIENT_FAILURE == result.outcome
    [receipt] = of_type(pipeline, ToolReceiptRecorded)
    assert ("echo started; sleep 30", None, True, len("started\n")) == (
        receipt.shell.command,
        receipt.shell.exit_code,
        receipt.shell.timed_out,
        receipt.shell.output_bytes,
    )


@pytest.mark.anyio
async def test_an_invalid_input_receipt_names_each_field_and_message(pipeline: Pipeline) -> None:
    """Arguments that do not decode: the receipt lists the fields and pydantic's messages."""
    result = await pipeline.call("read_file", start_line="three", extra=True)

    assert OutcomeCategory.INVALID_INPUT == result.outcome
    [receipt] = of_type(pipeline, ToolReceiptRecorded)
    assert (
        InputProblem(field="path", message="Field required"),
        InputProblem(
            field="start_line",
            message="Input should be a valid integer, unable to parse string as an integer",
        ),
        InputProblem(field="extra", message="Extra inputs are not permitted"),
    ) == receipt.problems


@pytest.mark.anyio
async def test_a_working_directory_that_is_a_file_is_invalid_input_naming_cwd(
    pipeline: Pipeline,
) -> None:
    """The tool's own invalid input names its field too: the working directory."""
    (pipeline.workspace / "plain.txt").write_text("not a directory\n")

    result = await pipeline.call("shell_execute", command="ls", cwd="plain.txt")

    assert OutcomeCategory.INVALID_INPUT == result.outcome
    [receipt] = of_type(pipeline, ToolReceiptRecorded)
    assert (InputProblem(field="cwd", message="not a directory"),) == receipt.problems
    assert receipt.shell is None
