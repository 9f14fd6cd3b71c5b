"""Projections caught up bit by bit equal one rebuild; positions; failed batches; properties.

Random session histories (several sessions, runs, attempts through their whole lifecycle:
approvals, denials, corrections, receipts with file activity, unknown outcomes, run ends),
plus device pairings, are written to a real SQLite journal through `update_session` and
`update_devices`. Commands the aggregate refuses are skipped, as the runtime would report
them. Between writes the projections catch up in batches of random size, and the runner is
replaced by a fresh one ("restart") now and then. At the end every table must hold exactly
the rows of one rebuild of the same journal into a scratch file.

Three more: each projection keeps its own position; a batch that fails (while its
statements are built, or in one of them) leaves the position and the rows as they were
before it, after which a good projection catches up fully; and a catch-up or rebuild that
commits while another catch-up builds its batch does not get that batch applied twice.

Each example works in its own temporary directory, removed afterwards. Under the CI profile
the examples are capped (`EXAMPLES`), which keeps the file at about ten seconds.
"""

from __future__ import annotations

import copy
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from adapters.journal.event_log import SqliteEventLog
from adapters.journal.journal import SqliteJournal
from adapters.projections.runner import POSITIONS, ProjectionRunner
from adapters.settings.journal import Durability, JournalSettings
from domain.devices.aggregate import DeviceRegistry
from domain.errors import DomainError
from domain.ids import AttemptId, CallId, DeviceId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.attempts import AttemptStatus
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import (
    ApprovalMode,
    ApprovalScope,
    ApprovalVerdict,
    DenialCategory,
    PolicyDecision,
)
from domain.values.conversation import ChatMessage, MessageRole
from domain.values.receipts import FileActivity, OutcomeCategory, RemediationCode, ToolReceipt
from domain.values.runs import RunEndReason
from projections.contract import Batch, Events, Projection
from projections.registry import ALL_PROJECTIONS
from tests import strategies

SESSION_SLOTS = 3
RUN_SLOTS = 3
ATTEMPT_SLOTS = 16
DEVICE_SLOTS = 2
PATHS = (
    "/",
    "/work/project",
    "/work/project/src/app.py",
    "/work/project/src/util.py",
    "/work/project/README.md",
    "/work/other/notes.txt",
)
"""A small pool, so files recur across receipts and sessions."""
TOOLS = ("read_file", "write_file", "edit_file", "bash", "grep")
SALT = bytes(range(16))
SECRET = "s" * 32
BASE_TIME = datetime(2026, 11, 30, 8, tzinfo=UTC)
EXAMPLES = min(settings().max_examples, 40)
"""The CI profile asks for 100; each example here writes a journal and rebuilds it."""


class NothingToDoError(Exception):
    """A drawn command found no target in the session as it stands; nothing is written."""


# -- ids that stay apart across sessions ----------------------------------------------------


def session_id_of(slot: int) -> SessionId:
    """The session in `slot`."""
    return SessionId.from_uuid(UUID(int=slot + 1))


def run_of(session: Session, slot: int) -> RunId:
    """The session's run in `slot`; run ids never repeat across sessions."""
    return RunId.from_uuid(UUID(int=(session.id.int << 16) | (0x100 + slot)))


def attempt_of(session: Session, slot: int) -> AttemptId:
    """The session's attempt in `slot`; attempt ids never repeat across sessions."""
    return AttemptId.from_uuid(UUID(int=(session.id.int << 16) | (0x200 + slot)))


def device_of(slot: int) -> DeviceId:
    """The device in `slot`."""
    return DeviceId.from_uuid(UUID(int=(0xD << 64) | slot))


def writer_of(session: Session) -> RunId:
    """The session's writer, or nothing to do when it has none."""
    if session.writer is None:
        raise NothingToDoError
    return session.writer


# -- session and device commands (module functions, so failing examples print readably) --


def start_run(session: Session, slot: int, client_run_id: str | None, claim: bool) -> None:
    """Start the run in `slot`, and make it the writer in the same save if `claim`."""
    run_id = run_of(session, slot)
    session.start_run(run_id, client_run_id)
    if claim:
        session.claim_writer(run_id)


def claim_writer(session: Session, slot: int) -> None:
    """Make the run in `slot` the writer; the previous writer's run ends, superseded."""
    session.claim_writer(run_of(session, slot))


def append_message(session: Session, message: ChatMessage) -> None:
    """The writer appends a message."""
    session.append_message(writer_of(session), message)


def start_attempt(session: Session, slot: int, tool: str) -> None:
    """The writer opens the attempt in `slot`."""
    session.start_attempt(
        writer_of(session), attempt_of(session, slot), CallId(f"call-{slot}"), tool
    )


@dataclass(frozen=True)
class Move:
    """How one open attempt moves on: its next lifecycle step, or an early end."""

    variant: str
    decision: PolicyDecision
    denial: DenialCategory
    mode: ApprovalMode
    targets: tuple[FileActivity, ...]
    grant_key: str
    verdict: ApprovalVerdict
    scope: ApprovalScope
    receipt: ToolReceipt
    remediation: RemediationCode
    detail: str


def advance(session: Session, pick: int, move: Move) -> None:
    """Move one of the writer's open attempts one step on its lifecycle, or end it early."""
    candidates = [a for a in session.open_attempts() if a.run_id == session.writer]
    if not candidates:
        raise NothingToDoError
    step_attempt(session, candidates[pick % len(candidates)].attempt_id, move)


def tool_turn(session: Session, slot: int, tool: str, moves: tuple[Move, ...]) -> None:
    """The writer opens the attempt in `slot` and moves it on until it ends or `moves` run out.

    A refused move is skipped (a refused command triggers nothing), as a runtime would go on.
    """
    attempt_id = attempt_of(session, slot)
    start_attempt(session, slot, tool)
    for move in moves:
        if session.attempts[attempt_id].status is AttemptStatus.ENDED:
            return
        try:
            step_attempt(session, attempt_id, move)
        except DomainError:
            continue


def step_attempt(session: Session, attempt_id: AttemptId, move: Move) -> None:
    """Move the attempt one step on its lifecycle, or end it early."""
    attempt = session.attempts[attempt_id]
    run_id = attempt.run_id
    if move.variant == "correct":
        session.issue_correction(run_id, attempt_id, move.remediation, move.detail)
    elif move.variant == "deny":
        session.deny_attempt(run_id, attempt_id, move.denial, move.detail)
    elif move.variant == "unknown":
        session.mark_attempt_unknown(attempt_id, move.detail or "lost")
    elif move.variant == "early receipt":
        session.record_receipt(run_id, attempt_id, move.receipt)
    elif attempt.status is AttemptStatus.STARTED:
        decision = move.decision
        session.evaluate_policy(
            run_id,
            attempt_id,
            decision,
            rule=f"rule-{decision}",
            detail=move.detail,
            approval_mode=move.mode if decision is PolicyDecision.APPROVAL_REQUIRED else None,
            denial=move.denial if decision is PolicyDecision.DENY else None,
            targets=move.targets,
        )
    elif attempt.status is AttemptStatus.NEEDS_APPROVAL:
        session.request_approval(run_id, attempt_id, move.detail, move.mode, move.grant_key)
    elif attempt.status is AttemptStatus.APPROVAL_PENDING:
        directory = "/work/project" if move.scope is ApprovalScope.DIRECTORY else None
        session.decide_approval(attempt_id, move.verdict, "operator", move.scope, directory)
    else:
        session.record_receipt(run_id, attempt_id, move.receipt)


def end_run(session: Session, pick: int, reason: RunEndReason) -> None:
    """End one live run; its open attempts end with it."""
    live = [run.run_id for run in session.runs.values() if run.ended is None]
    if not live:
        raise NothingToDoError
    session.end_run(live[pick % len(live)], reason)


def recover(session: Session) -> None:
    """End every live run as crashed, as after a restart of the daemon."""
    session.recover()


def bind_storage(session: Session, root: str) -> None:
    """Bind the session's storage envelope (refused the second time)."""
    session.bind_storage(1, root)


def load_tool_schema(session: Session, tool: str) -> None:
    """The writer loads a deferred tool's schema."""
    session.load_tool_schema(writer_of(session), tool)


def pair_device(registry: DeviceRegistry, slot: int, name: str, at: datetime) -> None:
    """Pair the device in `slot`."""
    registry.pair(device_of(slot), name, SALT, SECRET, at)


def see_device(registry: DeviceRegistry, slot: int, at: datetime) -> None:
    """The device in `slot` authenticated."""
    registry.mark_seen(device_of(slot), at)


def revoke_device(registry: DeviceRegistry, slot: int, at: datetime) -> None:
    """Revoke the device in `slot`."""
    registry.revoke(device_of(slot), at)


# -- scripts: writes, catch-ups and restarts ------------------------------------------------


@dataclass(frozen=True)
class Opening:
    """How a session slot is opened, on its first command."""

    key: str
    kind: SessionKind
    audience: Audience


@dataclass(frozen=True)
class SessionStep:
    """One command on the session in `slot`."""

    slot: int
    command: Callable[[Session], None]


@dataclass(frozen=True)
class DeviceStep:
    """One command on the device registry."""

    command: Callable[[DeviceRegistry], None]


@dataclass(frozen=True)
class CatchUp:
    """Catch the projections up in batches of `batch_size` events."""

    batch_size: int


@dataclass(frozen=True)
class Restart:
    """Replace the runner (and the projection objects) by fresh ones on the same file."""


Step = SessionStep | DeviceStep | CatchUp | Restart


@dataclass(frozen=True)
class Script:
    """How each session slot opens, and the steps in order."""

    openings: tuple[Opening, ...]
    steps: tuple[Step, ...]


KINDS = (
    *["message"] * 4,
    *["turn"] * 3,
    "attempt",
    *["advance"] * 2,
    "start run",
    "claim",
    "end run",
    "recover",
    "bind",
    "schema",
    "device",
    *["catch up"] * 2,
    "restart",
)
WRITES = tuple(kind for kind in KINDS if kind not in {"catch up", "restart"})
paths = st.sampled_from(PATHS)
times = st.integers(0, 3 * 24 * 60).map(lambda minutes: BASE_TIME + timedelta(minutes=minutes))
batch_sizes = st.integers(1, 40)
outcomes = st.sampled_from([OutcomeCategory.SUCCESS] * 4 + list(OutcomeCategory))
"""Mostly successes, which carry file activity."""


def receipts() -> st.SearchStrategy[ToolReceipt]:
    """Valid receipts; a success mostly touches files of the pool, often declaring a project."""
    activity = st.lists(strategies.file_activities(paths), min_size=1, max_size=3).map(tuple)
    return outcomes.flatmap(
        lambda outcome: (
            strategies.tool_receipts(paths, max_files=0, outcomes=st.just(outcome))
            if outcome is not OutcomeCategory.SUCCESS
            else st.builds(
                ToolReceipt,
                outcome=st.just(outcome),
                file_activity=activity | st.just(()),
                project_declaration=st.none() | st.sampled_from(PATHS[:2]),
                spill_id=st.none() | strategies.spill_ids(),
            )
        )
    )


@st.composite
def moves(draw: st.DrawFn) -> Move:
    """How an attempt moves on; mostly its next lifecycle step."""
    return Move(
        variant=draw(
            st.sampled_from(["step"] * 8 + ["correct", "deny", "unknown", "early receipt"])
        ),
        decision=draw(
            st.sampled_from(
                [PolicyDecision.ALLOW] * 2 + [PolicyDecision.APPROVAL_REQUIRED, *PolicyDecision]
            )
        ),
        denial=draw(st.sampled_from(DenialCategory)),
        mode=draw(st.sampled_from(ApprovalMode)),
        targets=tuple(draw(st.lists(strategies.file_activities(paths), max_size=2))),
        grant_key=draw(st.sampled_from(["", "bash:make test", "write:/work/project"])),
        verdict=draw(st.sampled_from(ApprovalVerdict)),
        scope=draw(st.sampled_from(ApprovalScope)),
        receipt=draw(receipts()),
        remediation=draw(st.sampled_from(RemediationCode)),
        detail=draw(st.sampled_from(["", "why not", "détail ✓"])),
    )


@st.composite
def steps(draw: st.DrawFn, kinds: Sequence[str] = KINDS) -> Step:  # noqa: C901, PLR0911, PLR0912 - one branch per kind
    """One step of a script."""
    kind = draw(st.sampled_from(kinds))
    slot = draw(st.sampled_from([0, 0, 0, *range(1, SESSION_SLOTS)]))
    on_session = partial(SessionStep, slot)
    if kind == "catch up":
        return CatchUp(draw(batch_sizes))
    if kind == "restart":
        return Restart()
    if kind == "message":
        return on_session(partial(append_message, message=draw(strategies.chat_messages())))
    if kind == "attempt":
        tool = draw(st.sampled_from(TOOLS))
        return on_session(
            partial(start_attempt, slot=draw(st.integers(0, ATTEMPT_SLOTS - 1)), tool=tool)
        )
    if kind == "turn":
        tool = draw(st.sampled_from(TOOLS))
        attempt = draw(st.integers(0, ATTEMPT_SLOTS - 1))
        turn_moves = tuple(draw(st.lists(moves(), min_size=2, max_size=5)))
        return on_session(partial(tool_turn, slot=attempt, tool=tool, moves=turn_moves))
    if kind == "advance":
        return on_session(partial(advance, pick=draw(st.integers(0, 3)), move=draw(moves())))
    if kind == "start run":
        client = draw(st.none() | st.sampled_from(["retry-a", "retry-b"]))
        run_slot = draw(st.integers(0, RUN_SLOTS - 1))
        claim = draw(st.sampled_from([True, True, False]))
        return on_session(partial(start_run, slot=run_slot, client_run_id=client, claim=claim))
    if kind == "claim":
        return on_session(partial(claim_writer, slot=draw(st.integers(0, RUN_SLOTS - 1))))
    if kind == "end run":
        reason = draw(st.sampled_from(RunEndReason))
        return on_session(partial(end_run, pick=draw(st.integers(0, 3)), reason=reason))
    if kind == "recover":
        return on_session(recover)
    if kind == "bind":
        return on_session(partial(bind_storage, root=draw(paths)))
    if kind == "schema":
        return on_session(partial(load_tool_schema, tool=draw(st.sampled_from(TOOLS))))
    device = draw(st.integers(0, DEVICE_SLOTS - 1))
    action = draw(st.sampled_from(["pair", "pair", "see", "revoke"]))
    if action == "pair":
        name = draw(st.sampled_from(["laptop", "phone"]))
        return DeviceStep(partial(pair_device, slot=device, name=name, at=draw(times)))
    if action == "see":
        return DeviceStep(partial(see_device, slot=device, at=draw(times)))
    return DeviceStep(partial(revoke_device, slot=device, at=draw(times)))


def openings() -> st.SearchStrategy[tuple[Opening, ...]]:
    """How each session slot opens; slot 0 is always a main session."""
    one = st.builds(
        Opening,
        key=st.sampled_from(["cli:main", "telegram:42", "mcp:abc"]),
        kind=st.sampled_from(SessionKind),
        audience=st.sampled_from(Audience),
    )
    return st.lists(one, min_size=SESSION_SLOTS, max_size=SESSION_SLOTS).map(
        lambda drawn: (Opening(drawn[0].key, SessionKind.MAIN, drawn[0].audience), *drawn[1:])
    )


def scripts(
    kinds: Sequence[str] = KINDS, min_size: int = 8, max_size: int = 50
) -> st.SearchStrategy[Script]:
    """Opening specs and steps; a session opens with a writer run on its first command."""
    return st.builds(
        Script,
        openings=openings(),
        steps=st.lists(steps(kinds), min_size=min_size, max_size=max_size).map(tuple),
    )


# -- the journal and the tables -------------------------------------------------------------


@contextmanager
def workspace() -> Iterator[Path]:
    """A fresh temporary directory per example, removed afterwards."""
    root = Path(tempfile.mkdtemp(prefix="ledgerclaw-projections-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Writer:
    """Writes a script's session and device commands to a journal; skips refused ones."""

    def __init__(self, database: Path, openings: Sequence[Opening]) -> None:
        self.journal = SqliteJournal(database, JournalSettings(durability=Durability.NORMAL))
        self.openings = openings
        self.opened: set[int] = set()
        self.refused = 0

    def write(self, step: SessionStep | DeviceStep) -> None:
        """Run one command; a refusal (or a command without a target) writes nothing."""
        try:
            if isinstance(step, DeviceStep):
                self.journal.update_devices(step.command)
                return
            session_id = self._open(step.slot)
            self.journal.update_session(session_id, step.command)
        except (DomainError, NothingToDoError):
            self.refused += 1

    def write_all(self, steps: Sequence[Step]) -> None:
        """Run every write of `steps`, ignoring catch-ups and restarts."""
        for step in steps:
            if isinstance(step, SessionStep | DeviceStep):
                self.write(step)

    def _open(self, slot: int) -> SessionId:
        session_id = session_id_of(slot)
        if slot not in self.opened:
            opening = self.openings[slot]
            parent = session_id_of((slot + 1) % SESSION_SLOTS)
            subagent = opening.kind is SessionKind.SUBAGENT
            self.journal.open_session(
                SessionOpening(
                    session_id,
                    opening.key,
                    opening.kind,
                    opening.audience,
                    parent if subagent else None,
                )
            )
            self.opened.add(slot)
            first_run = partial(start_run, slot=0, client_run_id=None, claim=True)
            self.journal.update_session(session_id, first_run)
        return session_id

    def close(self) -> None:
        """Close the journal's connections."""
        self.journal.close()


@contextmanager
def writer(database: Path, openings: Sequence[Opening]) -> Iterator[Writer]:
    """A writer on `database`, closed afterwards."""
    opened = Writer(database, openings)
    try:
        yield opened
    finally:
        opened.close()


def fresh(projections: Sequence[Projection]) -> list[Projection]:
    """New projection objects, as a restarted process would build them."""
    return [copy.deepcopy(projection) for projection in projections]


def head_of(database: Path) -> int:
    """The last position of the journal's log."""
    with closing(sqlite3.connect(database)) as db:
        return int(db.execute("SELECT COALESCE(MAX(rowid), 0) FROM stored_events").fetchone()[0])


def positions(database: Path) -> dict[str, int]:
    """Every projection's stored position."""
    with closing(sqlite3.connect(database)) as db:
        return dict(db.execute(f"SELECT name, position FROM {POSITIONS}").fetchall())  # noqa: S608 - fixed table name


def rows(database: Path, projections: Sequence[Projection]) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the projections' tables, by table, sorted."""
    with closing(sqlite3.connect(database)) as db:
        tables: dict[str, list[tuple[Any, ...]]] = {}
        for projection in projections:
            for table in projection.tables:
                columns = ", ".join(f'"{column}"' for column in table.columns)
                found = db.execute(f'SELECT {columns} FROM "{table.name}"').fetchall()  # noqa: S608 - names from the table's definition
                tables[table.name] = sorted(found, key=repr)
        return tables


def rebuilt(root: Path, source: Path, projections: Sequence[Projection], name: str) -> Path:
    """A scratch file holding one rebuild of `projections` over the journal `source`."""
    scratch = root / f"{name}.db"
    ProjectionRunner(scratch, fresh(projections), log=SqliteEventLog(source)).rebuild()
    return scratch


def truncated(root: Path, source: Path, upto: int) -> Path:
    """A copy of the journal holding only its first `upto` events."""
    target = root / f"journal-upto-{upto}.db"
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM stored_events WHERE rowid > ?", (upto,))
        dst.commit()
    return target


def test_every_projection_is_registered_once() -> None:
    """Names and table names are unique, so projections never share a position or a table."""
    names = [projection.name for projection in ALL_PROJECTIONS]
    tables = [table.name for projection in ALL_PROJECTIONS for table in projection.tables]
    assert len(set(names)) == len(names)
    assert len(set(tables)) == len(tables)
    assert POSITIONS not in tables


# -- 1. incremental catch-up equals one rebuild ---------------------------------------------


@settings(max_examples=EXAMPLES)
@given(script=scripts(), last_batch=batch_sizes)
def test_catching_up_bit_by_bit_equals_one_rebuild(script: Script, last_batch: int) -> None:
    """Appends, catch-ups in random batches and restarts end in the rows of one rebuild.

    Every event is applied exactly once per projection, whatever the batches were.
    """
    with workspace() as root:
        database = root / "journal.db"
        applied = 0
        reports: list[tuple[int, int]] = []
        with writer(database, script.openings) as journal:
            runner = ProjectionRunner(database, fresh(ALL_PROJECTIONS))
            for step in script.steps:
                if isinstance(step, CatchUp):
                    applied += runner.catch_up(
                        lambda done, total: reports.append((done, total)), step.batch_size
                    )
                elif isinstance(step, Restart):
                    runner = ProjectionRunner(database, fresh(ALL_PROJECTIONS))
                else:
                    journal.write(step)
            applied += runner.catch_up(batch_size=last_batch)
        head = head_of(database)
        scratch = rebuilt(root, database, ALL_PROJECTIONS, "scratch")

        assert all(0 < done <= total for done, total in reports)
        assert len(ALL_PROJECTIONS) * head == applied
        assert {projection.name: head for projection in ALL_PROJECTIONS} == positions(database)
        assert positions(scratch) == positions(database)
        assert rows(scratch, ALL_PROJECTIONS) == rows(database, ALL_PROJECTIONS)
        lag = {
            status.name: status.lag
            for status in ProjectionRunner(database, ALL_PROJECTIONS).status()
        }
        assert dict.fromkeys(lag, 0) == lag


# -- 2. independent positions ---------------------------------------------------------------

write_scripts = scripts(WRITES, min_size=1, max_size=15)


@settings(max_examples=EXAMPLES // 2)
@given(
    first=write_scripts,
    more=st.lists(steps(WRITES), min_size=1, max_size=15),
    pair=st.permutations(range(len(ALL_PROJECTIONS))).map(lambda order: order[:2]),
    batch_size=batch_sizes,
)
def test_projections_keep_independent_positions(
    first: Script, more: list[Step], pair: list[int], batch_size: int
) -> None:
    """Catching one projection up moves only its position; the other lags until its turn."""
    one, other = (ALL_PROJECTIONS[index] for index in pair)
    with workspace() as root:
        database = root / "journal.db"
        with writer(database, first.openings) as journal:
            journal.write_all(first.steps)
            early = head_of(database)
            ProjectionRunner(database, fresh([one])).catch_up(batch_size=batch_size)
            both = ProjectionRunner(database, [one, other])
            assert {one.name: early, other.name: 0} == {s.name: s.position for s in both.status()}
            one_rows = rows(database, [one])

            journal.write_all(more)
            late = head_of(database)
            ProjectionRunner(database, fresh([other])).catch_up(batch_size=batch_size)
            status = {s.name: s for s in both.status()}
            assert (early, late) == (status[one.name].position, status[other.name].position)
            assert (late - early, 0) == (status[one.name].lag, status[other.name].lag)
            assert one_rows == rows(database, [one])

            assert late - early == both.catch_up(batch_size=batch_size)
            assert {one.name: late, other.name: late} == positions(database)
        scratch = rebuilt(root, database, [one, other], "scratch")
        assert rows(scratch, [one, other]) == rows(database, [one, other])


# -- 3. a failing batch applies nothing -----------------------------------------------------


class CrashError(Exception):
    """Raised by a test-only projection in the middle of a batch."""


FAILURES = ("raise", "statement")


def failing(projection: Projection, at: int, where: str) -> Projection:
    """A copy of `projection` that fails in the batch holding log position `at`.

    `raise` raises once the batch's statements are built; `statement` adds a statement that
    SQLite rejects, after the statements of the batch's events.
    """
    base: type[Any] = type(projection)

    class Failing(base):  # type: ignore[misc]  # a test-only subclass
        def apply_batch(self, events: Events, batch: Batch) -> None:
            super().apply_batch(events, batch)
            if not any(stored.log == at for stored in events):
                return
            if where == "raise":
                raise CrashError(at)
            batch.add("INSERT INTO no_such_table_in_the_journal VALUES (?)", at)

    made = copy.deepcopy(projection)
    made.__class__ = Failing
    return made


@settings(max_examples=EXAMPLES)
@given(
    first=write_scripts,
    more=st.lists(steps(WRITES), min_size=1, max_size=20),
    victim=st.sampled_from(ALL_PROJECTIONS),
    where=st.sampled_from(FAILURES),
    batch_size=batch_sizes,
    data=st.data(),
)
def test_a_failing_batch_applies_nothing(  # noqa: PLR0917 - one argument per drawn value
    first: Script,
    more: list[Step],
    victim: Projection,
    where: str,
    batch_size: int,
    data: st.DataObject,
) -> None:
    """The batch that fails leaves the position and rows of the batch before it, untouched."""
    with workspace() as root:
        database = root / "journal.db"
        with writer(database, first.openings) as journal:
            journal.write_all(first.steps)
            ProjectionRunner(database, fresh([victim])).catch_up(batch_size=batch_size)
            start = positions(database)[victim.name]
            journal.write_all(more)
        head = head_of(database)
        assume(head > start)
        at = data.draw(st.integers(start + 1, head), label="failing position")
        # The end of the last whole batch before the one holding `at` (the log has no gaps).
        expected = start + (at - start - 1) // batch_size * batch_size

        seen: list[tuple[int, dict[str, list[tuple[Any, ...]]]]] = []

        def record(_done: int, _total: int) -> None:
            seen.append((positions(database)[victim.name], rows(database, [victim])))

        record(0, 0)
        crashing = ProjectionRunner(database, [failing(victim, at, where)])
        with pytest.raises((CrashError, sqlite3.OperationalError)):
            crashing.catch_up(record, batch_size)

        assert expected == positions(database)[victim.name]
        assert seen[-1] == (expected, rows(database, [victim]))
        before = rebuilt(root, truncated(root, database, expected), [victim], "before")
        assert rows(before, [victim]) == rows(database, [victim])

        assert head - expected == ProjectionRunner(database, fresh([victim])).catch_up()
        assert head == positions(database)[victim.name]
        scratch = rebuilt(root, database, [victim], "scratch")
        assert rows(scratch, [victim]) == rows(database, [victim])


# -- 4. overlapping catch-ups ---------------------------------------------------------------


@pytest.mark.parametrize("other", ["catch_up", "rebuild"])
def test_overlapping_catch_ups_apply_each_event_once(other: str) -> None:
    """A catch-up or rebuild that commits while another builds its batch: nothing twice.

    The daemon and a CLI query may catch the same projection up at once; the batch built on
    a position that has moved since must not be written.
    """
    catalog = next(p for p in ALL_PROJECTIONS if p.name == "sessions")
    openings = (Opening("cli:main", SessionKind.MAIN, Audience.PERSONAL),) * SESSION_SLOTS

    def say(content: str) -> SessionStep:
        message = ChatMessage(role=MessageRole.USER, content=content)
        return SessionStep(0, partial(append_message, message=message))

    with workspace() as root:
        database = root / "journal.db"
        with writer(database, openings) as journal:
            journal.write(say("first"))
            ProjectionRunner(database, fresh([catalog])).catch_up()
            journal.write_all([say("second"), say("third")])
        overlapping = ProjectionRunner(database, fresh([catalog]))
        interrupt = getattr(overlapping, other)

        class Overlapped(type(catalog)):  # type: ignore[misc]  # a test-only subclass
            def apply_batch(self, events: Events, batch: Batch) -> None:
                # Another process catches up (or rebuilds) while this batch is being built.
                interrupt()
                super().apply_batch(events, batch)

        ProjectionRunner(database, [Overlapped()]).catch_up(batch_size=1)
        assert head_of(database) == positions(database)[catalog.name]
        scratch = rebuilt(root, database, [catalog], "scratch")
        assert rows(scratch, [catalog]) == rows(database, [catalog])
