"""Facts the agent loop records in a Session stream; domain layer.

Each event is the decider's record of the same name (`domain/agent/records.py`) plus the run
it belongs to, so the fields are written once and replay reads an event back into exactly
the record the decider made. The transcript itself stays in `MessageAppended`, and a run's
end in `RunEnded`.
"""

from __future__ import annotations

from typing import ClassVar

from domain.agent import records
from domain.base import DomainEvent
from domain.ids import RunId
from domain.session.events import MessageAppended, RunEnded, SessionEvent


class AgentEvent(SessionEvent):
    """Base of the agent loop's events: each belongs to one run."""

    RECORD: ClassVar[type[records.AgentRecord]]

    run_id: RunId

    def record(self) -> records.AgentRecord:
        """The decider's record this event holds."""
        fields = self.RECORD.model_fields
        return self.RECORD.model_validate({name: getattr(self, name) for name in fields})


class AgentRunConfigured(AgentEvent, records.RunConfigured):
    """An agent run began with this failover chain, these limits and this context window."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.agent_run_configured"
    KEY_FIELDS = ("context_window", "turns")
    RECORD = records.RunConfigured


class TurnStarted(AgentEvent, records.TurnBegun):
    """A turn began, with its volatile suffix and the digests of what stays stable."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.turn_started"
    KEY_FIELDS = ("turn", "prefix_digest", "tools_digest")
    RECORD = records.TurnBegun


class PromptPrefixSet(AgentEvent, records.PrefixSet):
    """The stable prefix and the tools offered changed (or were first set) for this session."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.prompt_prefix_set"
    KEY_FIELDS = ("digest",)
    RECORD = records.PrefixSet


class ModelRequested(AgentEvent, records.ModelAsked):
    """A candidate was asked; the request is kept as digests and an estimate."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.model_requested"
    KEY_FIELDS = ("turn", "provider", "model", "profile", "estimated_tokens")
    RECORD = records.ModelAsked


class ModelReplied(AgentEvent, records.ModelAnswered):
    """The accepted reply ended; its text and calls are the assistant message after it."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.model_replied"
    KEY_FIELDS = ("turn", "finish", "raw_finish", "latency_ms", "usage.input_tokens")
    RECORD = records.ModelAnswered


class ModelAttemptFailed(AgentEvent, records.ModelAttemptFailed):
    """A candidate failed, classified, and failover's decision about it."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.model_attempt_failed"
    KEY_FIELDS = ("turn", "provider", "model", "profile", "kind", "status", "action")
    RECORD = records.ModelAttemptFailed


class MessageQueued(AgentEvent, records.MessageQueued):
    """A user message arrived during the run and waits for a safe point."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.message_queued"
    KEY_FIELDS = ("kind",)
    RECORD = records.MessageQueued


class CallAnswered(AgentEvent, records.CallAnswered):
    """A call of the latest reply got its one result; a synthetic one says why it did not run."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.call_answered"
    KEY_FIELDS = ("position", "call_id", "not_run", "outcome")
    RECORD = records.CallAnswered


class TurnEnded(AgentEvent, records.TurnClosed):
    """A turn ended: its reply and all its results are in the transcript."""

    TOPIC: ClassVar[str] = "ledgerclaw.session.turn_ended"
    KEY_FIELDS = ("turn",)
    RECORD = records.TurnClosed


AGENT_EVENTS: tuple[type[AgentEvent], ...] = (
    AgentRunConfigured,
    TurnStarted,
    PromptPrefixSet,
    ModelRequested,
    ModelReplied,
    ModelAttemptFailed,
    MessageQueued,
    CallAnswered,
    TurnEnded,
)


def agent_record(event: DomainEvent) -> records.AgentRecord | None:
    """The decider's record a session event holds, if it holds one.

    Agent events hold theirs; a transcript message is an `Appended` and a run's end a
    `RunClosed`, whoever wrote them.
    """
    if isinstance(event, AgentEvent):
        return event.record()
    if isinstance(event, MessageAppended):
        return records.Appended(message=event.message)
    if isinstance(event, RunEnded):
        return records.RunClosed(reason=event.reason, detail=event.detail)
    return None
