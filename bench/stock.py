"""The default-mapper baseline of the journal benchmark.

A plain eventsourcing `Application` with the library's own `Aggregate` and `@event` methods,
the stock JSON transcoder and `eventsourcing.sqlite`, holding the same state as ledgerclaw's
Session (message count, runs, writer, attempts, working context) and storing the same
payloads (the fields a command does not name travel in its `extra` argument). It never
snapshots.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate as LibraryAggregate
from eventsourcing.domain import event
from session_data import BUILD_BATCH, chunks

from adapters.journal.journal import SqliteJournal
from domain.base import DomainEvent
from domain.ids import SessionId

EXTRA = "extra"
"""The argument that carries the fields a baseline command does not name."""


class StockSession(LibraryAggregate):
    """The Session's state (message count, runs, attempts) on the library's Aggregate."""

    @event("Opened")
    def __init__(
        self, session_key: str, kind: str, audience: str, parent_session_id: str | None
    ) -> None:
        self.session_key = session_key
        self.kind = kind
        self.audience = audience
        self.parent_session_id = parent_session_id
        self.runs: dict[str, dict[str, Any]] = {}
        self.writer: str | None = None
        self.message_count = 0
        self.attempts: dict[str, dict[str, Any]] = {}
        self.working_context: dict[str, Any] = {}

    @event("RunStarted")
    def start_run(self, run_id: str, client_run_id: str | None) -> None:
        """A run began."""
        self.runs[run_id] = {"run_id": run_id, "client_run_id": client_run_id}

    @event("WriterClaimed")
    def claim_writer(self, run_id: str, superseded_run_id: str | None) -> None:
        """A run became the writer."""
        del superseded_run_id
        self.writer = run_id

    @event("MessageAppended")
    def append_message(self, run_id: str, message: dict[str, Any]) -> None:
        """A message joined the transcript; the event holds it, the aggregate counts it."""
        del run_id, message
        self.message_count += 1

    @event("AttemptStarted")
    def start_attempt(
        self, run_id: str, attempt_id: str, call_id: str, tool_name: str, extra: dict[str, Any]
    ) -> None:
        """A tool call's authorization began."""
        del extra
        self.attempts[attempt_id] = {
            "run_id": run_id,
            "call_id": call_id,
            "tool_name": tool_name,
            "status": "started",
        }

    @event("PolicyEvaluated")
    def evaluate_policy(
        self, run_id: str, attempt_id: str, decision: str, extra: dict[str, Any]
    ) -> None:
        """Policy decided an attempt."""
        del run_id, extra
        self.attempts[attempt_id] = {**self.attempts[attempt_id], "decision": decision}

    @event("ReceiptRecorded")
    def record_receipt(
        self, run_id: str, attempt_id: str, outcome: str, extra: dict[str, Any]
    ) -> None:
        """An allowed attempt completed."""
        del run_id, extra
        self.attempts[attempt_id] = {
            **self.attempts[attempt_id],
            "status": "ended",
            "outcome": outcome,
        }

    @event("WorkingContextChanged")
    def change_context(
        self,
        run_id: str,
        project_directory: str | None,
        recent_files: list[str],
        extra: dict[str, Any],
    ) -> None:
        """The working context followed a receipt."""
        del run_id, extra
        self.working_context = {
            "project_directory": project_directory,
            "recent_files": recent_files,
        }


STOCK_COMMANDS: dict[str, tuple[Callable[..., None], tuple[str, ...]]] = {
    "ledgerclaw.session.run_started": (StockSession.start_run, ("run_id", "client_run_id")),
    "ledgerclaw.session.writer_claimed": (
        StockSession.claim_writer,
        ("run_id", "superseded_run_id"),
    ),
    "ledgerclaw.session.message_appended": (StockSession.append_message, ("run_id", "message")),
    "ledgerclaw.session.attempt_started": (
        StockSession.start_attempt,
        ("run_id", "attempt_id", "call_id", "tool_name", EXTRA),
    ),
    "ledgerclaw.session.policy_evaluated": (
        StockSession.evaluate_policy,
        ("run_id", "attempt_id", "decision", EXTRA),
    ),
    "ledgerclaw.session.receipt_recorded": (
        StockSession.record_receipt,
        ("run_id", "attempt_id", "outcome", EXTRA),
    ),
    "ledgerclaw.session.working_context_changed": (
        StockSession.change_context,
        ("run_id", "project_directory", "recent_files", EXTRA),
    ),
}
"""Each mirrored topic: the baseline's command and the argument names it takes."""


class StockApplication(Application[UUID]):
    """A plain eventsourcing application: default mapper, JSON transcoder, no snapshots."""

    name = "stock"


def stock_app(path: Path) -> StockApplication:
    """The default-mapper application on a fresh SQLite file."""
    return StockApplication(
        env={"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(path)}
    )


def new_stock_session(app: StockApplication, run_id: str) -> StockSession:
    """A stored stock session whose writer is `run_id`, kept in memory."""
    session = StockSession("bench", "main", "personal", None)
    session.start_run(run_id, None)
    session.claim_writer(run_id, None)
    app.save(session)
    return session


def mirror_to_stock(
    journal: SqliteJournal, session_id: SessionId, app: StockApplication
) -> StockSession:
    """Store the same facts as the ledgerclaw session through the default mapper."""
    stored = [
        stored_event
        for stored_event in journal.app.events.get(session_id.as_uuid())
        if isinstance(stored_event, DomainEvent)
    ]
    opened = stored[0].model_dump(mode="json")
    session = StockSession(
        opened["session_key"], opened["kind"], opened["audience"], opened["parent_session_id"]
    )
    skip = {"originator_id", "originator_version", "timestamp"}
    for batch in chunks(stored[1:], BUILD_BATCH):
        for domain_event in batch:
            command, names = STOCK_COMMANDS[type(domain_event).TOPIC]
            fields = domain_event.model_dump(mode="json", exclude=skip)
            command(session, **_arguments(names, fields))
        app.save(session)
    return session


def _arguments(names: tuple[str, ...], fields: dict[str, Any]) -> dict[str, Any]:
    """The event's fields as a command takes them: its named ones, and the rest as `extra`.

    The stock event then stores every field the ledgerclaw event stores (the same payload),
    and a field added to a ledgerclaw event reaches the baseline without a change here. A
    command without `extra` must name every field, or the mirror would store less.
    """
    named = {key: value for key, value in fields.items() if key in names}
    rest = {key: value for key, value in fields.items() if key not in names}
    if EXTRA in names:
        return named | {EXTRA: rest}
    if rest:
        msg = f"the baseline's command takes no {sorted(rest)}; give it an `extra` argument"
        raise TypeError(msg)
    return named
