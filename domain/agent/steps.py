"""What the agent driver tells the decider, and what the decider asks of it; domain layer.

Facts are outcomes from the world (a user spoke, the prompt was gathered, a model replied
or failed, calls finished, the run was aborted); steps are the one thing the driver does
next. The driver performs a step and feeds its outcome back as a fact; facts that arrive
while a step is in flight (steering, an abort) are fed as they come.
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.agent.failover import Candidate, Failure
from domain.agent.records import AgentRecord
from domain.agent.replies import ModelReply, ModelRequest, ToolSpec
from domain.values.conversation import ToolCallRequest
from domain.values.receipts import OutcomeCategory
from domain.values.runs import RunEndReason

# -- facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserSpoke:
    """A user message arrived while the run worked (steering), or to follow up once it ends."""

    text: str
    follow_up: bool = False


@dataclass(frozen=True)
class PromptGathered:
    """The system prompt's two parts and the tools offered, read for the next turn."""

    prefix: str
    suffix: str
    tools: tuple[ToolSpec, ...]
    parallel_safe: frozenset[str]
    """The offered tools that declare themselves safe to run beside others."""
    at: float
    """Seconds since the run began."""


@dataclass(frozen=True)
class Replied:
    """The candidate asked last answered, and its reply ended."""

    reply: ModelReply
    latency_ms: int


@dataclass(frozen=True)
class Failed:
    """The candidate asked last failed."""

    failure: Failure
    at: float


@dataclass(frozen=True)
class Executed:
    """One call of the reply ran through the pipeline: its result text and how it ended."""

    position: int
    text: str
    outcome: OutcomeCategory
    """A denial counts as `access_denied`, a correction as `recoverable_correction`."""
    failed: bool


@dataclass(frozen=True)
class CallsDone:
    """The calls of the last `RunCalls` step finished."""

    results: tuple[Executed, ...]


@dataclass(frozen=True)
class Aborted:
    """The run was aborted; the step in flight was cancelled (calls done so far kept)."""

    done: tuple[Executed, ...] = ()
    reason: RunEndReason = RunEndReason.ABORT
    """`abort` when the user asked, `shutdown` when the hosting daemon stopped."""


Fact = UserSpoke | PromptGathered | Replied | Failed | CallsDone | Aborted

# -- steps ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GatherPrompt:
    """Read the bootstrap files, the time and the working context; feed `PromptGathered`."""


@dataclass(frozen=True)
class AskModel:
    """Ask `candidate` after waiting `wait` seconds; feed `Replied` or `Failed`."""

    candidate: Candidate
    request: ModelRequest
    wait: float = 0.0


@dataclass(frozen=True)
class RunCalls:
    """Run these calls of the reply (by position) through the pipeline; feed `CallsDone`."""

    positions: tuple[int, ...]
    calls: tuple[ToolCallRequest, ...]
    parallel: bool


@dataclass(frozen=True)
class KeepWaiting:
    """Nothing new to do: the step in flight goes on."""


@dataclass(frozen=True)
class Finished:
    """The run ended for `reason`; nothing more is done."""

    reason: RunEndReason
    detail: str = ""


Step = GatherPrompt | AskModel | RunCalls | KeepWaiting | Finished


@dataclass(frozen=True)
class Decision:
    """The records to journal, in order, and the step to perform once they are durable."""

    records: tuple[AgentRecord, ...]
    step: Step
