"""Files that come with a message and files the agent attached; adapter layer.

Inbound, in this order (ADR 0021): every file is written whole into the envelope's
`attachment-staging/`, read back, hashed and sniffed there; the domain's checks decide; a
refused file is deleted from staging at once; the decisions are journaled in the one commit
that starts the run; only then are the admitted files moved into `workspace/inbox/` and
announced in the run's user message. A crash before the commit leaves nothing journaled and
nothing visible (the next send clears staging); a crash after it leaves the decisions
journaled and the run ended `crashed` at recovery, its files never announced.

Outbound, `attachments.get` reads the outbox copy `attach_file` made, by the id its
`attachment_sent` event names, and refuses a copy that no longer matches its digest.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.errors import UnknownSessionError
from adapters.fs import anchored
from adapters.fs.envelope import Envelope, bind_envelope
from adapters.fs.sniffing import sniff
from adapters.journal.events import decoded_stream
from adapters.pipeline.context import RunScope
from domain.attachments.admission import AttachmentLimits, Offered, judge
from domain.attachments.announce import announced
from domain.attachments.names import safe_name, unique_name
from domain.attachments.records import Received
from domain.authorization.facts import canonical
from domain.errors import LedgerclawError
from domain.ids import AttachmentId, RunId, SessionId
from domain.ports import EventLog, Journal
from domain.session.aggregate import Session
from domain.session.events import AttachmentReceived, AttachmentSent, StorageBound
from domain.values.runs import RunEndReason

INBOX = "inbox"
"""The directory of the workspace admitted files go to."""


class AttachmentStorageError(LedgerclawError):
    """The session's staging area or inbox cannot be used; nothing was journaled."""

    exit_code = 5


class UnknownAttachmentError(LedgerclawError):
    """The session attached no file with that id."""

    exit_code = 6


class AttachmentUnavailableError(LedgerclawError):
    """The copy of an attached file is gone or no longer matches what was attached."""

    exit_code = 5


@dataclass(frozen=True)
class Upload:
    """One file as a client sent it: the name and type it claims, and its bytes."""

    name: str
    media_type: str
    data: bytes

    @property
    def sha256(self) -> str:
        """The hex SHA-256 of the bytes."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass(frozen=True)
class Admission:
    """A run started with its files: its scope, the decisions, and the prompt announcing them."""

    scope: RunScope
    received: tuple[Received, ...]
    prompt: str

    def answer(self) -> list[dict[str, Any]]:
        """The decisions as `chat.send` reports them, one per file in the order sent."""
        return [
            {
                "attachment_id": str(item.attachment_id),
                "name": item.name,
                "accepted": item.accepted,
                "reason": str(item.reason),
                "detail": item.detail,
                "media_type": item.media_type,
                "path": item.path,
            }
            for item in self.received
        ]


@dataclass(frozen=True)
class _Staged:
    attachment_id: AttachmentId
    upload: Upload


def start_run_with_attachments(  # noqa: PLR0913 - a run's start and what comes with it
    journal: Journal,
    home_root: Path,
    session_id: SessionId,
    *,
    client_run_id: str | None,
    text: str,
    uploads: Sequence[Upload],
    limits: AttachmentLimits,
) -> Admission:
    """Stage and check `uploads`, start and claim a run with the decisions, move what passed.

    Raises:
        AttachmentStorageError: staging or the inbox cannot be used; nothing was journaled
            and nothing was left in staging.
    """
    envelope = bind_envelope(journal, home_root, session_id)
    send = _Send(journal, envelope, session_id, client_run_id, text, tuple(uploads), limits)
    try:
        with (
            anchored.directory(str(envelope.root)) as root_fd,
            anchored.directory(envelope.attachment_staging.name, root_fd) as staging_fd,
            anchored.directory(envelope.workspace.name, root_fd) as workspace_fd,
            anchored.directory(INBOX, workspace_fd) as inbox_fd,
        ):
            return send.admit(staging_fd, inbox_fd)
    except OSError as error:
        msg = f"the session's attachment storage cannot be used: {error.strerror or error}"
        raise AttachmentStorageError(msg) from None


@dataclass(frozen=True)
class _Send:
    """One send with files, admitted through the staging and inbox directories given."""

    journal: Journal
    envelope: Envelope
    session_id: SessionId
    client_run_id: str | None
    text: str
    uploads: tuple[Upload, ...]
    limits: AttachmentLimits

    def admit(self, staging_fd: int, inbox_fd: int) -> Admission:
        for leftover in anchored.names(staging_fd):
            # Left by a send that crashed before its commit (or put there by the session).
            with contextlib.suppress(OSError):
                anchored.remove(staging_fd, leftover)
        staged = [_Staged(AttachmentId.new(), upload) for upload in self.uploads]
        try:
            received = _decide(staged, self.envelope, self.limits, staging_fd, inbox_fd)
            scope = self.start(received)
        except BaseException:
            for item in staged:
                anchored.remove(staging_fd, str(item.attachment_id))
            raise
        try:
            for decided in received:
                if decided.accepted and decided.path is not None:
                    name = Path(decided.path).name
                    anchored.move(staging_fd, str(decided.attachment_id), inbox_fd, name)
        except OSError as error:
            reason = error.strerror or str(error)
            self.crash(scope.run_id, f"an admitted file could not be moved to the inbox: {reason}")
            raise
        return Admission(scope, received, announced(self.text, received))

    def start(self, received: Sequence[Received]) -> RunScope:
        """Start and claim a run, its files' decisions in the same commit."""
        run_id, client_run_id = RunId.new(), self.client_run_id

        def start(session: Session) -> Session:
            session.start_run(run_id, client_run_id)
            session.claim_writer(run_id)
            session.receive_attachments(run_id, received)
            return session

        session = self.journal.update_session(self.session_id, start)
        return RunScope(
            session_id=self.session_id,
            run_id=run_id,
            kind=session.kind,
            audience=session.audience,
            envelope=self.envelope,
        )

    def crash(self, run_id: RunId, detail: str) -> None:
        """End a run whose files could not all be delivered; it never reaches the model."""
        self.journal.update_session(
            self.session_id, lambda s: s.end_run(run_id, RunEndReason.CRASHED, detail)
        )


def _decide(
    staged: Sequence[_Staged],
    envelope: Envelope,
    limits: AttachmentLimits,
    staging_fd: int,
    inbox_fd: int,
) -> tuple[Received, ...]:
    """Write each file into staging, read it back, and decide; refused files are deleted."""
    offered: list[Offered] = []
    stored: list[bytes] = []
    for item in staged:
        anchored.write_new(staging_fd, str(item.attachment_id), item.upload.data)
        data = anchored.read_regular(staging_fd, str(item.attachment_id), len(item.upload.data))
        if data is None:
            msg = f"staged file {item.attachment_id} changed while it was checked"
            raise OSError(msg)
        stored.append(data)
        offered.append(
            Offered(
                name=item.upload.name,
                claimed_type=item.upload.media_type,
                size=len(data),
                sniffed=sniff(data),
            )
        )
    taken = set(anchored.names(inbox_fd))
    inbox = envelope.workspace / INBOX
    received: list[Received] = []
    for item, data, offer, verdict in zip(
        staged, stored, offered, judge(offered, limits), strict=True
    ):
        path = None
        if verdict.accepted:
            name = unique_name(safe_name(item.upload.name), taken)
            taken.add(name)
            path = canonical(str(inbox / name))
        else:
            anchored.remove(staging_fd, str(item.attachment_id))
        received.append(
            Received(
                attachment_id=item.attachment_id,
                name=item.upload.name,
                claimed_type=item.upload.media_type,
                sniffed_type=offer.sniffed.media_type,
                size=len(data),
                sha256=hashlib.sha256(data).hexdigest(),
                accepted=verdict.accepted,
                reason=verdict.reason,
                detail=verdict.detail,
                media_type=verdict.media_type,
                path=path,
            )
        )
    return tuple(received)


# -- a retried send ------------------------------------------------------------------------


def received_with(log: EventLog, session_id: SessionId, run_id: RunId) -> list[AttachmentReceived]:
    """The decisions journaled about the files that came with run `run_id`, in order."""
    return [
        event
        for event in decoded_stream(log, session_id)
        if isinstance(event, AttachmentReceived) and event.run_id == run_id
    ]


def same_message(
    received: Sequence[Received], asked: str | None, text: str, uploads: Sequence[Upload]
) -> bool:
    """Whether a retried send (`text`, `uploads`) is the one that started a run.

    The run's files must be the same bytes in the same order, and its user message (when it
    got as far as one) the text with the same announcement.
    """
    if [item.sha256 for item in received] != [upload.sha256 for upload in uploads]:
        return False
    return asked is None or asked == announced(text, received)


# -- fetching an attached file -------------------------------------------------------------


def fetch_attachment(
    log: EventLog, session_id: SessionId, attachment_id: AttachmentId
) -> dict[str, Any]:
    """The file the session attached as `attachment_id`, base64 encoded, with its facts.

    Raises:
        UnknownSessionError: no such session is in the journal.
        UnknownAttachmentError: the session attached no file with that id.
        AttachmentUnavailableError: its copy is gone or changed.
    """
    events = decoded_stream(log, session_id)
    if not events:
        msg = f"no session {session_id} is in the journal"
        raise UnknownSessionError(msg)
    sent = next(
        (e for e in events if isinstance(e, AttachmentSent) and e.attachment_id == attachment_id),
        None,
    )
    bound = next((e for e in events if isinstance(e, StorageBound)), None)
    if sent is None or bound is None:
        msg = f"session {session_id} attached no file {attachment_id}"
        raise UnknownAttachmentError(msg)
    data = _read_copy(Envelope(Path(bound.envelope_root)).outbox, attachment_id, sent.size)
    if data is None or hashlib.sha256(data).hexdigest() != sent.sha256:
        msg = f"the copy of {attachment_id} no longer matches what was attached"
        raise AttachmentUnavailableError(msg)
    return {
        "session": str(session_id),
        "attachment_id": str(attachment_id),
        "name": sent.name,
        "media_type": sent.media_type,
        "size": sent.size,
        "sha256": sent.sha256,
        "data": base64.b64encode(data).decode("ascii"),
    }


def _read_copy(outbox: Path, attachment_id: AttachmentId, size: int) -> bytes | None:
    try:
        with anchored.directory(os.fspath(outbox), create=False) as outbox_fd:
            return anchored.read_regular(outbox_fd, str(attachment_id), size)
    except OSError as error:
        msg = f"the copy of {attachment_id} cannot be read: {error.strerror or error}"
        raise AttachmentUnavailableError(msg) from None
