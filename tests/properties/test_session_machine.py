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
from hypothesis import strategies as st
from hypothesis.stateful import (
    MultipleResults,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from adapters.errors import SessionExistsError
from adapters.journal.journal import EventJournal, SqliteJournal
from domain.errors import DomainError
from domain.ids import RunId, SessionId
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
from domain.session.opening import SessionOpening
from domain.values.attempts import AttemptStatus
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import ChatMessage
from domain.values.runs import RunEndReason
from domain.values.storage import StorageBinding
from tests import strategies
from tests.fakes import InMemoryJournal
from tests.properties.attempt_rules import AttemptRulesMixin
from tests.properties.session_model import (
    RUNS,
    SESSIONS,
    Model,
    Refusal,
    RunRef,
    Target,
    new_model,
)

TERMINAL_EVENTS = (
    AttemptDenied,
    CorrectionIssued,
    ToolReceiptRecorded,
    AttemptOutcomeMarkedUnknown,
)
CLIENT_RUN_IDS = st.none() | st.sampled_from(["retry-a", "retry-b"])
"""Few client run ids, so retried requests collide."""

FIRST_SESSION = SessionId.from_uuid(UUID(int=1))
MAX_SESSIONS = 3
MAX_RUNS = 6
MAX_RESTARTS = 1
"""Bounds that keep a run of the machine on a few streams, where command chains grow long."""


class SessionMachine(AttemptRulesMixin, RuleBasedStateMachine):
    """Random Session commands against a journal, checked against a dict model."""

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

    # -- sessions, storage, runs ----------------------------------------------------------

    def _first_session(self) -> SessionId:
        """The main session every run of the machine starts with, opened on first use."""
        if FIRST_SESSION not in self.model:
            self.live[FIRST_SESSION] = self.journal.open_session(
                SessionOpening(FIRST_SESSION, "first", SessionKind.MAIN, Audience.PERSONAL)
            )
            self.model[FIRST_SESSION] = new_model()
        return FIRST_SESSION

    @initialize(target=SESSIONS)
    def open_the_first_session(self) -> SessionId:
        """Every run of the machine starts with one open main session."""
        return self._first_session()

    @initialize(target=RUNS, run_id=strategies.run_ids())
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
        target=SESSIONS,
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
                self.journal.open_session(SessionOpening(session_id, key, kind, audience, parent))
        elif session_id in self.model:
            with pytest.raises(SessionExistsError):
                self.journal.open_session(SessionOpening(session_id, key, kind, audience, parent))
        else:
            self.live[session_id] = self.journal.open_session(
                SessionOpening(session_id, key, kind, audience, parent)
            )
            self.model[session_id] = new_model(kind)
            return session_id
        assert before == self.journal.stream_version(session_id.as_uuid())
        return multiple()

    @precondition(lambda self: any(m["storage"] is None for m in self.model.values()))
    @rule(
        session_id=SESSIONS,
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
        target=RUNS, session_id=SESSIONS, run_id=strategies.run_ids(), client_run_id=CLIENT_RUN_IDS
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

    @rule(run=RUNS, elsewhere=st.none() | SESSIONS, data=st.data())
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
    @rule(run=RUNS, reason=st.sampled_from(RunEndReason))
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
    @rule(session_id=SESSIONS)
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

    @rule(run=RUNS, data=st.data(), message=strategies.chat_messages())
    def append_message(self, run: RunRef, data: st.DataObject, message: ChatMessage) -> None:
        """Only the writer appends to the transcript."""
        session_id, run_id = self._steer(data, run, self._writers())
        model = self.model[session_id]
        refusal = self._writer_refusal(model, run_id)
        if self._execute(session_id, lambda s: s.append_message(run_id, message), refusal):
            model["messages"].append(message)
            model["version"] += 1

    @precondition(lambda self: self._unsnapshotted())
    @rule(data=st.data())
    def take_snapshot(self, data: st.DataObject) -> None:
        """A snapshot beside the stream adds no event to it."""
        session_id = data.draw(st.sampled_from(self._unsnapshotted()))
        model = self.model[session_id]
        self.journal.app.take_snapshot(session_id.as_uuid())
        model["snapshots"].add(model["version"])
        assert model["version"] == self.journal.stream_version(session_id.as_uuid())

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
