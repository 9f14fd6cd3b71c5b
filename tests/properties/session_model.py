"""The plain-dict Session model that the state machine checks the journal against; properties.

It predicts which commands a session refuses, applies what an accepted command changes, and
picks the targets that rules are steered to, touching nothing but the model.
"""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import Bundle

from domain.errors import DomainError
from domain.ids import AttemptId, RunId, SessionId
from domain.session import errors
from domain.values.attempts import RECENT_ATTEMPTS_LIMIT, AttemptEnd, AttemptStatus
from domain.values.audience import SessionKind
from domain.values.receipts import ToolReceipt
from domain.values.runs import RunEndReason
from domain.values.storage import RECENT_FILES_LIMIT, WorkingContext

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

SESSIONS: Bundle[SessionId] = Bundle("sessions")
RUNS: Bundle[RunRef] = Bundle("runs")
ATTEMPTS: Bundle[AttemptRef] = Bundle("attempts")
"""The sessions, runs and attempts the model knows of, drawn by rules as their targets."""


def new_model(kind: SessionKind = SessionKind.MAIN) -> Model:
    """What the model knows of a freshly opened session."""
    return {
        "kind": kind,
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


def context_after(context: WorkingContext, receipt: ToolReceipt) -> WorkingContext:
    """The model's own working context: most recent file first, bounded, project kept."""
    recent = list(context.recent_files)
    for activity in receipt.file_activity:
        recent = [activity.path, *(path for path in recent if path != activity.path)]
    return WorkingContext(
        project_directory=receipt.project_declaration or context.project_directory,
        recent_files=tuple(recent[:RECENT_FILES_LIMIT]),
    )


class SessionModelMixin:
    """The model of every session the machine opened, with its predictions and updates."""

    model: dict[SessionId, Model]

    # -- targets --------------------------------------------------------------------------

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

    def _unsnapshotted(self) -> list[SessionId]:
        return sorted(
            session_id
            for session_id, model in self.model.items()
            if model["version"] not in model["snapshots"]
        )

    # -- refusals -------------------------------------------------------------------------

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

    # -- updates --------------------------------------------------------------------------

    def _status(self, model: Model, attempt_id: AttemptId) -> AttemptStatus | None:
        attempt = model["attempts"].get(attempt_id)
        return None if attempt is None else attempt["status"]

    def _update_attempt(self, model: Model, attempt_id: AttemptId, **changes: Any) -> None:
        model["attempts"][attempt_id].update(changes)
        model["version"] += 1

    def _end_attempt(
        self, model: Model, attempt_id: AttemptId, end: AttemptEnd, **changes: Any
    ) -> None:
        """End an attempt; like the session, keep only the latest ended ones, newest last."""
        self._update_attempt(model, attempt_id, status=AttemptStatus.ENDED, end=end, **changes)
        attempts = model["attempts"]
        attempts[attempt_id] = attempts.pop(attempt_id)
        model["ended"] = model.get("ended", 0) + 1
        if model["ended"] > RECENT_ATTEMPTS_LIMIT:
            oldest = next(a for a, v in attempts.items() if v["status"] is AttemptStatus.ENDED)
            del attempts[oldest]

    def _end_run(self, model: Model, run_id: RunId, reason: RunEndReason) -> None:
        """Open attempts of the run end first: allowed ones unknown, the others denied."""
        for attempt_id, attempt in list(model["attempts"].items()):
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
