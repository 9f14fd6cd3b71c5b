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


def begin_run(  # noqa: PLR0913 - a new session's opening facts are keyword-only
    journal: Journal,
    home_root: Path,
    session_id: SessionId | None = None,
    audience: Audience = Audience.PERSONAL,
    *,
    new: bool = False,
    session_key: str | None = None,
    client_name: str | None = None,
    client_version: str | None = None,
) -> RunScope:
    """Open a new main session (when none is named, or `new`), bind it, start and claim a run.

    The one way a run is opened, for a native call, a hosted client or an agent alike: a new
    session gets `session_key` (`cli:<id prefix>` by default) and the client's declared name
    and version; its storage is made before anything is journaled.
    """
    if session_id is None or new:
        session_id = session_id or SessionId.new()
        # Prepare the storage first: if it cannot be made, nothing has been journaled.
        Envelope(envelope_root(home_root, session_id).resolve()).create()
        journal.open_session(
            SessionOpening(
                session_id,
                session_key or f"cli:{session_id.hex[:8]}",
                SessionKind.MAIN,
                audience,
                client_name=client_name,
                client_version=client_version,
            )
        )
    envelope = bind_envelope(journal, home_root, session_id)
    run_id = RunId.new()

    def start(session: Session) -> Session:
        session.start_run(run_id)
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
