"""`session replay --verify`: a session's agent runs replayed through the decider; adapter layer.

The session's events are read from the journal and decoded; each agent run's records, the
transcript before it and the prompt prefix in force are handed to the pure replay
(`domain/agent/replay.py`), which asks no model and runs no tool.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.home import Home
from adapters.journal.events import decoded_stream
from adapters.wiring.home import open_event_log, open_reader
from domain.agent.replay import Journaled, PrefixState, Verdict, replay_run
from domain.base import DomainEvent
from domain.ids import RunId, SessionId
from domain.session.agent_events import AgentRunConfigured, PromptPrefixSet, agent_record
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
    return decoded_stream(open_event_log(home), session_id)


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
        record = agent_record(event)
        if run_id in open_runs and record is not None:
            open_runs[run_id].append(Journaled(event.originator_version, record))
        if isinstance(event, MessageAppended):
            transcript.append(event.message)
        if isinstance(event, PromptPrefixSet):
            prefix = PrefixState(event.prefix, event.tools, event.parallel_safe, event.digest)
        if isinstance(event, RunEnded):
            open_runs.pop(event.run_id, None)
    return found
