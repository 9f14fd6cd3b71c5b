"""`session replay --verify`: a session's agent runs replayed through the decider; adapter layer.

The session's events are read from the journal and decoded; each agent run's records, the
transcript before it and the prompt prefix in force are handed to the pure replay
(`domain/agent/replay.py`), which asks no model and runs no tool.
"""

from __future__ import annotations

from dataclasses import dataclass

from eventsourcing.persistence import StoredEvent

from adapters.home import Home
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from adapters.wiring.home import open_event_log, open_reader
from domain.agent import records
from domain.agent.replay import Journaled, PrefixState, Verdict, replay_run
from domain.base import DomainEvent
from domain.ids import RunId, SessionId
from domain.session.agent_events import AgentEvent, AgentRunConfigured, PromptPrefixSet
from domain.session.events import MessageAppended, RunEnded
from domain.values.conversation import ChatMessage


@dataclass(frozen=True)
class RunCheck:
    """One agent run of the session and what its replay found."""

    run_id: RunId
    verdict: Verdict


@dataclass(frozen=True)
class SessionCheck:
    """Every agent run of a session, replayed."""

    session_id: SessionId
    runs: tuple[RunCheck, ...]

    @property
    def identical(self) -> bool:
        """Whether every run replayed identically."""
        return all(run.verdict.identical for run in self.runs)


def verify_session(home: Home, session: str) -> SessionCheck:
    """Replay every agent run of the session `session` names and compare it with the journal."""
    session_id = open_reader(home).resolve_session(session)
    events = session_events(home, session_id)
    checks = [
        RunCheck(run_id, replay_run(run, transcript, prefix))
        for run_id, run, transcript, prefix in agent_runs(events)
    ]
    return SessionCheck(session_id, tuple(checks))


def session_events(home: Home, session_id: SessionId) -> list[DomainEvent]:
    """The session's events, decoded, in stream order."""
    mapper = CatalogMapper(transcoder=OrjsonTranscoder())
    return [
        mapper.to_domain_event(
            StoredEvent(
                originator_id=session_id.as_uuid(),
                originator_version=logged.version,
                topic=logged.topic,
                state=logged.state,
            )
        )
        for logged in open_event_log(home).stream(session_id.hex)
    ]


def agent_runs(
    events: list[DomainEvent],
) -> list[tuple[RunId, list[Journaled], list[ChatMessage], PrefixState]]:
    """Each agent run: its records, and the transcript and prefix in force when it began."""
    found: list[tuple[RunId, list[Journaled], list[ChatMessage], PrefixState]] = []
    transcript: list[ChatMessage] = []
    prefix = PrefixState()
    open_runs: dict[RunId, list[Journaled]] = {}
    for event in events:
        run_id = getattr(event, "run_id", None)
        if isinstance(event, AgentRunConfigured):
            open_runs[event.run_id] = []
            found.append((event.run_id, open_runs[event.run_id], list(transcript), prefix))
        record = _record_of(event)
        if run_id in open_runs and record is not None:
            open_runs[run_id].append(Journaled(event.originator_version, record))
        if isinstance(event, MessageAppended):
            transcript.append(event.message)
        if isinstance(event, PromptPrefixSet):
            prefix = PrefixState(event.prefix, event.tools, event.parallel_safe, event.digest)
        if isinstance(event, RunEnded):
            open_runs.pop(event.run_id, None)
    return found


def _record_of(event: DomainEvent) -> records.AgentRecord | None:
    if isinstance(event, AgentEvent):
        return event.record()
    if isinstance(event, MessageAppended):
        return records.Appended(message=event.message)
    if isinstance(event, RunEnded):
        return records.RunClosed(reason=event.reason, detail=event.detail)
    return None
