"""The session storage envelope: one directory per session, bound once; adapter layer.

```
<home>/sessions/<session id>/
├── attachment-staging/   inbound bytes before admission
├── workspace/            the default relative base
├── artifacts/            outputs the user keeps
├── tmp/parent/           the main session's managed temporary directory
├── worktrees/            managed source worktrees
├── spills/               full tool output beyond the inline bound (never named to a model)
├── outbox/               copies of files the agent attached to its replies, by attachment id
├── logs/session.log      the raw log
└── subagents/<run id>/{artifacts,tmp,logs/session.log}
```

The root is journaled once as the session's storage binding and never recomputed: a later
home or layout change does not move an existing session.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from adapters.errors import HomeError
from domain.ids import RunId, SessionId
from domain.ports import Journal
from domain.session.errors import StorageAlreadyBoundError
from domain.values.audience import SessionKind

LAYOUT_VERSION = 1
SESSIONS_DIR = "sessions"
_MODE = 0o700


@dataclass(frozen=True)
class Envelope:
    """The directories of one session's envelope."""

    root: Path

    @property
    def attachment_staging(self) -> Path:
        """Inbound bytes before the attachment pipeline admits them."""
        return self.root / "attachment-staging"

    @property
    def workspace(self) -> Path:
        """The session directory: the relative base when no project is declared."""
        return self.root / "workspace"

    @property
    def artifacts(self) -> Path:
        """Outputs of the main session that a user keeps."""
        return self.root / "artifacts"

    @property
    def worktrees(self) -> Path:
        """Managed source worktrees."""
        return self.root / "worktrees"

    @property
    def spills(self) -> Path:
        """Full tool output kept beyond the inline bound."""
        return self.root / "spills"

    @property
    def outbox(self) -> Path:
        """Copies of the files the agent attached, named by attachment id (made when needed)."""
        return self.root / "outbox"

    @property
    def log(self) -> Path:
        """The main session's raw log."""
        return self.root / "logs" / "session.log"

    def run_root(self, run_id: RunId) -> Path:
        """The child run directory of one subagent run."""
        return self.root / "subagents" / str(run_id)

    def tmp_dir(self, kind: SessionKind, run_id: RunId) -> Path:
        """The managed temporary directory of a run: the parent's, or the child run's own."""
        if kind is SessionKind.MAIN:
            return self.root / "tmp" / "parent"
        return self.run_root(run_id) / "tmp"

    def create(self) -> Envelope:
        """Create every directory of the envelope that is missing; existing ones are kept.

        A path in the way (a file where a directory belongs) is a HomeError, not a trace.
        """
        try:
            self._create()
        except OSError as error:
            msg = f"cannot prepare the session's storage at {self.root}: {error.strerror or error}"
            raise HomeError(msg) from None
        return self

    def _create(self) -> None:
        for directory in (
            self.attachment_staging,
            self.workspace,
            self.artifacts,
            self.root / "tmp" / "parent",
            self.worktrees,
            self.spills,
            self.log.parent,
        ):
            directory.mkdir(mode=_MODE, parents=True, exist_ok=True)
        self.log.touch(mode=0o600, exist_ok=True)

    def create_run(self, run_id: RunId) -> Path:
        """Create a subagent run's artifacts, tmp and log; return the run's directory."""
        run_root = self.run_root(run_id)
        for directory in (run_root / "artifacts", run_root / "tmp", run_root / "logs"):
            directory.mkdir(mode=_MODE, parents=True, exist_ok=True)
        (run_root / "logs" / "session.log").touch(mode=0o600, exist_ok=True)
        return run_root


def envelope_root(home_root: Path, session_id: SessionId) -> Path:
    """Where a new session's envelope goes."""
    return home_root / SESSIONS_DIR / str(session_id)


def bind_envelope(journal: Journal, home_root: Path, session_id: SessionId) -> Envelope:
    """The session's envelope, created and journaled on first use, never moved afterwards.

    A subagent shares its parent's envelope (its own files live under subagents/<run id>).
    """
    session = journal.session(session_id)
    if session.storage is not None:
        return Envelope(Path(session.storage.envelope_root)).create()
    owner = session.parent_session_id or session_id
    if owner != session_id:
        envelope = bind_envelope(journal, home_root, owner)
    else:
        envelope = Envelope(envelope_root(home_root, session_id).resolve()).create()
    try:
        journal.update_session(
            session_id, lambda s: s.bind_storage(LAYOUT_VERSION, str(envelope.root))
        )
    except StorageAlreadyBoundError:
        # Another writer bound it first; its binding is the one that stands.
        bound = journal.session(session_id).storage
        assert bound is not None  # noqa: S101 - the error says it is bound
        return Envelope(Path(bound.envelope_root)).create()
    return envelope
