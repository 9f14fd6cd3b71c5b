"""One row per tool call's authorization: decision, approval, outcome, timing; projection layer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from functools import cache, singledispatchmethod
from typing import Any

import orjson
from pydantic import JsonValue

from domain.base import DomainEvent
from domain.session.events import (
    ApprovalDecided,
    ApprovalRequested,
    AttemptDenied,
    AttemptOutcomeMarkedUnknown,
    AuthorizationAttemptStarted,
    CorrectionIssued,
    PolicyEvaluated,
    ToolReceiptRecorded,
)
from domain.shell.confinement import Confinement
from domain.values.authorization import ApprovalVerdict, PolicyDecision
from domain.values.receipts import FileActivity, InputProblem
from projections.catalog import session_id_of, session_of
from projections.contract import Batch, Events, Position, Stored, Table
from projections.per_event import EventByEvent, handled_topics

AUTHORIZATION_AUDIT = Table(
    name="authorization_audit",
    columns={
        "attempt_id": str,
        "session_id": str,
        "run_id": str,
        "call_id": str,
        "tool": str,
        "operations": str,
        "paths": str,
        "decision": str,
        "rule": str,
        "approval_mode": str,
        "reviewed_safe": int,
        "failure_category": str,
        "detail": str,
        "approval_asked": int,
        "grant_key": str,
        "approval_verdict": str,
        "approval_scope": str,
        "decided_by": str,
        "decided_at": str,
        "outcome": str,
        "remediation": str,
        "spill_id": str,
        "started_at": str,
        "ended_at": str,
        "duration_ms": float,
        "arguments": str,
        "bounded_arguments": str,
        "arguments_spill_id": str,
        "command": str,
        "shell_cwd": str,
        "shell_exit_code": int,
        "shell_timed_out": int,
        "shell_duration_ms": int,
        "shell_output_bytes": int,
        "sandbox": str,
        "sandbox_abi": int,
        "sandbox_network": int,
        "sandbox_rules": str,
        "sandbox_missing": str,
    },
    pk=("attempt_id",),
    indexes=(("session_id",), ("started_at",), ("tool",), ("decision",)),
    doc=(
        "One row per tool call: its arguments and paths, policy decision and rule, approval,"
        " outcome, timing, and for a shell command how it ran and the sandbox it ran under."
    ),
)


def sandbox_label(confinement: Confinement) -> str:
    """`confined`, or `unconfined`, with the mode: `confined (required)`."""
    state = "confined" if confinement.confined else "unconfined"
    return f"{state} ({confinement.mode})"


ENDED = "ended_at = ?, duration_ms = ROUND((julianday(?) - julianday(started_at)) * 86400000.0)"
"""Set when an attempt ends; SQLite's date functions keep milliseconds, so whole ms are exact."""


class AuditDecision(StrEnum):
    """Where an attempt's authorization stands in the audit."""

    PENDING = "pending"
    ALLOWED = "allowed"
    DENIED = "denied"
    CORRECTED = "corrected"
    NOT_RUN = "not_run"
    """A receipt ended the attempt before any allow (invalid input, cancelled)."""


_POLICY = {
    PolicyDecision.ALLOW: AuditDecision.ALLOWED,
    PolicyDecision.DENY: AuditDecision.DENIED,
    PolicyDecision.APPROVAL_REQUIRED: AuditDecision.PENDING,
}
_POLICY_BY_VALUE = {decision.value: audit.value for decision, audit in _POLICY.items()}
REVIEWED_SAFE = "reviewed-safe"
"""The prefix of the rule that allows a reviewed-safe shell command without asking."""
UNKNOWN_OUTCOME = "unknown"
DETAIL_LIMIT = 2000


def json_array(values: Iterable[str]) -> str:
    """The distinct `values`, in first-seen order, as a compact JSON array."""
    return orjson.dumps(list(dict.fromkeys(values))).decode()


def compact_json(value: object) -> str:
    """`value` as compact JSON text, as the JSON columns hold it.

    orjson writes it (text escaped as the standard library does, floats in their shortest
    form: `1e-7`); a value it cannot write, such as an integer past 64 bits, is written by
    the standard library.
    """
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def problems_text(problems: Iterable[InputProblem]) -> str:
    """Input problems as one detail: `field: message; field: message`."""
    return "; ".join(f"{p.field}: {p.message}" for p in problems)[:DETAIL_LIMIT]


def _command_argument(arguments: dict[str, JsonValue] | None) -> str | None:
    """A call's `command` argument as text: the command itself, or a bounded one's head."""
    command = (arguments or {}).get("command")
    if isinstance(command, dict) and isinstance(command.get("head"), str):
        return f"{command['head']}…"
    return command if isinstance(command, str) else None


def operations_and_paths(activity: Iterable[FileActivity]) -> tuple[str, str]:
    """The distinct operations and the distinct paths of `activity`, as JSON arrays."""
    listed = tuple(activity)
    return json_array(str(a.operation) for a in listed), json_array(a.path for a in listed)


Row = dict[str, Any]
"""An audit row being folded in memory: its filled columns, by name, to their values."""
Fields = Mapping[str, Any]


@cache
def _insert(columns: tuple[str, ...]) -> str:
    """The statement that inserts folded rows with values in `columns` (the rest NULL).

    Each row's duration is computed by SQLite from its end and start, as `ENDED` does.
    """
    return (
        f"INSERT INTO authorization_audit ({', '.join(columns)}, duration_ms)"  # noqa: S608 - column names from the table
        f" VALUES ({', '.join('?' * len(columns))},"
        " ROUND((julianday(?) - julianday(?)) * 86400000.0))"
    )


def _put(row: Row, column: str, value: object) -> None:
    """Set `column`; a None leaves it out, so the table's NULL stands."""
    if value is None:
        row.pop(column, None)
    else:
        row[column] = value


def _started(stored: Stored, f: Fields) -> Row:
    """The row an attempt's start inserts (every column left out is empty)."""
    row: Row = {
        "attempt_id": f["attempt_id"],
        "session_id": session_id_of(stored.stream),
        "run_id": f["run_id"],
        "call_id": f["call_id"],
        "tool": f["tool_name"],
        "operations": "[]",
        "paths": "[]",
        "decision": AuditDecision.PENDING.value,
        "reviewed_safe": 0,
        "approval_asked": 0,
        "started_at": stored.at_text(),
    }
    recorded = f.get("arguments")
    if recorded is not None:
        row["arguments"] = compact_json(recorded)
        _put(row, "command", _command_argument(recorded))
    bounded = f.get("bounded_arguments")
    if bounded:
        row["bounded_arguments"] = json_array(bounded)
    _put(row, "arguments_spill_id", f.get("arguments_spill_id"))
    return row


def _targets(row: Row, activity: Sequence[Fields], *, only_if_empty: bool) -> None:
    if not activity:
        return
    if not only_if_empty or row["operations"] == "[]":
        row["operations"] = json_array([a["operation"] for a in activity])
    if not only_if_empty or row["paths"] == "[]":
        row["paths"] = json_array([a["path"] for a in activity])


def _policy(row: Row, f: Fields, _stored: Stored) -> None:
    decision = f["decision"]
    rule = f["rule"]
    row["decision"] = _POLICY_BY_VALUE[decision]
    _put(row, "rule", rule)
    _put(row, "approval_mode", f.get("approval_mode"))
    row["reviewed_safe"] = int(decision == PolicyDecision.ALLOW and rule.startswith(REVIEWED_SAFE))
    _put(row, "detail", f.get("detail") or None)
    _targets(row, f.get("targets") or (), only_if_empty=False)


def _asked(row: Row, f: Fields, _stored: Stored) -> None:
    row["approval_asked"] = 1
    _put(row, "approval_mode", f["mode"])
    _put(row, "grant_key", f.get("grant_key") or None)


def _decided(row: Row, f: Fields, stored: Stored) -> None:
    approved = f["verdict"] == ApprovalVerdict.APPROVED
    row["decision"] = (AuditDecision.ALLOWED if approved else AuditDecision.DENIED).value
    _put(row, "approval_verdict", f["verdict"])
    _put(row, "approval_scope", f["scope"])
    _put(row, "decided_by", f["decided_by"])
    row["decided_at"] = stored.at_text()


def _ended(row: Row, stored: Stored, detail: str | None) -> None:
    row["ended_at"] = stored.at_text()
    if detail is not None:
        row["detail"] = detail


def _denied(row: Row, f: Fields, stored: Stored) -> None:
    row["decision"] = AuditDecision.DENIED.value
    _put(row, "failure_category", f["category"])
    _ended(row, stored, f.get("detail") or None)


def _corrected(row: Row, f: Fields, stored: Stored) -> None:
    row["decision"] = AuditDecision.CORRECTED.value
    _put(row, "remediation", f["remediation"])
    _ended(row, stored, f.get("detail") or None)


def _unknown(row: Row, f: Fields, stored: Stored) -> None:
    row["outcome"] = UNKNOWN_OUTCOME
    _ended(row, stored, f.get("reason") or None)


def _receipt(row: Row, f: Fields, stored: Stored) -> None:
    if row["decision"] == AuditDecision.PENDING:
        row["decision"] = AuditDecision.NOT_RUN.value
    _put(row, "outcome", f["outcome"])
    _put(row, "remediation", f.get("remediation"))
    _put(row, "spill_id", f.get("spill_id"))
    problems = f.get("problems")
    if problems:
        row["detail"] = "; ".join(f"{p['field']}: {p['message']}" for p in problems)[:DETAIL_LIMIT]
    shell = f.get("shell")
    if shell is not None:
        _put(row, "command", shell["command"])
        _put(row, "shell_cwd", shell["cwd"])
        _put(row, "shell_exit_code", shell.get("exit_code"))
        row["shell_timed_out"] = int(shell.get("timed_out", False))
        _put(row, "shell_duration_ms", shell.get("duration_ms", 0))
        _put(row, "shell_output_bytes", shell.get("output_bytes", 0))
    confinement = f.get("confinement")
    if confinement is not None:
        state = "confined" if confinement["confined"] else "unconfined"
        row["sandbox"] = f"{state} ({confinement['mode']})"
        _put(row, "sandbox_abi", confinement["abi"])
        row["sandbox_network"] = int(confinement.get("network", False))
        _put(row, "sandbox_rules", confinement.get("rules_digest"))
        _put(row, "sandbox_missing", "; ".join(confinement.get("missing") or ()) or None)
    _targets(row, f.get("file_activity") or (), only_if_empty=True)
    _ended(row, stored, None)


_FOLDS: dict[str, Callable[[Row, Fields, Stored], None]] = {
    PolicyEvaluated.TOPIC: _policy,
    ApprovalRequested.TOPIC: _asked,
    ApprovalDecided.TOPIC: _decided,
    AttemptDenied.TOPIC: _denied,
    CorrectionIssued.TOPIC: _corrected,
    ToolReceiptRecorded.TOPIC: _receipt,
    AttemptOutcomeMarkedUnknown.TOPIC: _unknown,
}
"""How each event of an attempt started in the same batch changes its row in memory; the
same changes as the statements of `apply`, which serve attempts of earlier batches."""


class AuthorizationAudit(EventByEvent):
    """Which calls were allowed, denied or corrected, by which rule, who approved, and how long."""

    name = "authorization_audit"
    version = 4
    """4: the JSON columns are written by orjson (`1e-7` where the standard library wrote
    `1e-07`); the same values."""
    tables: tuple[Table, ...] = (AUTHORIZATION_AUDIT,)

    def apply_batch(self, events: Events, batch: Batch) -> None:
        """Fold the attempts started in the batch in memory and insert each once, whole.

        An event of an attempt started in an earlier batch becomes its update statement.
        """
        folded: dict[str, Row] = {}
        for stored in events.of(handled_topics(type(self))):
            topic = stored.topic
            f = stored.fields()
            if topic == AuthorizationAttemptStarted.TOPIC:
                folded[f["attempt_id"]] = _started(stored, f)
                continue
            row = folded.get(f["attempt_id"])
            if row is None:
                self.apply(stored.event(), stored.position(), batch)
            else:
                _FOLDS[topic](row, f, stored)
        # A folded row holds only its filled columns (most stay empty): binding those alone,
        # in one statement per set of columns (a handful per batch), halves the insert's cost.
        shapes: dict[tuple[str, ...], list[tuple[object, ...]]] = {}
        for row in folded.values():
            params = (*row.values(), row.get("ended_at"), row["started_at"])
            shapes.setdefault(tuple(row), []).append(params)
        for columns, rows in shapes.items():
            batch.add_rows(_insert(columns), rows)

    @singledispatchmethod
    def apply(self, event: DomainEvent, position: Position, batch: Batch) -> None:
        """Other events concern no authorization attempt."""

    @apply.register
    def _(self, event: AuthorizationAttemptStarted, position: Position, batch: Batch) -> None:
        recorded = event.arguments
        batch.add(
            "INSERT INTO authorization_audit (attempt_id, session_id, run_id, call_id, tool,"
            " operations, paths, decision, reviewed_safe, approval_asked, started_at,"
            " arguments, bounded_arguments, arguments_spill_id, command)"
            " VALUES (?, ?, ?, ?, ?, '[]', '[]', ?, 0, 0, ?, ?, ?, ?, ?)",
            event.attempt_id,
            session_of(position),
            event.run_id,
            event.call_id,
            event.tool_name,
            AuditDecision.PENDING,
            position.at.isoformat(),
            None if recorded is None else compact_json(recorded),
            json_array(event.bounded_arguments) if event.bounded_arguments else None,
            event.arguments_spill_id,
            _command_argument(recorded),
        )

    @apply.register
    def _(self, event: PolicyEvaluated, _position: Position, batch: Batch) -> None:
        allowed = event.decision is PolicyDecision.ALLOW
        reviewed = allowed and event.rule.startswith(REVIEWED_SAFE)
        assignments = "decision = ?, rule = ?, approval_mode = ?, reviewed_safe = ?, detail = ?"
        params: list[object] = [
            _POLICY[event.decision],
            event.rule,
            event.approval_mode,
            int(reviewed),
            event.detail or None,
        ]
        if event.targets:
            assignments += ", operations = ?, paths = ?"
            params.extend(operations_and_paths(event.targets))
        self._update(batch, event.attempt_id, assignments, *params)

    @apply.register
    def _(self, event: ApprovalRequested, _position: Position, batch: Batch) -> None:
        self._update(
            batch,
            event.attempt_id,
            "approval_asked = 1, approval_mode = ?, grant_key = ?",
            event.mode,
            event.grant_key or None,
        )

    @apply.register
    def _(self, event: ApprovalDecided, position: Position, batch: Batch) -> None:
        approved = event.verdict is ApprovalVerdict.APPROVED
        self._update(
            batch,
            event.attempt_id,
            "decision = ?, approval_verdict = ?, approval_scope = ?, decided_by = ?,"
            " decided_at = ?",
            AuditDecision.ALLOWED if approved else AuditDecision.DENIED,
            event.verdict,
            event.scope,
            event.decided_by,
            position.at.isoformat(),
        )

    @apply.register
    def _(self, event: AttemptDenied, position: Position, batch: Batch) -> None:
        self._end(
            batch,
            position,
            event.attempt_id,
            "decision = ?, failure_category = ?, detail = COALESCE(?, detail)",
            AuditDecision.DENIED,
            event.category,
            event.detail or None,
        )

    @apply.register
    def _(self, event: CorrectionIssued, position: Position, batch: Batch) -> None:
        self._end(
            batch,
            position,
            event.attempt_id,
            "decision = ?, remediation = ?, detail = COALESCE(?, detail)",
            AuditDecision.CORRECTED,
            event.remediation,
            event.detail or None,
        )

    @apply.register
    def _(self, event: ToolReceiptRecorded, position: Position, batch: Batch) -> None:
        # Before an allow a receipt says the tool never ran (invalid input, cancelled).
        assignments = (
            "decision = CASE decision WHEN ? THEN ? ELSE decision END,"
            " outcome = ?, remediation = ?, spill_id = ?"
        )
        params: list[object] = [
            AuditDecision.PENDING,
            AuditDecision.NOT_RUN,
            event.outcome,
            event.remediation,
            event.spill_id,
        ]
        if event.problems:
            assignments += ", detail = ?"
            params.append(problems_text(event.problems))
        if event.shell is not None:
            shell = event.shell
            assignments += (
                ", command = ?, shell_cwd = ?, shell_exit_code = ?, shell_timed_out = ?,"
                " shell_duration_ms = ?, shell_output_bytes = ?"
            )
            params.extend(
                (
                    shell.command,
                    shell.cwd,
                    shell.exit_code,
                    int(shell.timed_out),
                    shell.duration_ms,
                    shell.output_bytes,
                )
            )
        if event.confinement is not None:
            confinement = event.confinement
            assignments += (
                ", sandbox = ?, sandbox_abi = ?, sandbox_network = ?, sandbox_rules = ?,"
                " sandbox_missing = ?"
            )
            params.extend(
                (
                    sandbox_label(confinement),
                    confinement.abi,
                    int(confinement.network),
                    confinement.rules_digest,
                    "; ".join(confinement.missing) or None,
                )
            )
        if event.file_activity:
            # The decision's targets win; the receipt names the paths of calls without any.
            assignments += (
                ", operations = CASE operations WHEN '[]' THEN ? ELSE operations END,"
                " paths = CASE paths WHEN '[]' THEN ? ELSE paths END"
            )
            params.extend(operations_and_paths(event.file_activity))
        self._end(batch, position, event.attempt_id, assignments, *params)

    @apply.register
    def _(self, event: AttemptOutcomeMarkedUnknown, position: Position, batch: Batch) -> None:
        self._end(
            batch,
            position,
            event.attempt_id,
            "outcome = ?, detail = COALESCE(?, detail)",
            UNKNOWN_OUTCOME,
            event.reason or None,
        )

    def finish(self, batch: Batch) -> None:
        """Nothing is recomputed at the end of a batch."""

    @staticmethod
    def _update(batch: Batch, attempt_id: str, assignments: str, *params: object) -> None:
        batch.add(
            f"UPDATE authorization_audit SET {assignments} WHERE attempt_id = ?",  # noqa: S608 - fixed columns
            *params,
            attempt_id,
        )

    def _end(
        self,
        batch: Batch,
        position: Position,
        attempt_id: str,
        assignments: str,
        *params: object,
    ) -> None:
        """Apply `assignments` and record when the attempt ended and how long it took."""
        at = position.at.isoformat()
        self._update(batch, attempt_id, f"{assignments}, {ENDED}", *params, at, at)
