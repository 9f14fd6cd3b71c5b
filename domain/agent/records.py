"""What the agent loop records of each step, one value per session event; domain layer.

The decider returns these; the Session aggregate turns each into its event (see
`domain/session/agent.py`), and replay reads the events back into these values to compare
them with what the decider decides again. Nothing here holds a credential: a candidate is
named by provider, model and profile name only.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from domain.agent.finish import FinishReason
from domain.agent.pairing import NotRun
from domain.agent.replies import ToolSpec, Usage
from domain.base import Value
from domain.ids import CallId
from domain.text import Detail, ShortText, Text
from domain.values.conversation import ChatMessage
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason


class QueueKind(StrEnum):
    """When a message that arrived during a run is taken."""

    STEERING = "steering"
    """At the next safe point: before a model request, before a batch, after a batch."""
    FOLLOW_UP = "follow_up"
    """Only once the run would otherwise end: it continues the same run."""


class ChainModel(Value):
    """One model of a run's failover chain and its credential profiles, in order."""

    provider: ShortText
    model: ShortText
    profiles: tuple[ShortText, ...]


class RunConfigured(Value):
    """What the run was configured with: replay decides with exactly this, not today's config."""

    chain: tuple[ChainModel, ...] = Field(min_length=1)
    retry_after_cap: float = Field(ge=0)
    cooldown: float = Field(ge=0)
    transient_wait: float = Field(ge=0)
    fall_back: bool
    same_failure: int = Field(ge=1)
    failed_turns: int = Field(ge=1)
    turns: int = Field(ge=1)
    context_window: int = Field(ge=1)
    output_reserve: int = Field(ge=0)
    max_output_tokens: int = Field(ge=1)


class TurnBegun(Value):
    """A turn began: the model is about to be asked with this turn's volatile suffix."""

    turn: int = Field(ge=1)
    suffix: Text
    prefix_digest: ShortText
    tools_digest: ShortText
    at: float = Field(ge=0)
    """Seconds since the run began: the time the first candidate was chosen at."""


class PrefixSet(Value):
    """The stable prefix and the tools offered, recorded whenever they differ from the last."""

    digest: ShortText
    prefix: Text
    tools: tuple[ToolSpec, ...] = ()
    parallel_safe: tuple[ShortText, ...] = ()
    """The offered tools that may run beside others, by name, sorted."""


class ModelAsked(Value):
    """One request to one candidate, by digests; the request itself is rebuilt on replay."""

    turn: int = Field(ge=1)
    provider: ShortText
    model: ShortText
    profile: ShortText
    request_digest: ShortText
    prefix_digest: ShortText
    tools_digest: ShortText
    estimated_tokens: int = Field(ge=0)


class ModelAnswered(Value):
    """The accepted candidate's reply ended; its message follows in the transcript."""

    turn: int = Field(ge=1)
    raw_finish: ShortText | None = None
    finish: FinishReason
    usage: Usage | None = None
    latency_ms: int = Field(ge=0)
    notes: tuple[Detail, ...] = ()


class ModelAttemptFailed(Value):
    """A candidate failed; failover decided what came next (see `FailoverAction`)."""

    turn: int = Field(ge=1)
    provider: ShortText
    model: ShortText
    profile: ShortText
    kind: ShortText
    status: int | None = None
    retry_after: float | None = None
    message: Detail = ""
    action: ShortText
    wait: float = 0.0
    at: float = Field(ge=0)
    """Seconds since the run began, as failover saw them: cooldowns replay the same way."""


class MessageQueued(Value):
    """A user message arrived while the run worked; it is taken at a safe point."""

    kind: QueueKind
    text: Text


class Appended(Value):
    """A message joins the transcript."""

    message: ChatMessage


class CallAnswered(Value):
    """A call of the latest reply got its one result: executed, or synthetic and why."""

    position: int = Field(ge=0)
    call_id: CallId
    not_run: NotRun | None = None
    outcome: OutcomeCategory | None = None
    """For an executed call: how it ended (None for a denied or corrected one)."""
    failed: bool = False


class TurnClosed(Value):
    """A turn ended: its reply and every result of its calls are in the transcript."""

    turn: int = Field(ge=1)


class RunClosed(Value):
    """The run ended, for this reason; the detail names the limit or the error."""

    reason: RunEndReason
    detail: Detail = ""


AgentRecord = (
    RunConfigured
    | TurnBegun
    | PrefixSet
    | ModelAsked
    | ModelAnswered
    | ModelAttemptFailed
    | MessageQueued
    | Appended
    | CallAnswered
    | TurnClosed
    | RunClosed
)
"""Every kind of record the decider makes."""
