"""The runs of a session, its one writer, and its close; domain layer.

Only the run that claimed the writer fence appends to the session; claiming it supersedes
the previous writer, whose run ends. Ending a run ends its open attempts in the same save.
"""

from __future__ import annotations

from typing import ClassVar

from domain.ids import RunId
from domain.session import errors
from domain.session.events import RunEnded, RunStarted, SessionClosed, WriterClaimed
from domain.session.part import Appliers, SessionPart
from domain.values.runs import CLOSE_RUN_REASONS, RunEndReason, RunState, SessionCloseReason


class RunsPart(SessionPart):
    """Starting, ending and recovering runs, the writer fence, and closing the session."""

    def start_run(self, run_id: RunId, client_run_id: str | None = None) -> None:
        """Start a run; a reused client run id names the run it already started."""
        self._require_open()
        if run_id in self.runs:
            msg = f"run {run_id} already started"
            raise errors.RunAlreadyStartedError(msg)
        existing = self.run_for_client(client_run_id) if client_run_id else None
        if client_run_id and existing is not None:
            raise errors.ClientRunAlreadyStartedError(client_run_id, existing)
        self.trigger_event(RunStarted, run_id=run_id, client_run_id=client_run_id)

    def run_for_client(self, client_run_id: str) -> RunId | None:
        """The run started for `client_run_id`, if any."""
        for run in self.runs.values():
            if run.client_run_id == client_run_id:
                return run.run_id
        return None

    def claim_writer(self, run_id: RunId) -> None:
        """Make `run_id` the only writer; the previous writer's run ends as superseded."""
        self._require_live_run(run_id)
        if self.writer == run_id:
            return
        superseded = self.writer
        self.trigger_event(WriterClaimed, run_id=run_id, superseded_run_id=superseded)
        if superseded is not None:
            self._end_run(superseded, RunEndReason.SUPERSEDED)

    def end_run(self, run_id: RunId, reason: RunEndReason, detail: str = "") -> None:
        """End a run; its open attempts end too, allowed ones with an unknown outcome."""
        self._require_live_run(run_id)
        self._end_run(run_id, reason, detail)

    def recover(self) -> list[RunId]:
        """After a crash: end every live run as crashed; return the runs that were ended."""
        live = [run.run_id for run in self.runs.values() if run.ended is None]
        for run_id in live:
            self._end_run(run_id, RunEndReason.CRASHED)
        return live

    def close(self, reason: SessionCloseReason) -> None:
        """Close the session for good; runs still live end first, for the matching reason."""
        self._require_open()
        for run in list(self.runs.values()):
            if run.ended is None:
                self._end_run(run.run_id, CLOSE_RUN_REASONS[reason])
        self.trigger_event(SessionClosed, reason=reason)

    def _end_run(self, run_id: RunId, reason: RunEndReason, detail: str = "") -> None:
        self._close_pending_calls(run_id, reason)
        self._end_run_attempts(run_id, reason)
        self.trigger_event(RunEnded, run_id=run_id, reason=reason, detail=detail)

    # -- state changes ---------------------------------------------------------------------

    def _run_started(self, event: RunStarted) -> None:
        self.runs[event.run_id] = RunState(run_id=event.run_id, client_run_id=event.client_run_id)

    def _writer_claimed(self, event: WriterClaimed) -> None:
        self.writer = event.run_id

    def _run_ended(self, event: RunEnded) -> None:
        run = self.runs[event.run_id]
        self.runs[event.run_id] = run.model_copy(update={"ended": event.reason})
        if self.writer == event.run_id:
            self.writer = None
        self.agent_turn = None
        self.pending_calls = ()

    def _session_closed(self, event: SessionClosed) -> None:
        self.closed = event.reason

    APPLIERS: ClassVar[Appliers] = (_run_started, _writer_claimed, _run_ended, _session_closed)
