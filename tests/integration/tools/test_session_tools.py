"""The session tools on real directories: set_working_directory, tool_output_read, load_tool."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from pydantic import ValidationError

from adapters.tools.contract import (
    Arguments,
    CallAssessment,
    PathTarget,
    ToolOutput,
    ToolRun,
)
from adapters.tools.session_tools import (
    LoadTool,
    LoadToolArguments,
    SetWorkingDirectory,
    SetWorkingDirectoryArguments,
    ToolOutputRead,
    ToolOutputReadArguments,
)
from domain.ids import CallId, RunId, SessionId
from domain.tools.definition import Concurrency, Loading, ToolDefinition
from domain.tools.exposure import ExposurePolicy, Visibility, visibility
from domain.tools.output import window
from domain.values.audience import Audience
from domain.values.authorization import FileOperation
from domain.values.receipts import OutcomeCategory
from tests.integration.tools.tool_run import bind_target, path_check

pytestmark = pytest.mark.anyio


def _tool_run(
    root: Path,
    assessment: CallAssessment,
    *,
    visibility: Callable[[str], Visibility | None] = lambda _name: None,
    read_spill: Callable[[str, int, int], tuple[str, int | None, int] | None] = (
        lambda _call, _start, _limit: None
    ),
) -> ToolRun:
    """A ToolRun as the dispatcher builds it: every target resolved and allowed under `root`."""
    check = path_check(root)
    base = root / "base"
    base.mkdir(exist_ok=True)
    tmp_dir = root / "tmp"
    tmp_dir.mkdir(exist_ok=True)
    targets = {t.argument: bind_target(t, str(base), check) for t in assessment.targets}
    return ToolRun(
        call_id=CallId("call_1"),
        session_id=SessionId.new(),
        run_id=RunId.new(),
        targets=targets,
        base=base,
        tmp_dir=tmp_dir,
        environment={**os.environ, "TMPDIR": str(tmp_dir)},
        check_path=check,
        visibility=visibility,
        read_spill=read_spill,
    )


async def _declare(root: Path, path: str) -> tuple[ToolRun, ToolOutput]:
    tool = SetWorkingDirectory()
    arguments = SetWorkingDirectoryArguments(path=path)
    run = _tool_run(root, tool.assess(arguments))
    return run, await tool.run(arguments, run)


def _definitions() -> list[ToolDefinition]:
    return [SetWorkingDirectory.definition, ToolOutputRead.definition, LoadTool.definition]


def test_definitions_are_core_with_their_argument_schemas() -> None:
    """Each session tool is a core tool whose schema is its argument model's schema."""
    models: list[type[Arguments]] = [
        SetWorkingDirectoryArguments,
        ToolOutputReadArguments,
        LoadToolArguments,
    ]
    assert ["set_working_directory", "tool_output_read", "load_tool"] == [
        d.name for d in _definitions()
    ]
    assert [m.model_json_schema() for m in models] == [d.parameters for d in _definitions()]
    assert {Loading.CORE} == {d.loading for d in _definitions()}
    assert [Concurrency.SEQUENTIAL, Concurrency.PARALLEL_SAFE, Concurrency.PARALLEL_SAFE] == [
        d.concurrency for d in _definitions()
    ]
    assert {None} == {d.approval_mode for d in _definitions()}


def test_set_working_directory_names_its_path_for_declaring_scope() -> None:
    """The path argument is the one target, checked for declaring project scope."""
    assessment = SetWorkingDirectory().assess(SetWorkingDirectoryArguments(path="src"))
    expected = PathTarget(argument="path", raw="src", operation=FileOperation.DECLARE_PROJECT_SCOPE)
    assert (expected,) == assessment.targets
    assert (None, "", None) == (
        assessment.deny,
        assessment.needs_approval,
        assessment.grant_subject,
    )


async def test_set_working_directory_declares_an_existing_directory(tmp_path: Path) -> None:
    """An existing directory becomes the project declaration, at its real location."""
    (tmp_path / "base" / "project").mkdir(parents=True)
    run, output = await _declare(tmp_path, "project")
    real = run.targets["path"].real
    assert OutcomeCategory.SUCCESS == output.outcome
    assert real == output.project_declaration
    assert f"project directory is now {real}" == output.text
    assert () == output.file_activity


async def test_set_working_directory_declares_where_a_link_leads(tmp_path: Path) -> None:
    """A directory reached through a link inside the root is declared where it really is."""
    target = tmp_path / "base" / "real-project"
    target.mkdir(parents=True)
    (tmp_path / "base" / "alias").symlink_to(target)
    _, output = await _declare(tmp_path, "alias")
    assert str(target) == output.project_declaration


async def test_set_working_directory_reports_a_missing_directory(tmp_path: Path) -> None:
    """A path that does not exist is not found and declares nothing."""
    _, output = await _declare(tmp_path, "nowhere")
    assert OutcomeCategory.NOT_FOUND == output.outcome
    assert output.project_declaration is None
    assert "no directory at nowhere" == output.text


async def test_set_working_directory_refuses_a_file(tmp_path: Path) -> None:
    """A regular file is invalid input and declares nothing."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "notes.txt").write_text("x")
    _, output = await _declare(tmp_path, "notes.txt")
    assert OutcomeCategory.INVALID_INPUT == output.outcome
    assert output.project_declaration is None


def _spills(
    saved: Mapping[str, str],
) -> Callable[[str, int, int], tuple[str, int | None, int] | None]:
    def read(call_id: str, start: int, limit: int) -> tuple[str, int | None, int] | None:
        if call_id not in saved:
            return None
        text = saved[call_id]
        chunk, next_start = window(text, start, limit)
        return chunk, next_start, len(text)

    return read


async def _read(tmp_path: Path, saved: Mapping[str, str], **fields: object) -> ToolOutput:
    tool = ToolOutputRead()
    arguments = ToolOutputReadArguments.model_validate(fields)
    run = _tool_run(tmp_path, tool.assess(arguments), read_spill=_spills(saved))
    return await tool.run(arguments, run)


def test_tool_output_read_names_no_targets() -> None:
    """Reading saved output touches no path."""
    assessment = ToolOutputRead().assess(ToolOutputReadArguments(call_id="call_1"))
    assert () == assessment.targets


async def test_tool_output_read_returns_a_window_and_the_next_start(tmp_path: Path) -> None:
    """A window in the middle ends with its range and where the next one starts."""
    output = await _read(tmp_path, {"call_1": "abcdefghij"}, call_id="call_1", start=2, limit=3)
    assert OutcomeCategory.SUCCESS == output.outcome
    assert "cde\n[characters 2-5 of 10; next start: 5]" == output.text


async def test_tool_output_read_marks_the_end(tmp_path: Path) -> None:
    """The last window ends with the end marker."""
    output = await _read(tmp_path, {"call_1": "abcdefghij"}, call_id="call_1", start=7)
    assert "hij\n[end of output]" == output.text


async def test_tool_output_read_defaults_to_the_largest_window(tmp_path: Path) -> None:
    """Without start and limit the first 16000 characters come back."""
    saved = {"call_1": "x" * 40_000}
    output = await _read(tmp_path, saved, call_id="call_1")
    expected = "x" * 16_000 + "\n[characters 0-16000 of 40000; next start: 16000]"
    assert expected == output.text


async def test_tool_output_read_reports_an_unknown_call_id(tmp_path: Path) -> None:
    """A call id with no saved output is not found, and the reply names no file."""
    output = await _read(tmp_path, {}, call_id="call_9")
    assert OutcomeCategory.NOT_FOUND == output.outcome
    assert "no saved output for call_id 'call_9'" == output.text


@pytest.mark.parametrize(
    "fields",
    [
        {"call_id": ""},
        {"call_id": "x" * 129},
        {"call_id": "../spill"},
        {"call_id": "call_1", "start": -1},
        {"call_id": "call_1", "limit": 0},
        {"call_id": "call_1", "limit": 16_001},
    ],
)
def test_tool_output_read_refuses_bad_arguments(fields: dict[str, object]) -> None:
    """Call ids outside the provider's id shape and out-of-range windows are invalid input."""
    with pytest.raises(ValidationError):
        ToolOutputReadArguments.model_validate(fields)


def _visibility(*definitions: ToolDefinition) -> Callable[[str], Visibility | None]:
    policy = ExposurePolicy(features=frozenset())
    by_name = {d.name: d for d in definitions}

    def seen(name: str) -> Visibility | None:
        found = by_name.get(name)
        return None if found is None else visibility(found, policy, Audience.PERSONAL)

    return seen


def _tool(name: str, **fields: object) -> ToolDefinition:
    return ToolDefinition.model_validate(
        {"name": name, "description": f"the {name} tool", "parameters": {}, **fields}
    )


async def _load(tmp_path: Path, name: str) -> ToolOutput:
    known = _visibility(
        _tool("grep_files"),
        _tool("web_fetch", loading=Loading.DEFERRED),
        _tool("browser", loading=Loading.DEFERRED, feature_gates=frozenset({"browser"})),
    )
    tool = LoadTool()
    arguments = LoadToolArguments(name=name)
    return await tool.run(arguments, _tool_run(tmp_path, tool.assess(arguments), visibility=known))


async def test_load_tool_loads_a_deferred_tool(tmp_path: Path) -> None:
    """A policy-visible deferred tool is loaded for the next request."""
    output = await _load(tmp_path, "web_fetch")
    assert OutcomeCategory.SUCCESS == output.outcome
    assert "web_fetch" == output.loaded_tool
    expected = "web_fetch is now available from the next model request"
    assert expected == output.text


async def test_load_tool_leaves_an_available_tool_alone(tmp_path: Path) -> None:
    """A tool already in the request succeeds without loading anything."""
    output = await _load(tmp_path, "grep_files")
    assert OutcomeCategory.SUCCESS == output.outcome
    assert output.loaded_tool is None
    assert "grep_files is already available" == output.text


async def test_load_tool_refuses_a_hidden_tool_with_the_reason(tmp_path: Path) -> None:
    """A tool the policy hides is access denied, citing why, and is not loaded."""
    output = await _load(tmp_path, "browser")
    assert OutcomeCategory.ACCESS_DENIED == output.outcome
    assert output.loaded_tool is None
    expected = "browser cannot be loaded: feature gate browser is off"
    assert expected == output.text


async def test_load_tool_reports_an_unknown_tool(tmp_path: Path) -> None:
    """A name no tool is registered under is not found."""
    output = await _load(tmp_path, "teleport")
    assert OutcomeCategory.NOT_FOUND == output.outcome
    assert "no tool named 'teleport'" == output.text


def test_load_tool_names_no_targets() -> None:
    """Loading a tool touches no path."""
    assert () == LoadTool().assess(LoadToolArguments(name="web_fetch")).targets
