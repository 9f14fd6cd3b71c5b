"""A rule-based state machine over Session commands on a real SQLite journal; properties.

The model is a plain dict per session. Every command goes through `update_session`; a command
the model expects to be refused must raise the predicted DomainError and leave the stream as
it was. After every step, replay (through snapshots and around them) equals the live
aggregate, a session has at most one live writer, every ended attempt has exactly one terminal
event, and a storage binding never changes once made.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from eventsourcing.persistence import IntegrityError
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from adapters.journal.journal import EventJournal, SqliteJournal
from domain.errors import DomainError
from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.session import errors
from domain.session.aggregate import Session
from domain.session.events import (
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    CorrectionIssued,
    RunEnded,
    StorageBound,
    ToolReceiptRecorded,
    WriterClaimed,
)
from domain.session.values import (
    RECENT_FILES_LIMIT,
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    AttemptEnd,
    AttemptStatus,
    Audience,
    ChatMessage,
    DenialCategory,
    OutcomeCategory,
    PolicyDecision,
    RemediationCode,
    RunEndReason,
    SessionKind,
    StorageBinding,
    ToolReceipt,
    WorkingContext,
)
from tests import strategies
from tests.fakes import InMemoryJournal

TERMINAL_EVENTS = (
    AttemptDenied,
    CorrectionIssued,
    ToolReceiptRecorded,
    AttemptOutcomeMarkedUnknown,
)
CLIENT_RUN_IDS = st.none() | st.sampled_from(["retry-a", "retry-b"])
"""Few client run ids, so retried requests collide."""
FILES = [f"/srv/project/file{i}" for i in range(RECENT_FILES_LIMIT + 4)]
RECEIPTS = strategies.tool_receipts(
    paths=st.sampled_from(FILES[:3]) | st.sampled_from(FILES),
    max_files=RECENT_FILES_LIMIT + 2,
    outcomes=st.just(OutcomeCategory.SUCCESS) | st.sampled_from(OutcomeCategory),
)
"""Receipts, half of them successes, over a few files, so files recur and the list overflows."""
DECISIONS = st.sampled_from(
    [PolicyDecision.ALLOW, PolicyDecision.APPROVAL_REQUIRED]
) | st.sampled_from(PolicyDecision)
"""Policy decisions that lean towards the ones that keep an attempt open."""

FIRST_SESSION = SessionId.from_uuid(UUID(int=1))
MAX_SESSIONS = 3
MAX_RUNS = 6
MAX_RESTARTS = 1
MAX_OPEN_ATTEMPTS = 2
"""Bounds that keep a run of the machine on a few streams, where command chains grow long."""
OPEN = (
    AttemptStatus.STARTED,
    AttemptStatus.NEEDS_APPROVAL,
    AttemptStatus.APPROVAL_PENDING,
    AttemptStatus.ALLOWED,
)
"""The statuses of an open attempt, from least to most advanced."""

Refusal = type[DomainError] | None
Model = dict[str, Any]
Target = tuple[Any, ...]
RunRef = tuple[SessionId, RunId]
AttemptRef = tuple[SessionId, RunId, AttemptId]


def _new_model() -> Model:
    """What the model knows of a freshly opened session."""
    return {
        "version": 1,
        "storage": None,
        "writer": None,
        "runs": {},
        "clients": {},
        "attempts": {},
        "messages": [],
        "context": WorkingContext(),
        "snapshots": set(),
    }


def _context_after(context: WorkingContext, receipt: ToolReceipt) -> WorkingContext:
    """The model's own working context: most recent file first, bounded, project kept."""
    recent = list(context.recent_files)
    for activity in receipt.file_activity:
        recent = [activity.path, *(path for path in recent if path != activity.path)]
    return WorkingContext(
        project_directory=receipt.project_declaration or context.project_directory,
        recent_files=tuple(recent[:RECENT_FILES_LIMIT]),
    )


class SessionMachine(RuleBasedStateMachine):
    """Random Session commands against a journal, checked against a dict model."""

    sessions = Bundle("sessions")
    runs = Bundle("runs")
    attempts = Bundle("attempts")

    def __init__(self) -> None:
        super().__init__()
        self.directory: Path | None = None
        self.journal = self.open_journal()
        self.model: dict[SessionId, Model] = {}
        self.live: dict[SessionId, Session] = {}
        self.first_binding: dict[SessionId, StorageBinding] = {}
        self.restarts = 0
        self.tries: Counter[str] = Counter()
        """How often a bounded rule ran, refusals included, so a repeated refusal cannot loop."""
        self.unrecovered: set[SessionId] = set()
        """Sessions opened before the last restart that have not been recovered since."""

    def open_journal(self) -> EventJournal:
        """A real SQLite journal in a fresh temporary directory."""
        self.directory = Path(tempfile.mkdtemp(prefix="ledgerclaw-machine-"))
        return SqliteJournal(self.directory / "journal.db")

    def reopen_journal(self) -> EventJournal:
        """Close the journal and open its file again, as a restarted daemon does."""
        assert self.directory is not None
        self.journal.close()
        return SqliteJournal(self.directory / "journal.db")

    def teardown(self) -> None:
        """Close the journal and remove its directory."""
        self.journal.close()
        if self.directory is not None:
            shutil.rmtree(self.directory)

    # -- plumbing -------------------------------------------------------------------------

    def _execute(
        self, session_id: SessionId, command: Callable[[Session], object], refusal: Refusal
    ) -> bool:
        """Run `command` through the journal; a refusal must be the predicted one, unwritten."""
        stream = session_id.as_uuid()
        before = self.journal.stream_version(stream)
        if refusal is not None:
            with pytest.raises(DomainError) as refused:
                self.journal.update_session(session_id, command)
            assert refusal is type(refused.value)
            assert before == self.journal.stream_version(stream)
            return False

        def run(session: Session) -> Session:
            command(session)
            return session

        self.live[session_id] = self.journal.update_session(session_id, run)
        return True

    def _steer(self, data: st.DataObject, drawn: Target, candidates: list[Target]) -> Target:
        """Swap in a target the model expects to succeed, or keep the one drawn from a bundle.

        Without the swap, long command chains (writer, attempt, policy, approval, receipt)
        would rarely line up within one run of the machine.
        """
        if candidates and not data.draw(st.booleans(), label="keep the drawn target"):
            return data.draw(st.sampled_from(candidates), label="steered target")
        return drawn

    def _live_runs(self, *, without_writer: bool = False) -> list[Target]:
        return sorted(
            (session_id, run_id)
            for session_id, model in self.model.items()
            for run_id, ended in model["runs"].items()
            if ended is None and not (without_writer and model["writer"])
        )

    def _writers(self) -> list[Target]:
        return sorted(
            (session_id, model["writer"])
            for session_id, model in self.model.items()
            if model["writer"] is not None
        )

    def _attempts_in(self, *statuses: AttemptStatus) -> list[Target]:
        return sorted(
            (session_id, attempt["run"], attempt_id)
            for session_id, model in self.model.items()
            for attempt_id, attempt in model["attempts"].items()
            if attempt["status"] in statuses
        )

    def _writer_attempts(self) -> list[Target]:
        return sorted(
            (session_id, attempt["run"], attempt_id)
            for session_id, model in self.model.items()
            for attempt_id, attempt in model["attempts"].items()
            if attempt["run"] == model["writer"]
        )

    def _live_run_refusal(self, model: Model, run_id: RunId) -> Refusal:
        if run_id not in model["runs"]:
            return errors.UnknownRunError
        if model["runs"][run_id] is not None:
            return errors.RunEndedError
        return None

    def _writer_refusal(self, model: Model, run_id: RunId) -> Refusal:
        if model["runs"].get(run_id) is RunEndReason.SUPERSEDED:
            return errors.StaleWriterError
        refusal = self._live_run_refusal(model, run_id)
        if refusal is None and model["writer"] != run_id:
            return errors.StaleWriterError
        return refusal

    def _open_attempt_refusal(self, model: Model, run_id: RunId, attempt_id: AttemptId) -> Refusal:
        refusal = self._writer_refusal(model, run_id)
        attempt = model["attempts"].get(attempt_id)
        if refusal is None and attempt is None:
            return errors.UnknownAttemptError
        if refusal is None and attempt["run"] != run_id:
            return errors.AttemptRunMismatchError
        if refusal is None and attempt["status"] is AttemptStatus.ENDED:
            return errors.AttemptAlreadyEndedError
        return refusal

    def _status(self, model: Model, attempt_id: AttemptId) -> AttemptStatus | None:
        attempt = model["attempts"].get(attempt_id)
        return None if attempt is None else attempt["status"]

    def _update_attempt(self, model: Model, attempt_id: AttemptId, **changes: Any) -> None:
        model["attempts"][attempt_id].update(changes)
        model["version"] += 1

    def _end_attempt(
        self, model: Model, attempt_id: AttemptId, end: AttemptEnd, **changes: Any
    ) -> None:
        self._update_attempt(model, attempt_id, status=AttemptStatus.ENDED, end=end, **changes)

    def _end_run(self, model: Model, run_id: RunId, reason: RunEndReason) -> None:
        """Open attempts of the run end first: allowed ones unknown, the others denied."""
        for attempt_id, attempt in model["attempts"].items():
            if attempt["run"] != run_id or attempt["status"] is AttemptStatus.ENDED:
                continue
            allowed = attempt["status"] is AttemptStatus.ALLOWED
            self._end_attempt(
                model, attempt_id, AttemptEnd.UNKNOWN if allowed else AttemptEnd.DENIED
            )
        model["runs"][run_id] = reason
        model["version"] += 1
        if model["writer"] == run_id:
            model["writer"] = None

    def _attempt_actor(
        self,
        data: st.DataObject,
        attempt: Target,
        stranger: Target | None,
        ready: tuple[AttemptStatus, ...],
    ) -> Target:
        """The (session, run, attempt) a command acts as.

        Either an attempt in a `ready` status, acting as its own run; or the drawn attempt,
        acted on by its own run or by a stranger's run (perhaps of another session).
        """
        steered = self._steer(data, attempt, self._attempts_in(*ready))
        if steered is not attempt or stranger is None:
            return steered
        return (stranger[0], stranger[1], attempt[2])

    # -- sessions, storage, runs ----------------------------------------------------------

    def _first_session(self) -> SessionId:
        """The main session every run of the machine starts with, opened on first use."""
        if FIRST_SESSION not in self.model:
            self.live[FIRST_SESSION] = self.journal.open_session(
                FIRST_SESSION, "first", SessionKind.MAIN, Audience.PERSONAL
            )
            self.model[FIRST_SESSION] = _new_model()
        return FIRST_SESSION

    @initialize(target=sessions)
    def open_the_first_session(self) -> SessionId:
        """Every run of the machine starts with one open main session."""
        return self._first_session()

    @initialize(target=runs, run_id=strategies.run_ids())
    def start_the_first_writer(self, run_id: RunId) -> RunRef:
        """The first session's first run starts as its writer."""
        session_id = self._first_session()
        self._execute(session_id, lambda s: s.start_run(run_id), None)
        self._execute(session_id, lambda s: s.claim_writer(run_id), None)
        model = self.model[session_id]
        model["runs"][run_id] = None
        model["writer"] = run_id
        model["version"] += 2
        return (session_id, run_id)

    @precondition(lambda self: self.tries["open_session"] < MAX_SESSIONS)
    @rule(
        target=sessions,
        session_id=strategies.session_ids(),
        key=strategies.short_texts(),
        kind=st.sampled_from(SessionKind),
        audience=st.sampled_from(Audience),
        parent=st.none() | strategies.session_ids(),
    )
    def open_session(
        self,
        session_id: SessionId,
        key: str,
        kind: SessionKind,
        audience: Audience,
        parent: SessionId | None,
    ) -> SessionId | MultipleResults[SessionId]:
        """Open a session; a mismatched parent link or a reused id is refused unstored."""
        self.tries["open_session"] += 1
        before = self.journal.stream_version(session_id.as_uuid())
        mismatched = (kind is SessionKind.SUBAGENT) != (parent is not None)
        if mismatched or parent == session_id:
            with pytest.raises(errors.InvalidSessionLinkError):
                self.journal.open_session(session_id, key, kind, audience, parent)
        elif session_id in self.model:
            with pytest.raises(IntegrityError):
                self.journal.open_session(session_id, key, kind, audience, parent)
        else:
            self.live[session_id] = self.journal.open_session(
                session_id, key, kind, audience, parent
            )
            self.model[session_id] = _new_model()
            return session_id
        assert before == self.journal.stream_version(session_id.as_uuid())
        return multiple()

    @precondition(lambda self: any(m["storage"] is None for m in self.model.values()))
    @rule(
        session_id=sessions,
        layout_version=st.integers(1, 9),
        envelope_root=strategies.canonical_paths(),
    )
    def bind_storage(self, session_id: SessionId, layout_version: int, envelope_root: str) -> None:
        """Bind storage once; any second binding is refused, even an identical one."""
        model = self.model[session_id]
        refusal = errors.StorageAlreadyBoundError if model["storage"] else None
        if self._execute(
            session_id, lambda s: s.bind_storage(layout_version, envelope_root), refusal
        ):
            model["storage"] = (layout_version, envelope_root)
            model["version"] += 1

    @precondition(lambda self: self.tries["start_run"] < MAX_RUNS)
    @rule(
        target=runs, session_id=sessions, run_id=strategies.run_ids(), client_run_id=CLIENT_RUN_IDS
    )
    def start_run(
        self, session_id: SessionId, run_id: RunId, client_run_id: str | None
    ) -> RunRef | MultipleResults[RunRef]:
        """Start a run; a reused run id or client run id is refused."""
        self.tries["start_run"] += 1
        model = self.model[session_id]
        refusal: Refusal = None
        if run_id in model["runs"]:
            refusal = errors.RunAlreadyStartedError
        elif client_run_id in model["clients"]:
            refusal = errors.ClientRunAlreadyStartedError
        if not self._execute(session_id, lambda s: s.start_run(run_id, client_run_id), refusal):
            return multiple()
        model["runs"][run_id] = None
        if client_run_id is not None:
            model["clients"][client_run_id] = run_id
        model["version"] += 1
        return (session_id, run_id)

    @rule(run=runs, elsewhere=st.none() | sessions, data=st.data())
    def claim_writer(self, run: RunRef, elsewhere: SessionId | None, data: st.DataObject) -> None:
        """A live run of the session becomes the writer; the previous writer ends, superseded."""
        steered = self._steer(data, run, self._live_runs(without_writer=True))
        session_id, run_id = steered
        if steered is run and elsewhere is not None:
            session_id = elsewhere
        model = self.model[session_id]
        refusal = self._live_run_refusal(model, run_id)
        if not self._execute(session_id, lambda s: s.claim_writer(run_id), refusal):
            return
        superseded = model["writer"]
        if superseded == run_id:
            return
        model["version"] += 1
        model["writer"] = run_id
        if superseded is not None:
            self._end_run(model, superseded, RunEndReason.SUPERSEDED)

    @precondition(lambda self: self._live_runs())
    @rule(run=runs, reason=st.sampled_from(RunEndReason))
    def end_run(self, run: RunRef, reason: RunEndReason) -> None:
        """A live run ends, and its open attempts end with it."""
        session_id, run_id = run
        model = self.model[session_id]
        refusal = self._live_run_refusal(model, run_id)
        if self._execute(session_id, lambda s: s.end_run(run_id, reason), refusal):
            self._end_run(model, run_id, reason)

    @precondition(lambda self: self.restarts < MAX_RESTARTS)
    @rule()
    def restart(self) -> None:
        """The journal is closed and opened again; nothing stored is lost."""
        self.restarts += 1
        self.journal = self.reopen_journal()
        self.unrecovered = set(self.model)
        self.live = {session_id: self.journal.session(session_id) for session_id in self.live}

    @precondition(lambda self: self.unrecovered)
    @rule(session_id=sessions)
    def recover(self, session_id: SessionId) -> None:
        """After a restart, recovery ends every live run as crashed and names exactly those."""
        self.unrecovered.discard(session_id)
        model = self.model[session_id]
        expected = [run_id for run_id, ended in model["runs"].items() if ended is None]
        ended: list[RunId] = []
        self._execute(session_id, lambda s: ended.extend(s.recover()), None)
        assert expected == ended
        for run_id in expected:
            self._end_run(model, run_id, RunEndReason.CRASHED)

    @rule(run=runs, data=st.data(), message=strategies.chat_messages())
    def append_message(self, run: RunRef, data: st.DataObject, message: ChatMessage) -> None:
        """Only the writer appends to the transcript."""
        session_id, run_id = self._steer(data, run, self._writers())
        model = self.model[session_id]
        refusal = self._writer_refusal(model, run_id)
        if self._execute(session_id, lambda s: s.append_message(run_id, message), refusal):
            model["messages"].append(message)
            model["version"] += 1

    def _unsnapshotted(self) -> list[SessionId]:
        return sorted(
            session_id
            for session_id, model in self.model.items()
            if model["version"] not in model["snapshots"]
        )

    @precondition(lambda self: self._unsnapshotted())
    @rule(data=st.data())
    def take_snapshot(self, data: st.DataObject) -> None:
        """A snapshot beside the stream adds no event to it."""
        session_id = data.draw(st.sampled_from(self._unsnapshotted()))
        model = self.model[session_id]
        self.journal.app.take_snapshot(session_id.as_uuid())
        model["snapshots"].add(model["version"])
        assert model["version"] == self.journal.stream_version(session_id.as_uuid())

    # -- authorization attempts -----------------------------------------------------------

    @precondition(lambda self: len(self._attempts_in(*OPEN)) < MAX_OPEN_ATTEMPTS)
    @rule(
        target=attempts,
        run=runs,
        data=st.data(),
        attempt_id=strategies.attempt_ids(),
        call_id=strategies.call_ids(),
        tool_name=strategies.tool_names(),
    )
    def start_attempt(
        self,
        run: RunRef,
        data: st.DataObject,
        attempt_id: AttemptId,
        call_id: CallId,
        tool_name: str,
    ) -> AttemptRef | MultipleResults[AttemptRef]:
        """Only the writer starts an attempt, and an attempt id is used once per session."""
        session_id, run_id = self._steer(data, run, self._writers())
        return self._start_attempt((session_id, run_id, attempt_id), call_id, tool_name)

    def _start_attempt(
        self, actor: AttemptRef, call_id: CallId, tool_name: str
    ) -> AttemptRef | MultipleResults[AttemptRef]:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._writer_refusal(model, run_id)
        if refusal is None and attempt_id in model["attempts"]:
            refusal = errors.AttemptAlreadyStartedError
        if not self._execute(
            session_id, lambda s: s.start_attempt(run_id, attempt_id, call_id, tool_name), refusal
        ):
            return multiple()
        model["attempts"][attempt_id] = {
            "run": run_id,
            "status": AttemptStatus.STARTED,
            "decision": None,
            "end": None,
            "outcome": None,
        }
        model["version"] += 1
        return actor

    @precondition(lambda self: self._writers())
    @rule(
        target=attempts,
        data=st.data(),
        attempt_id=strategies.attempt_ids(),
        call_id=strategies.call_ids(),
        tool_name=strategies.tool_names(),
    )
    def perform_a_tool_call(
        self, data: st.DataObject, attempt_id: AttemptId, call_id: CallId, tool_name: str
    ) -> AttemptRef | MultipleResults[AttemptRef]:
        """A writer takes one tool call through its lifecycle, one command per step.

        The granular rules interleave these steps with everything else; this rule makes
        sure whole lifecycles, approvals and receipts included, happen in most runs.
        """
        session_id, run_id = data.draw(st.sampled_from(self._writers()), label="writer")
        actor = (session_id, run_id, attempt_id)
        started = self._start_attempt(actor, call_id, tool_name)
        for _ in range(len(OPEN)):
            if self._status(self.model[session_id], attempt_id) not in OPEN:
                break
            self._advance(data, actor)
        return started

    def _evaluate(
        self, actor: Target, decision: PolicyDecision, denial: DenialCategory | None
    ) -> None:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if refusal is None and self._status(model, attempt_id) is not AttemptStatus.STARTED:
            refusal = errors.PolicyAlreadyEvaluatedError
        if refusal is None and decision is PolicyDecision.DENY and denial is None:
            refusal = errors.DenialCategoryMissingError
        if not self._execute(
            session_id,
            lambda s: s.evaluate_policy(run_id, attempt_id, decision, rule="r", denial=denial),
            refusal,
        ):
            return
        status = {
            PolicyDecision.ALLOW: AttemptStatus.ALLOWED,
            PolicyDecision.APPROVAL_REQUIRED: AttemptStatus.NEEDS_APPROVAL,
            PolicyDecision.DENY: AttemptStatus.STARTED,
        }[decision]
        self._update_attempt(model, attempt_id, status=status, decision=decision)
        if decision is PolicyDecision.DENY:
            self._end_attempt(model, attempt_id, AttemptEnd.DENIED)

    def _request_approval(self, actor: Target, mode: ApprovalMode) -> None:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if refusal is None and self._status(model, attempt_id) is not AttemptStatus.NEEDS_APPROVAL:
            refusal = errors.ApprovalNotRequiredError
        if self._execute(
            session_id, lambda s: s.request_approval(run_id, attempt_id, "may I?", mode), refusal
        ):
            self._update_attempt(model, attempt_id, status=AttemptStatus.APPROVAL_PENDING)

    def _decide(
        self,
        session_id: SessionId,
        attempt_id: AttemptId,
        verdict: ApprovalVerdict,
        scope: ApprovalScope,
    ) -> None:
        model = self.model[session_id]
        pending = self._status(model, attempt_id) is AttemptStatus.APPROVAL_PENDING
        refusal = None if pending else errors.ApprovalNotPendingError
        if not self._execute(
            session_id, lambda s: s.decide_approval(attempt_id, verdict, "operator", scope), refusal
        ):
            return
        approved = verdict is ApprovalVerdict.APPROVED
        status = AttemptStatus.ALLOWED if approved else AttemptStatus.APPROVAL_PENDING
        self._update_attempt(model, attempt_id, status=status)
        if not approved:
            self._end_attempt(model, attempt_id, AttemptEnd.DENIED)

    def _record_receipt(self, actor: Target, receipt: ToolReceipt) -> None:
        session_id, run_id, attempt_id = actor
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if refusal is None and self._status(model, attempt_id) is not AttemptStatus.ALLOWED:
            refusal = errors.ReceiptWithoutAllowError
        if not self._execute(
            session_id, lambda s: s.record_receipt(run_id, attempt_id, receipt), refusal
        ):
            return
        self._end_attempt(model, attempt_id, AttemptEnd.RECEIPT, outcome=receipt.outcome)
        success = receipt.outcome is OutcomeCategory.SUCCESS
        if success and (receipt.file_activity or receipt.project_declaration):
            context = _context_after(model["context"], receipt)
            if context != model["context"]:
                model["context"] = context
                model["version"] += 1

    @precondition(lambda self: self._attempts_in(*OPEN))
    @rule(data=st.data())
    def advance_an_open_attempt(self, data: st.DataObject) -> None:
        """An open attempt takes its next step: policy, approval request, decision or receipt.

        One rule for every step, favouring the attempts furthest along, keeps whole
        lifecycles within a run of the machine.
        """
        by_progress = [a for status in reversed(OPEN) for a in self._attempts_in(status)]
        self._advance(data, data.draw(st.sampled_from(by_progress), label="attempt"))

    def _advance(self, data: st.DataObject, actor: AttemptRef) -> None:
        """The next step of an open attempt, as the runtime would take it."""
        status = self.model[actor[0]]["attempts"][actor[2]]["status"]
        if status is AttemptStatus.STARTED:
            decision = data.draw(DECISIONS, label="decision")
            self._evaluate(actor, decision, data.draw(st.sampled_from(DenialCategory)))
        elif status is AttemptStatus.NEEDS_APPROVAL:
            self._request_approval(actor, data.draw(st.sampled_from(ApprovalMode), label="mode"))
        elif status is AttemptStatus.APPROVAL_PENDING:
            verdict = data.draw(st.sampled_from(ApprovalVerdict), label="verdict")
            self._decide(actor[0], actor[2], verdict, ApprovalScope.ONCE)
        else:
            self._record_receipt(actor, data.draw(RECEIPTS, label="receipt"))

    @rule(
        attempt=attempts,
        stranger=st.none() | runs,
        data=st.data(),
        decision=st.sampled_from(PolicyDecision),
        denial=st.none() | st.sampled_from(DenialCategory),
    )
    def evaluate_policy(
        self,
        attempt: AttemptRef,
        stranger: RunRef | None,
        data: st.DataObject,
        decision: PolicyDecision,
        denial: DenialCategory | None,
    ) -> None:
        """Policy decides an open attempt once; a deny needs a category and ends the attempt."""
        started = (AttemptStatus.STARTED,)
        self._evaluate(self._attempt_actor(data, attempt, stranger, started), decision, denial)

    @rule(
        attempt=attempts,
        stranger=st.none() | runs,
        data=st.data(),
        mode=st.sampled_from(ApprovalMode),
    )
    def request_approval(
        self, attempt: AttemptRef, stranger: RunRef | None, data: st.DataObject, mode: ApprovalMode
    ) -> None:
        """Approval is requested only for an open attempt whose policy asked for it."""
        waiting = (AttemptStatus.NEEDS_APPROVAL,)
        self._request_approval(self._attempt_actor(data, attempt, stranger, waiting), mode)

    @rule(
        attempt=attempts,
        elsewhere=st.none() | sessions,
        data=st.data(),
        verdict=st.sampled_from(ApprovalVerdict),
        scope=st.sampled_from(ApprovalScope),
    )
    def decide_approval(
        self,
        attempt: AttemptRef,
        elsewhere: SessionId | None,
        data: st.DataObject,
        verdict: ApprovalVerdict,
        scope: ApprovalScope,
    ) -> None:
        """Only a pending request is decided; a rejection or expiry denies the attempt."""
        steered = self._steer(data, attempt, self._attempts_in(AttemptStatus.APPROVAL_PENDING))
        session_id = steered[0] if steered is not attempt or elsewhere is None else elsewhere
        self._decide(session_id, steered[2], verdict, scope)

    @rule(
        attempt=attempts,
        stranger=st.none() | runs,
        data=st.data(),
        receipt=RECEIPTS,
    )
    def record_receipt(
        self,
        attempt: AttemptRef,
        stranger: RunRef | None,
        data: st.DataObject,
        receipt: ToolReceipt,
    ) -> None:
        """Only an allowed attempt of the writer gets a receipt, which may move the context."""
        allowed = (AttemptStatus.ALLOWED,)
        self._record_receipt(self._attempt_actor(data, attempt, stranger, allowed), receipt)

    # Corrections and unknown outcomes end attempts. Steering them to open attempts only
    # would cut most lifecycles short, so they are steered to any attempt of a current
    # writer, ended ones included, where the refusal is AttemptAlreadyEndedError.

    @precondition(lambda self: self._writer_attempts())
    @rule(
        attempt=attempts,
        stranger=st.none() | runs,
        data=st.data(),
        remediation=st.sampled_from(RemediationCode),
        detail=strategies.details(),
    )
    def issue_correction(
        self,
        attempt: AttemptRef,
        stranger: RunRef | None,
        data: st.DataObject,
        remediation: RemediationCode,
        detail: str,
    ) -> None:
        """Any open attempt of the writer can end with a correction instead of running."""
        session_id, run_id, attempt_id = self._steer(data, attempt, self._writer_attempts())
        if stranger is not None:
            session_id, run_id = stranger
        model = self.model[session_id]
        refusal = self._open_attempt_refusal(model, run_id, attempt_id)
        if self._execute(
            session_id,
            lambda s: s.issue_correction(run_id, attempt_id, remediation, detail),
            refusal,
        ):
            self._end_attempt(model, attempt_id, AttemptEnd.CORRECTED)

    @precondition(lambda self: self._writer_attempts())
    @rule(
        attempt=attempts,
        elsewhere=st.none() | sessions,
        data=st.data(),
        reason=strategies.short_texts(),
    )
    def mark_unknown(
        self, attempt: AttemptRef, elsewhere: SessionId | None, data: st.DataObject, reason: str
    ) -> None:
        """Any open attempt can get the outcome unknown; an ended or foreign one cannot."""
        session_id, _, attempt_id = self._steer(data, attempt, self._writer_attempts())
        if elsewhere is not None:
            session_id = elsewhere
        model = self.model[session_id]
        status = self._status(model, attempt_id)
        refusal: Refusal = None
        if status is None:
            refusal = errors.UnknownAttemptError
        elif status is AttemptStatus.ENDED:
            refusal = errors.AttemptAlreadyEndedError
        if self._execute(session_id, lambda s: s.mark_attempt_unknown(attempt_id, reason), refusal):
            self._end_attempt(model, attempt_id, AttemptEnd.UNKNOWN)

    # -- invariants -----------------------------------------------------------------------

    def _stream(self, session_id: SessionId) -> list[Any]:
        return list(self.journal.app.events.get(session_id.as_uuid()))

    @invariant()
    def replay_equals_the_live_aggregate(self) -> None:
        """Loading, replaying without snapshots and the live aggregate agree on the state."""
        for session_id, live in self.live.items():
            stream = session_id.as_uuid()
            events = self._stream(session_id)
            folded = None
            for event in events:
                folded = event.mutate(folded)
            assert folded is not None
            assert live.state() == self.journal.session(session_id).state()
            assert live.state() == self.journal.app.repository.get(stream).state()
            assert live.state() == folded.state()
            assert self.model[session_id]["version"] == len(events)
            assert len(events) == self.journal.stream_version(stream)

    @invariant()
    def live_state_matches_the_model(self) -> None:
        """Runs, attempts, transcript and working context are what the model expects."""
        for session_id, live in self.live.items():
            model, state = self.model[session_id], live.state()
            assert model["runs"] == {r: run.ended for r, run in state.runs.items()}
            assert model["attempts"] == {
                a: {
                    "run": attempt.run_id,
                    "status": attempt.status,
                    "decision": attempt.decision,
                    "end": attempt.end,
                    "outcome": attempt.outcome,
                }
                for a, attempt in state.attempts.items()
            }
            assert len(model["messages"]) == state.message_count
            assert model["messages"] == self.journal.transcript(session_id)
            assert model["context"] == state.working_context
            storage = state.storage
            assert model["storage"] == (
                None if storage is None else (storage.layout_version, storage.envelope_root)
            )

    @invariant()
    def at_most_one_writer_and_it_is_live(self) -> None:
        """The writer is the model's, its run is live, and no other run that claimed is live."""
        for session_id, live in self.live.items():
            state = live.state()
            assert self.model[session_id]["writer"] == state.writer
            if state.writer is not None:
                assert state.runs[state.writer].ended is None
            claimed = {e.run_id for e in self._stream(session_id) if isinstance(e, WriterClaimed)}
            live_claimants = {r for r in claimed if state.runs[r].ended is None}
            assert live_claimants <= {state.writer}

    @invariant()
    def every_ended_attempt_has_exactly_one_terminal_event(self) -> None:
        """An ended attempt has one terminal event; an open attempt has none."""
        for session_id, live in self.live.items():
            events = self._stream(session_id)
            terminal = Counter(e.attempt_id for e in events if isinstance(e, TERMINAL_EVENTS))
            state = live.state()
            assert set(terminal) <= set(state.attempts)
            for attempt_id, attempt in state.attempts.items():
                expected = 1 if attempt.status is AttemptStatus.ENDED else 0
                assert expected == terminal[attempt_id]
            ended_runs = Counter(e.run_id for e in events if isinstance(e, RunEnded))
            assert all(1 == count for count in ended_runs.values())

    @invariant()
    def storage_binding_never_changes(self) -> None:
        """Once a session's storage is bound, every later state shows the same binding."""
        for session_id, live in self.live.items():
            storage = live.state().storage
            if session_id in self.first_binding:
                assert self.first_binding[session_id] == storage
            elif storage is not None:
                self.first_binding[session_id] = storage
            bound = [e for e in self._stream(session_id) if isinstance(e, StorageBound)]
            assert len(bound) <= 1


class InMemorySessionMachine(SessionMachine):
    """The same machine on the in-memory journal: same application and mapper, no disk."""

    def open_journal(self) -> EventJournal:
        """The in-memory journal fake."""
        return InMemoryJournal()

    def reopen_journal(self) -> EventJournal:
        """The fake keeps its events only while it is open, so a restart keeps it open."""
        return self.journal


TestSessionMachine = SessionMachine.TestCase
TestInMemorySessionMachine = InMemorySessionMachine.TestCase
