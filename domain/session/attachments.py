"""Files that came with a user's message and files the agent attached; domain layer.

Only the writer's live run records either. The decisions about received files are recorded
together with the run they came with; a sent file is recorded with the receipt of the call
that attached it. Neither changes what the session decides with: the events are the record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from domain.attachments.records import Received, Sent
from domain.ids import AttemptId, RunId
from domain.session.events import AttachmentReceived, AttachmentSent
from domain.session.part import Appliers, SessionPart


class AttachmentsPart(SessionPart):
    """Recording admission decisions and sent attachments."""

    def receive_attachments(self, run_id: RunId, received: Sequence[Received]) -> None:
        """Record the decision about each file that came with the run's message, in order."""
        self._require_writer(run_id)
        for item in received:
            self.trigger_event(AttachmentReceived, run_id=run_id, **dict(item))

    def send_attachment(self, run_id: RunId, attempt_id: AttemptId, sent: Sent) -> None:
        """Record a file the run's call `attempt_id` attached to the reply."""
        self._require_writer(run_id)
        self.trigger_event(AttachmentSent, run_id=run_id, attempt_id=attempt_id, **dict(sent))

    # -- state changes ---------------------------------------------------------------------

    def _attachment_received(self, _event: AttachmentReceived) -> None:
        """Nothing the session decides with changes."""

    def _attachment_sent(self, _event: AttachmentSent) -> None:
        """Nothing the session decides with changes."""

    APPLIERS: ClassVar[Appliers] = (_attachment_received, _attachment_sent)
