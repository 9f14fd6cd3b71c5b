"""The EventLog port in memory: the notification log of eventsourcing's in-memory recorder.

Give it the recorder of an `InMemoryJournal` (`journal.app.recorder`) and it reads what that
journal stored, as the SQLite event log reads the journal file. Every read walks the whole
log; a fake is for small logs.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder

from domain.logged import LoggedEvent, StreamSpan


def _hex(originator_id: UUID | str) -> str:
    return originator_id.hex if isinstance(originator_id, UUID) else str(originator_id)


class InMemoryEventLog:
    """The stored events of an in-memory recorder, read-only."""

    def __init__(self, recorder: ApplicationRecorder) -> None:
        self.recorder = recorder

    def _all(self) -> list[LoggedEvent]:
        last = self.recorder.max_notification_id() or 0
        if not last:
            return []
        return [
            LoggedEvent(n.id, _hex(n.originator_id), n.originator_version, n.topic, n.state)
            for n in self.recorder.select_notifications(start=1, limit=last)
        ]

    def head(self) -> int:
        """The position of the last event; 0 when the log holds none."""
        return self.recorder.max_notification_id() or 0

    def count(self) -> int:
        """How many events the log holds."""
        return len(self._all())

    def batch(self, after: int, limit: int, *, upto: int | None = None) -> list[LoggedEvent]:
        """At most `limit` events after position `after` (up to `upto`), in log order."""
        chosen = [e for e in self._all() if e.position > after]
        if upto is not None:
            chosen = [e for e in chosen if e.position <= upto]
        return chosen[:limit]

    def stream(
        self,
        stream_id: str,
        *,
        topic: str | None = None,
        after: int = 0,
        upto: int | None = None,
        limit: int | None = None,
    ) -> list[LoggedEvent]:
        """The stream's events in order: of `topic`, after `after`, up to `upto`, `limit` first."""
        chosen = sorted(
            (
                e
                for e in self._all()
                if e.stream_id == stream_id
                and (topic is None or e.topic == topic)
                and e.version > after
                and (upto is None or e.version <= upto)
            ),
            key=lambda e: e.version,
        )
        return chosen if limit is None else chosen[:limit]

    def stream_heads(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """How many events each stream holds; a stream without any is left out."""
        wanted = set(stream_ids)
        heads: dict[str, int] = {}
        for event in self._all():
            if event.stream_id in wanted:
                heads[event.stream_id] = max(heads.get(event.stream_id, 0), event.version)
        return heads

    def opened(self, topic: str) -> list[StreamSpan]:
        """Every stream whose first event has `topic`, with its last event, in log order."""
        events = self._all()
        last: dict[str, LoggedEvent] = {}
        for event in events:
            kept = last.get(event.stream_id)
            if kept is None or event.version > kept.version:
                last[event.stream_id] = event
        return [
            StreamSpan(e, last[e.stream_id]) for e in events if e.version == 1 and e.topic == topic
        ]

    def opened_with_prefix(self, topic: str, prefix: str, limit: int) -> list[str]:
        """At most `limit` ids of streams opened by `topic` whose id starts with `prefix`."""
        ids = sorted(span.first.stream_id for span in self.opened(topic))
        return [i for i in ids if i.startswith(prefix)][:limit]
