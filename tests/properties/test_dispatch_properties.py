"""Properties of the tool dispatcher on a real SQLite journal; properties.

Each example builds its own pipeline in a fresh temporary home. For any list of calls, valid
or not, a batch returns one result per call in order; every result agrees with the terminal
event its attempt left in the journal; and after successful reads and writes, the working
context of the live session is the one the receipts imply, and a reopened journal replays it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
from hypothesis import given
from hypothesis import strategies as st

from adapters.journal.journal import SqliteJournal
from adapters.settings.config_file import Config
from adapters.wiring.tools import first_party_tools
from domain.ports import Approver
from domain.session.aggregate import Session
from domain.session.events import (
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    ToolReceiptRecorded,
)
from domain.tools.result import ToolResult
from domain.values.attempts import AttemptEnd
from domain.values.authorization import ApprovalVerdict
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import OutcomeCategory
from domain.values.storage import RECENT_FILES_LIMIT, WorkingContext
from tests.builders import receipt_of, tool_call
from tests.pipeline import Pipeline, approving, make_pipeline

TERMINAL_END: dict[type, AttemptEnd] = {
    ToolReceiptRecorded: AttemptEnd.RECEIPT,
    AttemptDenied: AttemptEnd.DENIED,
    CorrectionIssued: AttemptEnd.CORRECTED,
    AttemptOutcomeMarkedUnknown: AttemptEnd.UNKNOWN,
}
"""The attempt end each terminal event records."""
REGISTERED = tuple(definition.name for definition in first_party_tools(Config()).registry)
UNKNOWN = ("no_such_tool", "Read_File", "read-file", "tools.read_file")
FILE_NAMES = ("a.txt", "b.txt", "c.txt", "d.txt", "sub/e.txt")
"""A few workspace files, so sequences return to files they used before."""

# -- strategies ---------------------------------------------------------------------------

TEXTS = st.sampled_from(
    [
        "notes.txt",
        "missing.txt",
        "sub",
        ".",
        "../../escaped.txt",
        "/nonexistent-root/outside.txt",
        "*.txt",
        "ls",
        "sudo ls",
        "echo $HOME",
        "find_files",
        "call_1",
        "",
    ]
)
"""Strings that are paths, patterns, commands or names to one tool or another."""
VALUES = st.one_of(TEXTS, st.integers(-1, 3), st.booleans(), st.none(), st.lists(TEXTS, max_size=2))
KEYS = st.sampled_from(
    [
        "path",
        "content",
        "pattern",
        "command",
        "name",
        "call_id",
        "old_text",
        "new_text",
        "revision",
        "limit",
        "start_line",
        "surprise",
    ]
)
ANY_ARGUMENTS = st.dictionaries(KEYS, VALUES, max_size=4)
"""Argument objects of any shape: mostly invalid for the tool they are sent to."""
PATHS = st.sampled_from(["notes.txt", "missing.txt", "sub/inner.txt", "/nonexistent/x.txt"])
DIRECTORIES = st.sampled_from([".", "sub", "missing", "/nonexistent"])
VALID_ARGUMENTS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "read_file": st.fixed_dictionaries({"path": PATHS}),
    "list_directory": st.fixed_dictionaries({"path": DIRECTORIES}),
    "find_files": st.fixed_dictionaries({"pattern": st.just("*"), "path": DIRECTORIES}),
    "grep": st.fixed_dictionaries({"pattern": st.just("alpha"), "path": DIRECTORIES}),
    "write_file": st.fixed_dictionaries({"path": PATHS, "content": st.just("alpha\n")}),
    "edit_file": st.fixed_dictionaries(
        {
            "path": PATHS,
            "old_text": st.just("alpha"),
            "new_text": st.just("beta"),
            "revision": st.just("stale"),
        }
    ),
    "attach_file": st.fixed_dictionaries({"path": PATHS}),
    "shell_execute": st.fixed_dictionaries(
        {"command": st.sampled_from(["ls", "cat notes.txt", "echo $HOME", "sudo ls"])}
    ),
    "set_working_directory": st.fixed_dictionaries({"path": DIRECTORIES}),
    "tool_output_read": st.fixed_dictionaries({"call_id": st.sampled_from(["call_0", "call_1"])}),
    "load_tool": st.fixed_dictionaries({"name": st.sampled_from(["find_files", "grep", "nope"])}),
}
"""Well-formed arguments for each first-party tool (they may still name denied paths)."""


def _arguments_for(name: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    valid = VALID_ARGUMENTS.get(name, ANY_ARGUMENTS)
    return st.tuples(st.just(name), valid | ANY_ARGUMENTS)


CALLS = st.sampled_from(REGISTERED + UNKNOWN).flatmap(_arguments_for)
"""A tool name (registered or not) with arguments of a valid or an invalid shape."""
APPROVERS = st.sampled_from([None, ApprovalVerdict.APPROVED, ApprovalVerdict.REJECTED])
READS_AND_WRITES = st.lists(
    st.tuples(
        st.sampled_from(["read", "write", "new run"]),
        st.sampled_from(FILE_NAMES),
        st.booleans(),
    ),
    min_size=1,
    max_size=16,
)
"""Operations on workspace files: read or write, by relative or absolute path; new runs."""


# -- helpers ------------------------------------------------------------------------------


@contextmanager
def temporary_pipeline(verdict: ApprovalVerdict | None = None) -> Iterator[Pipeline]:
    """A pipeline in a fresh temporary home with a small workspace, removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="ledgerclaw-dispatch-"))
    approver: Approver | None = None if verdict is None else approving(verdict)
    pipeline = make_pipeline(directory, approver=approver)
    try:
        workspace = pipeline.workspace
        (workspace / "sub").mkdir()
        (workspace / "notes.txt").write_text("alpha\n", encoding="utf-8")
        for name in FILE_NAMES:
            (workspace / name).write_text(f"{name}\n", encoding="utf-8")
        yield pipeline
    finally:
        pipeline.close()
        shutil.rmtree(directory)


def requests(calls: list[tuple[str, dict[str, Any]]]) -> list[ToolCallRequest]:
    """Requests for `calls`, with distinct call ids in order."""
    return [tool_call(index, name, arguments) for index, (name, arguments) in enumerate(calls)]


def live_session(pipeline: Pipeline) -> Session:
    """The session the journal keeps in memory and runs the next command on."""
    live = pipeline.journal._working.get(pipeline.run.session_id.as_uuid())
    assert isinstance(live, Session)
    return live


# -- properties ---------------------------------------------------------------------------


def test_registered_tools_are_drawn_from_the_registry() -> None:
    """The strategies know every first-party tool, and only registered ones."""
    assert set(REGISTERED) == set(VALID_ARGUMENTS)
    assert set() == set(UNKNOWN) & set(REGISTERED)


@given(calls=st.lists(CALLS, max_size=6), verdict=APPROVERS)
def test_a_batch_returns_one_result_per_call_in_order(
    calls: list[tuple[str, dict[str, Any]]], verdict: ApprovalVerdict | None
) -> None:
    """Any list of calls, valid or not, gets one result per call, in order, same call ids."""
    sent = requests(calls)
    with temporary_pipeline(verdict) as pipeline:
        results = anyio.run(pipeline.dispatcher.call_batch, pipeline.run, sent)
    assert [(r.call_id, r.name) for r in sent] == [(r.call_id, r.tool_name) for r in results]


@given(calls=st.lists(CALLS, min_size=1, max_size=6), verdict=APPROVERS, batched=st.booleans())
def test_every_result_matches_its_attempts_terminal_event(
    calls: list[tuple[str, dict[str, Any]]], verdict: ApprovalVerdict | None, batched: bool
) -> None:
    """Each result's end (and outcome, denial or remediation) is its attempt's terminal event."""
    sent = requests(calls)
    with temporary_pipeline(verdict) as pipeline:

        async def one_by_one() -> list[ToolResult]:
            return [await pipeline.dispatcher.call(pipeline.run, request) for request in sent]

        if batched:
            results = anyio.run(pipeline.dispatcher.call_batch, pipeline.run, sent)
        else:
            results = anyio.run(one_by_one)
        events = pipeline.events()
    started = {
        e.attempt_id: e.call_id for e in events if isinstance(e, AuthorizationAttemptStarted)
    }
    terminal: dict[Any, list[Any]] = {attempt_id: [] for attempt_id in started}
    for event in events:
        if type(event) in TERMINAL_END:
            terminal[event.attempt_id].append(event)
    assert sorted(r.call_id for r in sent) == sorted(started.values())
    for result in results:
        assert result.call_id == started[result.attempt_id]
        [end] = terminal[result.attempt_id]
        assert TERMINAL_END[type(end)] == result.end
        if isinstance(end, ToolReceiptRecorded):
            assert (end.outcome, end.remediation) == (result.outcome, result.remediation)
        elif isinstance(end, AttemptDenied):
            assert end.category == result.denial
        elif isinstance(end, CorrectionIssued):
            assert end.remediation == result.remediation


@given(operations=READS_AND_WRITES)
def test_replay_reproduces_the_working_context(
    operations: list[tuple[str, str, bool]],
) -> None:
    """After successful reads and writes, live, folded and reopened sessions share one context."""
    with temporary_pipeline() as pipeline:
        workspace = pipeline.workspace
        recent: list[str] = []
        for index, (kind, name, absolute) in enumerate(operations):
            if kind == "new run":
                pipeline.new_run()
                continue
            path = str(workspace / name) if absolute else name
            arguments: dict[str, Any] = {"path": path}
            if kind == "write":
                arguments["content"] = f"{kind} {name}\n"
            tool = "read_file" if kind == "read" else "write_file"
            request = tool_call(index, tool, arguments)
            result = anyio.run(pipeline.dispatcher.call, pipeline.run, request)
            assert (AttemptEnd.RECEIPT, OutcomeCategory.SUCCESS) == (result.end, result.outcome)
            real = os.path.realpath(workspace / name)
            recent = [real, *(p for p in recent if p != real)][:RECENT_FILES_LIMIT]
        live = live_session(pipeline).state()
        folded = WorkingContext()
        for event in pipeline.events():
            if isinstance(event, ToolReceiptRecorded):
                folded = folded.after(receipt_of(event))
        pipeline.journal.close()
        reopened = SqliteJournal(pipeline.home.database)
        try:
            replayed = reopened.session(pipeline.run.session_id).state()
        finally:
            reopened.close()
    assert WorkingContext(recent_files=tuple(recent)) == live.working_context
    assert live.working_context == folded
    assert live == replayed
