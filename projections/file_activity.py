"""Which files successful tool calls read, wrote, attached or declared.

A shell command's rows are of their own kind, `shell_candidate`: the paths the shell
policy checked as writes, what it may have changed rather than what it did; projection layer.
"""

from __future__ import annotations

from functools import singledispatchmethod

from domain.base import DomainEvent
from domain.session.events import (
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    ToolReceiptRecorded,
)
from domain.values.receipts import OutcomeCategory
from projections.catalog import session_id_of, session_of
from projections.contract import Batch, Events, Position, Table
from projections.per_event import EventByEvent, handled_topics

FILE_ACTIVITY = Table(
    name="file_activity",
    columns={
        "attempt_id": str,
        "path": str,
        "operation": str,
        "session_id": str,
        "run_id": str,
        "tool": str,
        "at": str,
    },
    pk=("attempt_id", "path", "operation"),
    indexes=(("path",), ("session_id",), ("at",)),
    doc=(
        "One row per canonical path a successful tool call read, wrote, attached or declared,"
        " and per path a shell command that ran was checked for (shell_candidate)."
    ),
)
SHELL_CANDIDATE = "shell_candidate"
"""The operation of a path the shell policy checked as a write: a candidate, not a proof."""
FILE_ACTIVITY_ATTEMPTS = Table(
    name="file_activity_attempts",
    columns={"attempt_id": str, "tool": str},
    pk=("attempt_id",),
    doc="Helper of file_activity: the tool of each attempt that has not ended yet.",
)

_ROW = (
    "INSERT OR IGNORE INTO file_activity (attempt_id, path, operation, session_id, run_id, tool,"
    " at) VALUES (?, ?, ?, ?, ?,"
    " COALESCE(?, (SELECT tool FROM file_activity_attempts WHERE attempt_id = ?)), ?)"
)
"""One path of a receipt; the tool given, or else the helper row's (an earlier batch's call)."""
_ENDINGS = frozenset(
    (AttemptDenied.TOPIC, CorrectionIssued.TOPIC, AttemptOutcomeMarkedUnknown.TOPIC)
)


class FileActivityLog(EventByEvent):
    """Which files a session's tools touched, when, with which operation and tool."""

    name = "file_activity"
    version = 2
    tables: tuple[Table, ...] = (FILE_ACTIVITY, FILE_ACTIVITY_ATTEMPTS)

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """The batch's paths in one statement; helper rows only for calls still open at its end.

        A call started in the batch has its tool in memory; one started earlier has it in
        the helper table, which the batch deletes once the call ended.
        """
        topics = handled_topics(type(self))
        tools: dict[str, str] = {}
        paths: list[tuple[object, ...]] = []
        forget: list[tuple[str]] = []
        for stored in events.of(topics):
            topic = stored.topic
            f = stored.fields()
            attempt_id = f["attempt_id"]
            if topic == AuthorizationAttemptStarted.TOPIC:
                tools[attempt_id] = f["tool_name"]
                continue
            tool = tools.pop(attempt_id, None)
            if tool is None:
                forget.append((attempt_id,))
            if topic in _ENDINGS:
                continue
            rows: list[tuple[str, str]] = []
            if f["outcome"] == OutcomeCategory.SUCCESS:
                rows.extend((a["path"], a["operation"]) for a in f.get("file_activity") or ())
            shell = f.get("shell")
            if shell is not None:
                rows.extend((path, SHELL_CANDIDATE) for path in shell.get("candidates") or ())
            session_id = session_id_of(stored.stream)
            at = stored.at_text()
            paths.extend(
                (attempt_id, path, operation, session_id, f["run_id"], tool, attempt_id, at)
                for path, operation in rows
            )
        batch.add_rows(_ROW, paths)
        batch.add_rows("DELETE FROM file_activity_attempts WHERE attempt_id = ?", forget)
        batch.add_rows(
            "INSERT INTO file_activity_attempts (attempt_id, tool) VALUES (?, ?)",
            list(tools.items()),
        )

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events touch no file."""

    @apply.register
    def _(self, event: AuthorizationAttemptStarted, _position: Position, batch: Batch) -> None:
        batch.add(
            "INSERT INTO file_activity_attempts (attempt_id, tool) VALUES (?, ?)",
            event.attempt_id,
            event.tool_name,
        )

    @apply.register
    def _(self, event: ToolReceiptRecorded, position: Position, batch: Batch) -> None:
        rows: list[tuple[str, str]] = []
        if event.outcome is OutcomeCategory.SUCCESS:
            rows.extend((a.path, str(a.operation)) for a in event.file_activity)
        if event.shell is not None:
            rows.extend((path, SHELL_CANDIDATE) for path in event.shell.candidates)
        for path, operation in rows:
            # One receipt may name the same path and operation twice; one row suffices.
            batch.add(
                "INSERT OR IGNORE INTO file_activity (attempt_id, path, operation,"
                " session_id, run_id, tool, at) VALUES (?, ?, ?, ?, ?,"
                " (SELECT tool FROM file_activity_attempts WHERE attempt_id = ?), ?)",
                event.attempt_id,
                path,
                operation,
                session_of(position),
                event.run_id,
                event.attempt_id,
                position.at.isoformat(),
            )
        self._forget(event.attempt_id, batch)

    @apply.register
    def _(self, event: AttemptDenied, _position: Position, batch: Batch) -> None:
        self._forget(event.attempt_id, batch)

    @apply.register
    def _(self, event: CorrectionIssued, _position: Position, batch: Batch) -> None:
        self._forget(event.attempt_id, batch)

    @apply.register
    def _(self, event: AttemptOutcomeMarkedUnknown, _position: Position, batch: Batch) -> None:
        self._forget(event.attempt_id, batch)

    def finish(self, batch: Batch) -> None:
        """Nothing is recomputed at the end of a batch."""

    @staticmethod
    def _forget(attempt_id: str, batch: Batch) -> None:
        """The attempt ended: its tool is no longer needed."""
        batch.add("DELETE FROM file_activity_attempts WHERE attempt_id = ?", attempt_id)
