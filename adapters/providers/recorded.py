"""A provider that plays a journaled session's model replies back, in order; adapter layer.

Each accepted reply of the recorded session (its `model_replied` event and the assistant
message after it) and each failed attempt (`model_attempt_failed`) becomes one step, played
in the order they were journaled, exactly as the scripted provider plays a script. Running
the agent on a recording re-drives a real conversation's model side offline, against today's
tools, policy and prompt; nothing the recording holds is sent anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from adapters.errors import ConfigError
from domain.agent import records
from domain.agent.failover import Candidate, FailureKind
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest


class RecordingError(ConfigError):
    """A recording that cannot be played: no such session, or one with no model replies."""


Played = ModelReply | ModelFailure


def recorded_steps(entries: Sequence[records.AgentRecord]) -> list[Played]:
    """The replies and failures of a session's agent records, in journal order."""
    steps: list[Played] = []
    waiting: records.ModelAnswered | None = None
    for entry in entries:
        if isinstance(entry, records.ModelAnswered):
            waiting = entry
        elif isinstance(entry, records.Appended) and waiting is not None:
            message = entry.message
            steps.append(
                ModelReply(
                    text=message.content,
                    tool_calls=message.tool_calls,
                    raw_finish=waiting.raw_finish,
                    finish=waiting.finish,
                    usage=waiting.usage,
                    notes=waiting.notes,
                )
            )
            waiting = None
        elif isinstance(entry, records.ModelAttemptFailed):
            candidate = Candidate(entry.provider, entry.model, entry.profile)
            steps.append(
                ModelFailure(
                    candidate,
                    FailureKind(entry.kind),
                    entry.message,
                    status=entry.status,
                    retry_after=entry.retry_after,
                )
            )
    return steps


class RecordedProvider:
    """Plays the recorded replies and failures, one per request."""

    def __init__(self, steps: Sequence[Played], source: str = "the recording") -> None:
        self._steps = list(steps)
        self._next = 0
        self._source = source

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The recording's next reply, or its next failure raised again for this candidate."""
        del request
        if self._next >= len(self._steps):
            msg = f"{self._source} has no reply left for request {self._next + 1}"
            raise ModelFailure(candidate, FailureKind.BAD_REQUEST, msg)
        step = self._steps[self._next]
        self._next += 1
        if isinstance(step, ModelFailure):
            raise ModelFailure(
                candidate,
                step.kind,
                step.message,
                status=step.status,
                retry_after=step.retry_after,
            )
        if on_text is not None and step.text:
            on_text(step.text)
        return step
