"""The agent loop's records in the session, and the calls its latest reply left open; domain layer.

The decider (`domain/agent/decider.py`) decides; this part only checks that the run may
write and turns each record into its event. It also remembers which calls of the agent's
latest reply have no result yet, so that a run that ends for any reason (a crash found at
recovery, a superseded writer, a closed session) first gives each of them its synthetic
result and the transcript never ends on a call without one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from domain.agent import records
from domain.agent.pairing import SYNTHETIC_TEXT, NotRun
from domain.ids import CallId, RunId
from domain.session.agent_events import (
    AGENT_EVENTS,
    AgentEvent,
    CallAnswered,
    PromptPrefixSet,
    TurnEnded,
    TurnStarted,
)
from domain.session.events import MessageAppended
from domain.session.part import Appliers, SessionPart
from domain.values.conversation import ChatMessage, MessageRole
from domain.values.runs import RunEndReason

EVENT_OF: dict[type[records.AgentRecord], type[AgentEvent]] = {
    event.RECORD: event for event in AGENT_EVENTS
}
"""The event each record becomes (messages and a run's end have events of their own)."""

UNKNOWN_ENDS = frozenset({RunEndReason.CRASHED, RunEndReason.SUPERSEDED})
"""Ends after which a call that may have run is unknown rather than cancelled."""


class AgentPart(SessionPart):
    """Recording the agent loop's steps, and closing the calls a run leaves open."""

    def record_agent(self, run_id: RunId, steps: Sequence[records.AgentRecord]) -> None:
        """Record the decider's steps for the writer's run, in order, in one save."""
        self._require_writer(run_id)
        for step in steps:
            self._require_live_run(run_id)
            if isinstance(step, records.Appended):
                self.trigger_event(MessageAppended, run_id=run_id, message=step.message)
            elif isinstance(step, records.RunClosed):
                self._end_run(run_id, step.reason, step.detail)
            else:
                self.trigger_event(EVENT_OF[type(step)], run_id=run_id, **dict(step))

    def _close_pending_calls(self, run_id: RunId, reason: RunEndReason) -> None:
        not_run = NotRun.UNKNOWN if reason in UNKNOWN_ENDS else NotRun.CANCELLED
        for position, call_id in self.pending_calls:
            self.trigger_event(
                CallAnswered,
                run_id=run_id,
                position=position,
                call_id=call_id,
                not_run=not_run,
                failed=True,
            )
            message = ChatMessage(
                role=MessageRole.TOOL, content=SYNTHETIC_TEXT[not_run], call_id=call_id
            )
            self.trigger_event(MessageAppended, run_id=run_id, message=message)
        if self.agent_turn is not None:
            self.trigger_event(TurnEnded, run_id=run_id, turn=self.agent_turn)

    # -- state changes ---------------------------------------------------------------------

    def _prompt_prefix_set(self, event: PromptPrefixSet) -> None:
        self.prompt_digest = event.digest

    def _turn_started(self, event: TurnStarted) -> None:
        self.agent_turn = event.turn

    def _follow_agent_message(self, event: MessageAppended) -> None:
        # Called by the conversation part's applier: only a reply inside a turn opens calls.
        message = event.message
        if self.agent_turn is not None and message.role is MessageRole.ASSISTANT:
            self.pending_calls = tuple(
                (position, CallId(call.call_id)) for position, call in enumerate(message.tool_calls)
            )

    def _call_answered(self, event: CallAnswered) -> None:
        self.pending_calls = tuple(p for p in self.pending_calls if p[0] != event.position)

    def _turn_ended(self, _event: TurnEnded) -> None:
        self.agent_turn = None
        self.pending_calls = ()

    def _agent_event(self, _event: AgentEvent) -> None:
        """The other agent events change nothing the aggregate decides with."""

    APPLIERS: ClassVar[Appliers] = (
        _prompt_prefix_set,
        _turn_started,
        _call_answered,
        _turn_ended,
        _agent_event,
    )
