"""The Session aggregate's parts: every event of its stream has exactly one applier."""

from __future__ import annotations

import inspect
from typing import get_type_hints

import pytest

from domain.session.agent import AgentPart
from domain.session.agent_events import AGENT_EVENTS, AgentEvent
from domain.session.aggregate import Session
from domain.session.approvals import ApprovalsPart
from domain.session.attachments import AttachmentsPart
from domain.session.attempts import AttemptsPart
from domain.session.context import ContextPart
from domain.session.conversation import ConversationPart
from domain.session.events import SESSION_EVENTS, SessionOpened
from domain.session.outcomes import OutcomesPart
from domain.session.runs import RunsPart
from domain.values.authorization import ApprovalVerdict, DenialCategory, denial_for_verdict

PARTS = (
    RunsPart,
    AttemptsPart,
    ApprovalsPart,
    OutcomesPart,
    ConversationPart,
    ContextPart,
    AgentPart,
    AttachmentsPart,
)


def applied_type(applier):
    """The event type an applier is annotated to take."""
    hints = get_type_hints(applier)
    hints.pop("return", None)
    [event_type] = hints.values()
    return event_type


def test_every_event_after_the_opening_one_dispatches_to_an_applier() -> None:
    """Session's one `apply_event` reaches an applier for each later event of its stream."""
    dispatcher = inspect.getattr_static(Session, "apply_event").dispatcher
    fallback = dispatcher.dispatch(object)

    events = (*SESSION_EVENTS, *AGENT_EVENTS)
    unapplied = [e.__name__ for e in events if dispatcher.dispatch(e) is fallback]

    assert ["SessionOpened"] == unapplied


def test_each_event_is_applied_by_one_part_only() -> None:
    """No two parts apply the same event type, and no part applies the opening event."""
    applied = [applied_type(a) for part in PARTS for a in part.APPLIERS]

    assert len(applied) == len(set(applied))
    # The agent events that change no state share one applier, registered for their base.
    covered = {e for e in AGENT_EVENTS if any(issubclass(e, a) for a in applied)}
    assert set(SESSION_EVENTS) - {SessionOpened} == set(applied) - covered - {AgentEvent}
    assert set(AGENT_EVENTS) == covered


def test_session_combines_every_part() -> None:
    """Session is built from all the parts, so every command is on the one aggregate."""
    assert all(issubclass(Session, part) for part in PARTS)


def test_an_unfavourable_verdict_names_its_denial() -> None:
    """Rejected and expired approvals deny with their own category; an approval denies nothing."""
    assert DenialCategory.APPROVAL_REJECTED == denial_for_verdict(ApprovalVerdict.REJECTED)
    assert DenialCategory.APPROVAL_EXPIRED == denial_for_verdict(ApprovalVerdict.EXPIRED)
    with pytest.raises(ValueError, match="denies nothing"):
        denial_for_verdict(ApprovalVerdict.APPROVED)
