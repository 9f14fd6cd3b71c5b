"""A rule-based state machine over the real tool dispatcher on a real SQLite journal; properties.

Rules send random calls through the whole pipeline: file tools on paths inside and outside
the roots, shell commands, invalid and unknown calls, a recording tool under every approval
answer, deferred tools, batches, cancellations and new runs. After every step: each call got
exactly one result (or, when cancelled, its attempt ended with one `cancelled` receipt), every
attempt has exactly one terminal event, the recording tool ran for exactly the calls that were
allowed to run, nothing outside the roots changed, and replay, a reopened journal and the fold
of the receipts agree with the live session.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import anyio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from pydantic import Field

from adapters.journal.journal import SqliteJournal
from adapters.pipeline.dispatcher import Dispatcher
from adapters.runtime.approvers import StandingApprover
from adapters.tools.contract import (
    Arguments,
    CallAssessment,
    PathTarget,
    ToolOutput,
    ToolRun,
    activity,
)
from domain.authorization.approvals import ApprovalAnswer, ApprovalRequest
from domain.ids import AttemptId, CallId
from domain.ports import Approver
from domain.session.aggregate import Session
from domain.session.events import (
    ApprovalDecided,
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    PolicyEvaluated,
    ToolReceiptRecorded,
)
from domain.tools.definition import Concurrency, ToolDefinition
from domain.tools.result import ToolResult
from domain.values.attempts import AttemptEnd
from domain.values.authorization import (
    ApprovalMode,
    ApprovalVerdict,
    DenialCategory,
    FileOperation,
    PolicyDecision,
)
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import OutcomeCategory, RemediationCode
from domain.values.storage import WorkingContext
from tests.builders import receipt_of, tool_call
from tests.pipeline import ALL, Pipeline, make_pipeline

TERMINAL_EVENTS = (
    ToolReceiptRecorded,
    AttemptDenied,
    CorrectionIssued,
    AttemptOutcomeMarkedUnknown,
)
TERMINAL_END: dict[type, AttemptEnd] = {
    ToolReceiptRecorded: AttemptEnd.RECEIPT,
    AttemptDenied: AttemptEnd.DENIED,
    CorrectionIssued: AttemptEnd.CORRECTED,
    AttemptOutcomeMarkedUnknown: AttemptEnd.UNKNOWN,
}
"""The attempt end each terminal event records."""
APPROVAL_TIMEOUT = 0.02
"""Seconds before an unanswered approval request expires; short, so a step stays quick."""
LONG_PAUSE = 30.0
"""How long a recording call pauses when the rule means to cancel it while it runs."""
REVISION = re.compile(r"revision: (\S+)")
STALE = "stale-revision"
REVISED = frozenset({"read_file", "write_file", "edit_file"})
"""Tools whose successful result reports the file's revision."""

Detail = DenialCategory | RemediationCode | OutcomeCategory | None
Expected = tuple[AttemptEnd, Detail]
"""How a call should end, and its denial, remediation or outcome (None: any)."""


# -- the recording tool -------------------------------------------------------------------


class RecordingArguments(Arguments):
    """The arguments of the recording tools."""

    target: str = Field(min_length=1, description="A path the call claims to write.")
    pause: float = Field(default=0.0, ge=0.0, le=60.0, description="Seconds to wait after.")


class RecordingTool:
    """Appends its call id to a log outside every root, then pauses; it needs approval."""

    definition: ClassVar[ToolDefinition] = ToolDefinition(
        name="record_sequential",
        description="Record that this call ran, in a log no tool call can reach.",
        parameters=RecordingArguments.model_json_schema(),
        concurrency=Concurrency.SEQUENTIAL,
        approval_mode=ApprovalMode.REQUEST,
    )
    arguments: ClassVar[type[Arguments]] = RecordingArguments

    def __init__(self, log: Path) -> None:
        self.log = log
        self.on_pause: Callable[[], None] | None = None
        """Called when a call starts to pause, so a rule can cancel it mid-run."""

    def assess(self, arguments: RecordingArguments) -> CallAssessment:
        """The one path the call names, as a write."""
        target = PathTarget(argument="target", raw=arguments.target, operation=FileOperation.WRITE)
        return CallAssessment(targets=(target,))

    async def run(self, arguments: RecordingArguments, run: ToolRun) -> ToolOutput:
        """Log the call id before anything can interrupt, then pause if asked to."""
        with self.log.open("a", encoding="utf-8") as log:
            log.write(f"{run.call_id}\n")
        if arguments.pause:
            if self.on_pause is not None:
                self.on_pause()
            await anyio.sleep(arguments.pause)
        return ToolOutput(
            text=f"recorded {run.call_id}", file_activity=(activity(run.targets["target"]),)
        )


class ParallelRecordingTool(RecordingTool):
    """The recording tool, declared safe to run beside other calls of a batch."""

    definition: ClassVar[ToolDefinition] = RecordingTool.definition.model_copy(
        update={"name": "record_parallel", "concurrency": Concurrency.PARALLEL_SAFE}
    )


RECORDING = frozenset({RecordingTool.definition.name, ParallelRecordingTool.definition.name})


# -- approvers ----------------------------------------------------------------------------


class SilentApprover:
    """Can be asked, but no one answers."""

    def available(self) -> bool:
        """Always reachable."""
        return True

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """No answer."""
        del request
        return None

    async def report(self, request: ApprovalRequest) -> None:
        """Nothing to report to."""
        del request


class HangingApprover(SilentApprover):
    """Never answers, so every request waits until the approval timeout expires it."""

    def __init__(self) -> None:
        self.on_wait: Callable[[], None] | None = None

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Wait forever."""
        del request
        if self.on_wait is not None:
            self.on_wait()
        await anyio.sleep_forever()
        return None  # pragma: no cover - only a cancellation ends the wait


class BrokenApprover(SilentApprover):
    """Its channel fails: asking raises, and so does a report."""

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


class SwappingApprover(SilentApprover):
    """Approves, but first turns the call's target into a link to another file."""

    def __init__(self, target: Path, elsewhere: Path) -> None:
        self.target = target
        self.elsewhere = elsewhere

    async def ask(self, request: ApprovalRequest) -> ApprovalAnswer | None:
        """Swap the target for a link, then approve."""
        del request
        self.target.unlink()
        self.target.symlink_to(self.elsewhere)
        return ApprovalAnswer(verdict=ApprovalVerdict.APPROVED, decided_by="machine")


ANSWERS: dict[str, Expected] = {
    "approve": (AttemptEnd.RECEIPT, None),
    "reject": (AttemptEnd.DENIED, DenialCategory.APPROVAL_REJECTED),
    "absent": (AttemptEnd.DENIED, DenialCategory.NO_APPROVER),
    "silent": (AttemptEnd.DENIED, DenialCategory.NO_APPROVER),
    "broken": (AttemptEnd.DENIED, DenialCategory.NO_APPROVER),
    "hanging": (AttemptEnd.DENIED, DenialCategory.APPROVAL_EXPIRED),
}
"""Each approver the machine can switch to, and how a call that needs consent then ends."""


# -- places -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Place:
    """A raw path a call names, and the denial it must meet (None: allowed)."""

    label: str
    denial: DenialCategory | None = None


FILES = (
    Place("notes.txt"),
    Place("sub/data.txt"),
    Place("missing.txt"),
    Place("<workspace>/notes.txt"),
    Place("<outside>/secret.txt", DenialCategory.OUTSIDE_ROOTS),
    Place("<outside>/recording.log", DenialCategory.OUTSIDE_ROOTS),
    Place("<up>/secret.txt", DenialCategory.OUTSIDE_ROOTS),
    Place("~/notes.txt", DenialCategory.OUTSIDE_ROOTS),
    Place("<database>", DenialCategory.PROTECTED_PATH),
    Place("escape", DenialCategory.LINK_BOUNDARY),
)
"""Files inside the workspace, outside every root, relative and absolute, protected, linked."""
DIRECTORIES = (
    Place("."),
    Place("sub"),
    Place("<workspace>"),
    Place("<outside>", DenialCategory.OUTSIDE_ROOTS),
    Place("escape_dir", DenialCategory.LINK_BOUNDARY),
)
SHELL_COMMANDS: dict[str, Place | None] = {
    "ls": Place("reviewed-safe"),
    "cat notes.txt": Place("reviewed-safe"),
    "ls <outside>": Place("names a path outside", DenialCategory.OUTSIDE_ROOTS),
    "echo $HOME": None,
    "sudo ls": Place("hard-denied", DenialCategory.SHELL_POLICY),
}
"""Commands and how they end; None: the command cannot be analysed, so it needs consent."""
INVALID_CALLS: tuple[tuple[str, dict[str, Any], Expected], ...] = (
    ("read_file", {}, (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT)),
    ("read_file", {"path": 3}, (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT)),
    ("write_file", {"path": "notes.txt"}, (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT)),
    (
        "list_directory",
        {"path": ".", "surprise": True},
        (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT),
    ),
    (
        "shell_execute",
        {"command": "ls", "timeout_seconds": "soon"},
        (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT),
    ),
    (
        "record_sequential",
        {"target": ["notes.txt"]},
        (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT),
    ),
    ("find_files", {"pattern": None}, (AttemptEnd.RECEIPT, OutcomeCategory.INVALID_INPUT)),
    ("no_such_tool", {"path": "notes.txt"}, (AttemptEnd.DENIED, DenialCategory.NOT_EXPOSED)),
    ("Read_File", {"path": "notes.txt"}, (AttemptEnd.DENIED, DenialCategory.NOT_EXPOSED)),
)
"""Calls with missing, mistyped or unknown arguments, or unknown tool names."""
ALLOWED_FILES = tuple(place for place in FILES if place.denial is None)
TARGETS = st.sampled_from(ALLOWED_FILES) | st.sampled_from(FILES)
"""Targets drawn from the allowed files more often, so more calls get to run."""
WAITING_ANSWERS = st.sampled_from(["approve", "hanging"])
"""Approvers under which a call waits (in the tool, or for an answer) until cancelled."""
CONTENTS = st.sampled_from(["alpha\n", "alpha beta\n", "beta\nbeta\n", ""])
PATTERNS = st.sampled_from(["*", "**/*.txt", "[", "*.log"])


@dataclass
class AttemptFacts:
    """What the journal holds about one attempt."""

    call_id: CallId
    tool_name: str
    allowed: bool = False
    ends: list[Any] = field(default_factory=list)


def attempt_facts(events: list[Any]) -> dict[AttemptId, AttemptFacts]:
    """Every attempt of a stream: its call, whether it was allowed, and its terminal events."""
    facts: dict[AttemptId, AttemptFacts] = {}
    for event in events:
        if isinstance(event, AuthorizationAttemptStarted):
            facts[event.attempt_id] = AttemptFacts(event.call_id, event.tool_name)
        elif (isinstance(event, PolicyEvaluated) and event.decision is PolicyDecision.ALLOW) or (
            isinstance(event, ApprovalDecided) and event.verdict is ApprovalVerdict.APPROVED
        ):
            facts[event.attempt_id].allowed = True
        elif isinstance(event, TERMINAL_EVENTS):
            facts[event.attempt_id].ends.append(event)
    return facts


def is_cancelled(event: Any) -> bool:
    """Whether a terminal event is a `cancelled` receipt."""
    return isinstance(event, ToolReceiptRecorded) and event.outcome is OutcomeCategory.CANCELLED


# -- the machine --------------------------------------------------------------------------


class DispatchMachine(RuleBasedStateMachine):
    """Random tool calls through the real dispatcher, checked against the journal after each."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="ledgerclaw-dispatch-"))
        self.outside = self.directory / "outside"
        self.outside.mkdir()
        (self.outside / "secret.txt").write_text("secret\n", encoding="utf-8")
        self.log = self.outside / "recording.log"
        self.log.touch()
        self.sequential = RecordingTool(self.log)
        self.parallel = ParallelRecordingTool(self.log)
        self.hanging = HangingApprover()
        self.pipeline: Pipeline = make_pipeline(
            self.directory,
            roots=[(self.directory / "home", ALL)],
            extra_tools=[self.sequential, self.parallel],
            approval_timeout_seconds=APPROVAL_TIMEOUT,
        )
        workspace = self.pipeline.workspace
        (workspace / "sub").mkdir()
        (workspace / "notes.txt").write_text("alpha\n", encoding="utf-8")
        (workspace / "sub" / "data.txt").write_text("alpha\nbeta\ngamma\n", encoding="utf-8")
        for directory in (workspace, workspace / "sub"):
            (directory / "escape").symlink_to(self.outside / "secret.txt")
            (directory / "escape_dir").symlink_to(self.outside)
        self.answer = "absent"
        self.dispatchers: dict[str, Dispatcher] = {}
        """One long-lived dispatcher per approver, as a daemon keeps its own."""
        self.calls = 0
        self.read: tuple[int, list[Any]] = (-1, [])
        """The session's events as last read, and the stream version they end at."""
        self.loaded = False
        self.revisions: dict[str, str] = {}
        """The last revision a result reported, by the raw path of its call."""
        self.dispatched: set[CallId] = set()
        """Calls that must each have exactly one attempt."""
        self.maybe_unstarted: set[CallId] = set()
        """Calls of a cancelled batch that may never have started an attempt."""
        self.ran_before_cancel: set[CallId] = set()
        self.stopped_before_run: set[CallId] = set()
        """Allowed recording calls whose cancellation came before or after the tool started."""

    def teardown(self) -> None:
        """Close the journal and remove the temporary home."""
        self.pipeline.close()
        shutil.rmtree(self.directory)

    # -- plumbing -------------------------------------------------------------------------

    def raw(self, place: Place) -> str:
        """The raw path a call sends for `place`."""
        text = (
            place.label.replace("<workspace>", str(self.pipeline.workspace))
            .replace("<outside>", str(self.outside))
            .replace("<database>", str(self.pipeline.home.database))
        )
        if text.startswith("<up>"):
            # Climbs past the filesystem root, so it lands outside whatever the base is.
            text = "../" * 16 + str(self.outside).lstrip("/") + text.removeprefix("<up>")
        return text

    def approver(self) -> Approver | None:
        """The approver the machine currently uses."""
        if self.answer == "approve":
            return StandingApprover(ApprovalVerdict.APPROVED, "machine")
        if self.answer == "reject":
            return StandingApprover(ApprovalVerdict.REJECTED, "machine")
        if self.answer == "silent":
            return SilentApprover()
        if self.answer == "broken":
            return BrokenApprover()
        if self.answer == "hanging":
            return self.hanging
        return None

    def dispatcher(self) -> Dispatcher:
        """The pipeline's dispatcher, answering approvals with the current approver."""
        if self.answer not in self.dispatchers:
            base = self.pipeline.dispatcher
            approver = self.approver()
            self.dispatchers[self.answer] = Dispatcher(
                base.writer, base.tools, base.policy, approver
            )
        return self.dispatchers[self.answer]

    def request(self, name: str, arguments: dict[str, Any]) -> ToolCallRequest:
        """A call request with a fresh call id, noted as dispatched."""
        self.calls += 1
        request = tool_call(self.calls, name, arguments)
        self.dispatched.add(request.call_id)
        return request

    def expected(self, name: str, place: Place | None) -> Expected:
        """How a valid call of `name` naming `place` must end, given the session so far."""
        if name == "find_files" and not self.loaded:
            return AttemptEnd.CORRECTED, RemediationCode.LOAD_TOOL
        if place is not None and place.denial is not None:
            return AttemptEnd.DENIED, place.denial
        if name in RECORDING:
            return ANSWERS[self.answer]
        return AttemptEnd.RECEIPT, None

    def events(self) -> list[Any]:
        """The session's events, read again only when the stream has grown."""
        stream = self.pipeline.run.session_id.as_uuid()
        version = self.pipeline.journal.stream_version(stream)
        if version != self.read[0]:
            self.read = (version, self.pipeline.events())
        return self.read[1]

    def live(self) -> Session:
        """The session the journal keeps in memory and runs the next command on."""
        live = self.pipeline.journal._working.get(self.pipeline.run.session_id.as_uuid())
        assert isinstance(live, Session)
        return live

    def facts(self) -> dict[AttemptId, AttemptFacts]:
        """The attempts of the session, read from the journal."""
        return attempt_facts(self.events())

    def attempt_of(self, call_id: CallId) -> AttemptFacts:
        """The one attempt a call started."""
        [found] = [f for f in self.facts().values() if f.call_id == call_id]
        return found

    def check(self, request: ToolCallRequest, result: ToolResult, expected: Expected) -> None:
        """The one result of a call matches the request, the journal and the expectation."""
        assert request.call_id == result.call_id
        assert request.name == result.tool_name
        facts = self.facts()[result.attempt_id]
        assert request.call_id == facts.call_id
        [end] = facts.ends
        assert TERMINAL_END[type(end)] == result.end
        if isinstance(end, ToolReceiptRecorded):
            assert end.outcome == result.outcome
            assert end.remediation == result.remediation
            assert end.spill_id == result.spill_id
        elif isinstance(end, AttemptDenied):
            assert end.category == result.denial
        elif isinstance(end, CorrectionIssued):
            assert end.remediation == result.remediation
        kind, detail = expected
        assert kind == result.end, result.text
        if isinstance(detail, DenialCategory):
            assert detail == result.denial
        elif isinstance(detail, RemediationCode):
            assert detail == result.remediation
        elif isinstance(detail, OutcomeCategory):
            assert detail == result.outcome
        revisions = REVISION.findall(result.text)
        if request.name in REVISED and OutcomeCategory.SUCCESS == result.outcome and revisions:
            self.revisions[str(request.arguments["path"])] = revisions[-1]

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        expected: Expected,
        dispatcher: Dispatcher | None = None,
    ) -> ToolResult:
        """Dispatch one call to completion and check its one result."""
        request = self.request(name, arguments)
        dispatcher = dispatcher or self.dispatcher()
        result = anyio.run(dispatcher.call, self.pipeline.run, request)
        self.check(request, result, expected)
        return result

    def logged(self) -> list[str]:
        """The call ids the recording tools logged, in order."""
        return self.log.read_text(encoding="utf-8").split()

    # -- file tools -----------------------------------------------------------------------

    @rule(place=st.sampled_from(FILES), start_line=st.sampled_from([1, 1, 1, 3]))
    def read_file(self, place: Place, start_line: int) -> None:
        """Read a file; a path outside the roots, protected or linked out is denied."""
        arguments = {"path": self.raw(place), "start_line": start_line}
        self.call("read_file", arguments, self.expected("read_file", place))

    @rule(place=st.sampled_from(FILES), content=CONTENTS, checked=st.booleans())
    def write_file(self, place: Place, content: str, checked: bool) -> None:
        """Write a file, optionally at the revision last seen; denied places are never written."""
        raw = self.raw(place)
        arguments: dict[str, Any] = {"path": raw, "content": content}
        if checked:
            arguments["revision"] = self.revisions.get(raw, STALE)
        self.call("write_file", arguments, self.expected("write_file", place))

    @rule(
        place=st.sampled_from(FILES),
        old_text=st.sampled_from(["alpha", "beta", "missing"]),
        new_text=st.sampled_from(["gamma", "alpha", ""]),
        replace_all=st.booleans(),
        read_first=st.booleans(),
    )
    def edit_file(
        self, place: Place, old_text: str, new_text: str, replace_all: bool, read_first: bool
    ) -> None:
        """Edit a file at the revision last seen, which may have gone stale since."""
        if read_first:
            self.read_file(place, 1)
        raw = self.raw(place)
        arguments = {
            "path": raw,
            "old_text": old_text,
            "new_text": new_text,
            "revision": self.revisions.get(raw, STALE),
            "replace_all": replace_all,
        }
        self.call("edit_file", arguments, self.expected("edit_file", place))

    @rule(place=st.sampled_from(DIRECTORIES))
    def list_directory(self, place: Place) -> None:
        """List a directory; one outside the roots or behind a link is denied."""
        self.call(
            "list_directory", {"path": self.raw(place)}, self.expected("list_directory", place)
        )

    @rule(place=st.sampled_from(DIRECTORIES))
    def set_working_directory(self, place: Place) -> None:
        """Declare a project directory; the working context follows the receipt."""
        expected = self.expected("set_working_directory", place)
        result = self.call("set_working_directory", {"path": self.raw(place)}, expected)
        if OutcomeCategory.SUCCESS == result.outcome:
            # Relative paths now name other files, so their revisions no longer apply.
            self.revisions.clear()

    # -- shell, invalid calls, deferred tools ---------------------------------------------

    @rule(command=st.sampled_from(sorted(SHELL_COMMANDS)))
    def shell_execute(self, command: str) -> None:
        """A reviewed-safe command runs, a hard-denied one never does, others need consent."""
        place = SHELL_COMMANDS[command]
        expected = ANSWERS[self.answer] if place is None else self.expected("shell_execute", place)
        command = command.replace("<outside>", str(self.outside))
        self.call("shell_execute", {"command": command}, expected)

    @rule(case=st.sampled_from(INVALID_CALLS))
    def invalid_call(self, case: tuple[str, dict[str, Any], Expected]) -> None:
        """Invalid arguments end in an invalid-input receipt, unknown tools in a denial."""
        name, arguments, expected = case
        self.call(name, arguments, expected)

    @rule(name=st.sampled_from(["find_files", "find_files", "read_file", "no_such_tool"]))
    def load_tool(self, name: str) -> None:
        """Loading a deferred tool makes it callable; loading anything else changes nothing."""
        result = self.call("load_tool", {"name": name}, (AttemptEnd.RECEIPT, None))
        if name == "find_files":
            assert OutcomeCategory.SUCCESS == result.outcome
            self.loaded = True

    @rule(pattern=PATTERNS, place=st.sampled_from(DIRECTORIES), load_first=st.booleans())
    def find_files(self, pattern: str, place: Place, load_first: bool) -> None:
        """A deferred tool is corrected until it is loaded, then authorized like any other."""
        if load_first:
            self.load_tool("find_files")
        arguments = {"pattern": pattern, "path": self.raw(place)}
        self.call("find_files", arguments, self.expected("find_files", place))

    # -- approvals and the recording tool ------------------------------------------------

    @initialize(answer=st.sampled_from(sorted(ANSWERS)))
    def choose_first_approver(self, answer: str) -> None:
        """Calls that need consent start with this approver's answer."""
        self.answer = answer

    @rule(answer=st.sampled_from(sorted(ANSWERS)))
    def switch_approver(self, answer: str) -> None:
        """Later calls that need consent get this approver's answer."""
        self.answer = answer

    @rule(place=st.sampled_from(FILES), parallel=st.booleans())
    def record(self, place: Place, parallel: bool) -> None:
        """The recording tool runs only once approved, and only for an allowed target."""
        name = ParallelRecordingTool.definition.name if parallel else RecordingTool.definition.name
        self.call(name, {"target": self.raw(place)}, self.expected(name, place))

    @rule(
        calls=st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "read_file",
                        "list_directory",
                        "find_files",
                        "record_parallel",
                        "tool_output_read",
                        "write_file",
                    ]
                ),
                TARGETS,
                st.sampled_from(DIRECTORIES),
            ),
            min_size=2,
            max_size=5,
        ),
        cancel=st.booleans(),
        data=st.data(),
    )
    def batch(
        self, calls: list[tuple[str, Place, Place]], cancel: bool, data: st.DataObject
    ) -> None:
        """A batch returns one result per call, in order; cancelled, it leaves none open."""
        answers = WAITING_ANSWERS if cancel else st.sampled_from(sorted(ANSWERS))
        self.answer = data.draw(answers, label="approver")
        requests: list[ToolCallRequest] = []
        expected: list[Expected] = []
        for name, file, directory in calls:
            place: Place | None = file
            if name == "list_directory":
                arguments: dict[str, Any] = {"path": self.raw(directory)}
                place = directory
            elif name == "find_files":
                arguments = {"pattern": "*", "path": self.raw(directory)}
                place = directory
            elif name == "record_parallel":
                arguments = {"target": self.raw(file), "pause": LONG_PAUSE if cancel else 0.0}
            elif name == "tool_output_read":
                arguments = {"call_id": "call_1"}
                place = None
            elif name == "write_file":
                arguments = {"path": self.raw(file), "content": "batch\n"}
            else:
                arguments = {"path": self.raw(file)}
            requests.append(self.request(name, arguments))
            expected.append(self.expected(name, place))
        if cancel:
            finished = self._cancel_batch(requests)
            if finished is None:
                return
            results = finished
        else:
            results = anyio.run(self.dispatcher().call_batch, self.pipeline.run, requests)
        assert [r.call_id for r in requests] == [r.call_id for r in results]
        for request, result, expectation in zip(requests, results, expected, strict=True):
            self.check(request, result, expectation)

    def _cancel_batch(self, requests: list[ToolCallRequest]) -> list[ToolResult] | None:
        """Cancel a batch once a call pauses; its results if it finished before that."""
        finished: list[list[ToolResult]] = []

        async def scenario() -> None:
            paused = anyio.Event()
            self.parallel.on_pause = self.hanging.on_wait = paused.set
            try:
                async with anyio.create_task_group() as tasks:

                    async def run_batch() -> None:
                        batch = self.dispatcher().call_batch(self.pipeline.run, requests)
                        finished.append(await batch)
                        tasks.cancel_scope.cancel()

                    tasks.start_soon(run_batch)
                    await paused.wait()
                    tasks.cancel_scope.cancel()
            finally:
                self.parallel.on_pause = self.hanging.on_wait = None

        anyio.run(scenario)
        if finished:
            [results] = finished
            return results
        # Later groups of a cancelled batch never start, so their calls have no attempt.
        self.dispatched.difference_update(r.call_id for r in requests)
        self.maybe_unstarted.update(r.call_id for r in requests)
        facts = {f.call_id: f for f in self.facts().values()}
        logged = self.logged()
        for request in requests:
            found = facts.get(request.call_id)
            if found is None or request.name not in RECORDING:
                continue
            if found.allowed and is_cancelled(found.ends[-1]):
                # A neighbour's cancellation may land before or after this call started; which
                # is read from the log once, and the invariant holds it to that from then on.
                ran = request.call_id in logged
                (self.ran_before_cancel if ran else self.stopped_before_run).add(request.call_id)
        return None

    @rule(place=TARGETS, parallel=st.booleans(), answer=WAITING_ANSWERS)
    def cancel_while_waiting(self, place: Place, parallel: bool, answer: str) -> None:
        """Cancelled while it runs or awaits approval, a call ends with a `cancelled` receipt."""
        self.answer = answer
        tool = self.parallel if parallel else self.sequential
        request = self.request(
            tool.definition.name, {"target": self.raw(place), "pause": LONG_PAUSE}
        )
        results: list[ToolResult] = []
        raised: list[BaseException] = []

        async def scenario() -> None:
            waiting = anyio.Event()
            tool.on_pause = self.hanging.on_wait = waiting.set
            try:
                async with anyio.create_task_group() as tasks:

                    async def call() -> None:
                        try:
                            results.append(await self.dispatcher().call(self.pipeline.run, request))
                        except anyio.get_cancelled_exc_class() as cancelled:
                            raised.append(cancelled)
                            raise
                        tasks.cancel_scope.cancel()

                    tasks.start_soon(call)
                    await waiting.wait()
                    tasks.cancel_scope.cancel()
            finally:
                tool.on_pause = self.hanging.on_wait = None

        anyio.run(scenario)
        self._settle_cancellable(request, results, raised, place, paused=True)

    @rule(place=TARGETS, delay=st.sampled_from([0.0, 0.001, 0.005]), answer=WAITING_ANSWERS)
    def cancel_after_delay(self, place: Place, delay: float, answer: str) -> None:
        """A call under a short deadline gets its result or ends with a `cancelled` receipt."""
        self.answer = answer
        name = RecordingTool.definition.name
        request = self.request(name, {"target": self.raw(place), "pause": LONG_PAUSE})
        results: list[ToolResult] = []

        async def scenario() -> bool:
            with anyio.move_on_after(delay) as scope:
                results.append(await self.dispatcher().call(self.pipeline.run, request))
            return scope.cancelled_caught

        cancelled = anyio.run(scenario)
        self._settle_cancellable(request, results, [True] if cancelled else [], place, paused=False)

    def _settle_cancellable(
        self,
        request: ToolCallRequest,
        results: list[ToolResult],
        raised: list[Any],
        place: Place,
        *,
        paused: bool,
    ) -> None:
        """Exactly one of: a result, or a propagated cancellation and one `cancelled` receipt.

        `paused` says the cancellation came only once the call paused: in the tool (so an
        allowed call ran) or in the approver (so the call was not allowed yet).
        """
        assert 1 == len(results) + len(raised)
        if results:
            [result] = results
            expected = self.expected(request.name, place)
            # An allowed call pauses far longer than the rule waits, so it cannot finish.
            assert AttemptEnd.RECEIPT != expected[0], result.text
            self.check(request, result, expected)
            return
        facts = self.attempt_of(request.call_id)
        [end] = facts.ends
        assert is_cancelled(end)
        if not facts.allowed:
            self.stopped_before_run.add(request.call_id)
            return
        ran = request.call_id in self.logged()
        if paused:
            assert ran
        # Where a timed cancellation landed (before or during the run) is read from the log
        # once; the invariant holds it to that for the rest of the run.
        (self.ran_before_cancel if ran else self.stopped_before_run).add(request.call_id)

    @rule(parallel=st.booleans(), inside=st.booleans())
    def swap_target_while_approving(self, parallel: bool, inside: bool) -> None:
        """A target that changes while approval is pending is denied; the tool never runs."""
        target = self.pipeline.workspace / "swap.txt"
        target.unlink(missing_ok=True)
        target.write_text("before\n", encoding="utf-8")
        elsewhere = self.pipeline.workspace / "notes.txt" if inside else self.outside / "secret.txt"
        base = self.pipeline.dispatcher
        swapping = SwappingApprover(target, elsewhere)
        dispatcher = Dispatcher(base.writer, base.tools, base.policy, swapping)
        name = ParallelRecordingTool.definition.name if parallel else RecordingTool.definition.name
        expected = (AttemptEnd.DENIED, DenialCategory.TARGET_CHANGED)
        self.call(name, {"target": str(target)}, expected, dispatcher)

    # -- runs -----------------------------------------------------------------------------

    @precondition(lambda self: self.dispatched)
    @rule()
    def new_run(self) -> None:
        """A new run takes over the session; the session's context and loaded tools remain."""
        before = self.pipeline.journal.session(self.pipeline.run.session_id).state()
        self.pipeline.new_run()
        after = self.pipeline.journal.session(self.pipeline.run.session_id).state()
        assert before.working_context == after.working_context
        assert before.loaded_tools == after.loaded_tools
        assert self.pipeline.run.run_id == after.writer

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def every_attempt_has_exactly_one_terminal_event(self) -> None:
        """Each call has one attempt, each attempt one terminal event, and none is open."""
        facts = self.facts()
        calls = Counter(f.call_id for f in facts.values())
        assert [] == [call_id for call_id, count in calls.items() if count != 1]
        assert self.dispatched <= set(calls)
        assert set(calls) <= self.dispatched | self.maybe_unstarted
        for attempt in facts.values():
            assert 1 == len(attempt.ends), attempt
        assert [] == self.live().open_attempts()

    @invariant()
    def the_recording_tool_ran_exactly_for_allowed_calls(self) -> None:
        """Logged calls are those allowed to run; denied and corrected calls never ran."""
        logged = self.logged()
        assert [] == [call_id for call_id, count in Counter(logged).items() if count != 1]
        expected: set[str] = set(self.ran_before_cancel)
        never: set[str] = set(self.stopped_before_run)
        for attempt in self.facts().values():
            if attempt.tool_name not in RECORDING:
                continue
            [end] = attempt.ends
            if not attempt.allowed or not isinstance(end, ToolReceiptRecorded):
                never.add(attempt.call_id)
            elif not is_cancelled(end):
                expected.add(attempt.call_id)
            else:
                assert attempt.call_id in self.ran_before_cancel | self.stopped_before_run
        assert expected == set(logged)
        assert set() == never & set(logged)

    @invariant()
    def nothing_outside_the_roots_changes(self) -> None:
        """Denied writes and commands leave the files outside every root as they were."""
        assert ["recording.log", "secret.txt"] == sorted(p.name for p in self.outside.iterdir())
        assert "secret\n" == (self.outside / "secret.txt").read_text(encoding="utf-8")

    @invariant()
    def replay_agrees_with_the_live_session(self) -> None:
        """The live session, every replay and a reopened journal agree; receipts fold to it."""
        journal = self.pipeline.journal
        session_id = self.pipeline.run.session_id
        state = self.live().state()
        events = self.events()
        folded = None
        for event in events:
            folded = event.mutate(folded)
        assert isinstance(folded, Session)
        assert state == folded.state()
        assert state == journal.session(session_id).state()
        reopened = SqliteJournal(self.pipeline.home.database)
        try:
            assert state == reopened.session(session_id).state()
        finally:
            reopened.close()
        context = WorkingContext()
        for event in events:
            if isinstance(event, ToolReceiptRecorded):
                context = context.after(receipt_of(event))
        assert context == state.working_context


# Fewer steps than the profile's: each step replays the stream three times and reopens the
# journal, so a run of the machine stays well under half a minute on the ci profile.
DispatchMachine.TestCase.settings = settings(stateful_step_count=15, deadline=None)
TestDispatchMachine = DispatchMachine.TestCase
