"""Starting and ending a run that calls tools: session, envelope, writer claim; adapter layer."""

from __future__ import annotations

from pathlib import Path

from adapters.fs.envelope import Envelope, bind_envelope, envelope_root
from adapters.pipeline.context import RunScope
from domain.ids import RunId, SessionId
from domain.ports import Journal
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.runs import RunEndReason


def begin_run(
    journal: Journal,
    home_root: Path,
    session_id: SessionId | None = None,
    audience: Audience = Audience.PERSONAL,
    *,
    new: bool = False,
) -> RunScope:
    """Open a new main session (when none is named, or `new`), bind it, start and claim a run.

    A new session is keyed `cli:<id prefix>`; `open_run` opens one with other facts.
    """
    if session_id is None or new:
        session_id = session_id or SessionId.new()
        key = f"cli:{session_id.hex[:8]}"
        return open_run(
            journal, home_root, SessionOpening(session_id, key, SessionKind.MAIN, audience)
        )
    return start_run(journal, home_root, session_id)


def open_run(journal: Journal, home_root: Path, opening: SessionOpening) -> RunScope:
    """Open the session `opening` describes and start and claim its first run.

    The one way a session is opened for calls, for a native call, a hosted client or an
    agent alike: its storage is made before anything is journaled.
    """
    open_session(journal, home_root, opening)
    return start_run(journal, home_root, opening.session_id)


def open_session(journal: Journal, home_root: Path, opening: SessionOpening) -> None:
    """Make the session's storage, then journal its opening: nothing names a missing envelope."""
    Envelope(envelope_root(home_root, opening.session_id).resolve()).create()
    journal.open_session(opening)


def start_run(
    journal: Journal, home_root: Path, session_id: SessionId, client_run_id: str | None = None
) -> RunScope:
    """Start and claim a new run of an existing session; `client_run_id` names it for retries."""
    envelope = bind_envelope(journal, home_root, session_id)
    run_id = RunId.new()

    def start(session: Session) -> Session:
        session.start_run(run_id, client_run_id)
        session.claim_writer(run_id)
        return session

    session = journal.update_session(session_id, start)
    if session.kind is SessionKind.SUBAGENT:
        envelope.create_run(run_id)
    return RunScope(
        session_id=session_id,
        run_id=run_id,
        kind=session.kind,
        audience=session.audience,
        envelope=envelope,
    )


def end_run(journal: Journal, run: RunScope, reason: RunEndReason = RunEndReason.NATURAL) -> None:
    """End the run; attempts it left open end too (allowed ones as unknown)."""
    journal.update_session(run.session_id, lambda s: s.end_run(run.run_id, reason))


def end_run_if_live(journal: Journal, run: RunScope, reason: RunEndReason) -> None:
    """End the run for `reason` unless it already ended (a driver that failed midway)."""
    found = journal.session(run.session_id).runs.get(run.run_id)
    if found is not None and found.ended is None:
        end_run(journal, run, reason)
