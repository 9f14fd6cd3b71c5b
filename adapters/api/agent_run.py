"""One agent run in-process on the embedded journal, for `ledgerclaw run` and `chat`; adapter layer.

Everything is built before the journal is touched, so a bad configuration, an unknown
model or an unreadable script stops the run with nothing written. The session is claimed
for the run like a native call's, and the run always ends with a named reason: Ctrl-C
(SIGINT) aborts it, and an unexpected error ends it `crashed`.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from adapters.clock import SystemClock
from adapters.config.failover import loop_settings
from adapters.home import Home
from adapters.hosting.claims import SessionClaims
from adapters.pipeline.context import RunScope
from adapters.pipeline.dispatcher import Dispatcher
from adapters.runtime.agent_driver import AgentDriver, AgentHooks
from adapters.runtime.recovery import settle
from adapters.runtime.runs import begin_run, end_run_if_live
from adapters.runtime.session_log import SessionLog
from adapters.wiring.home import home_config, open_journal, open_reader
from adapters.wiring.providers import ProviderSet
from adapters.wiring.tools import command_line_approver, first_party_tools, pipeline_policy
from adapters.wiring.tools import dispatcher as build_dispatcher
from domain.agent import records
from domain.agent.decider import LoopSettings
from domain.agent.failover import Candidate
from domain.agent.steps import RunCalls
from domain.ids import SessionId
from domain.ports import Journal
from domain.session.agent import EVENT_OF
from domain.session.events import MessageAppended, RunEnded
from domain.values.audience import SessionKind
from domain.values.conversation import MessageRole, ToolCallRequest
from domain.values.runs import RunEndReason

EXIT_CODES = {
    RunEndReason.NATURAL: 0,
    RunEndReason.PROVIDER_ERROR: 10,
    RunEndReason.TOOL_LOOP_TERMINATED: 11,
    RunEndReason.STRATEGY_STOP: 12,
    RunEndReason.CONTEXT_EXHAUSTED: 13,
    RunEndReason.CRASHED: 14,
    RunEndReason.ABORT: 130,
}
"""The exit code of `ledgerclaw run` for each way a run ends (documented in docs/agent.md)."""


@dataclass
class RunView:
    """What a front end is told while a run goes (plain callables: no runtime types)."""

    on_text: Callable[[str], None] = lambda _text: None
    on_records: Callable[[Sequence[records.AgentRecord]], None] = lambda _records: None
    on_calls: Callable[[Sequence[ToolCallRequest], bool], None] = lambda _calls, _together: None
    """A batch is about to launch: its calls in the model's order, and whether together."""


@dataclass(frozen=True)
class RunOutcome:
    """How a run ended, where, and the model's last answer."""

    session_id: SessionId
    run_id: str
    reason: RunEndReason
    detail: str
    answer: str

    @property
    def exit_code(self) -> int:
        """The documented exit code of this end."""
        return EXIT_CODES.get(self.reason, 1)


@dataclass
class _Answer:
    text: str = ""

    def take(self, entries: Sequence[records.AgentRecord]) -> None:
        for entry in entries:
            if isinstance(entry, records.Appended) and entry.message.role is MessageRole.ASSISTANT:
                self.text = entry.message.content


def record_event_name(entry: records.AgentRecord) -> str:
    """The journal's short event name a record is stored under."""
    if isinstance(entry, records.Appended):
        return MessageAppended.short_name()
    if isinstance(entry, records.RunClosed):
        return RunEnded.short_name()
    return EVENT_OF[type(entry)].short_name()


def record_json(entry: records.AgentRecord) -> dict[str, Any]:
    """A record as the JSON object `run --json` prints: its event name and its fields."""
    return {"event": record_event_name(entry), **entry.model_dump(mode="json")}


@dataclass
class AgentSession:
    """One session opened for agent runs in this process: its parts, its claim, its runs."""

    home: Home
    journal: Journal
    session_id: SessionId
    new: bool
    settings: LoopSettings
    providers: ProviderSet
    dispatcher: Dispatcher
    secrets: frozenset[str]
    view: RunView
    current: AgentDriver | None = None
    """The driver of the run in progress, if one is: what steering and an abort reach."""

    async def run(self, prompt: str) -> RunOutcome:
        """One run on `prompt`; a later run continues the same session's transcript."""
        scope = begin_run(self.journal, self.home.root, self.session_id, new=self.new)
        self.new = False
        answer = _Answer()
        view = self.view

        def on_records(entries: Sequence[records.AgentRecord]) -> None:
            answer.take(entries)
            view.on_records(entries)

        def on_call(step: RunCalls) -> None:
            view.on_calls(step.calls, step.parallel)

        self.current = AgentDriver(
            journal=self.journal,
            dispatcher=self.dispatcher,
            scope=scope,
            settings=self.settings,
            providers=self.providers,
            clock=SystemClock(),
            hooks=AgentHooks(on_text=view.on_text, on_records=on_records, on_call=on_call),
            log=SessionLog(run_log(scope), self.secrets),
        )
        try:
            finished = await self.current.run(prompt)
        except BaseException:
            # Synchronous: no cancellation reaches it.
            end_run_if_live(self.journal, scope, RunEndReason.CRASHED)
            raise
        finally:
            self.current = None
            with anyio.CancelScope(shield=True):
                await self.providers.aclose()
        return RunOutcome(
            session_id=scope.session_id,
            run_id=str(scope.run_id),
            reason=finished.reason,
            detail=finished.detail,
            answer=answer.text,
        )

    async def run_until_sigint(self, prompt: str) -> RunOutcome:
        """As `run`, with Ctrl-C (SIGINT) aborting the run instead of stopping the process."""
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._abort_on_sigint)
            try:
                outcome = await self.run(prompt)
            finally:
                tasks.cancel_scope.cancel()
        return outcome

    async def _abort_on_sigint(self) -> None:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _signal in signals:
                if self.current is not None:
                    self.current.abort()


@contextmanager
def agent_session(
    home: Home,
    *,
    session: str | None = None,
    model: str | None = None,
    approve: bool = False,
    view: RunView | None = None,
) -> Iterator[AgentSession]:
    """Build every part, then open (or create) the session and claim it for this process.

    Everything that can be refused (config, model, scripts, the session's name) is checked
    before the journal is opened, so a refusal writes nothing.
    """
    config = home_config(home)
    tools, policy = first_party_tools(config, home), pipeline_policy(home, config)
    settings = loop_settings(config, model)
    providers = ProviderSet(config, home)
    for choice in settings.chain:  # a scripted model's script is read and checked first
        providers(Candidate(choice.provider, choice.model, choice.profiles[0]))
    session_id = None if session is None else open_reader(home).resolve_session(session)
    journal = open_journal(home)
    new = session_id is None
    session_id = session_id or SessionId.new()
    claim = None
    try:
        claim = SessionClaims(home).claim(session_id)
        if not new:
            _recover(journal, session_id)
        dispatcher = build_dispatcher(
            journal, tools, policy, command_line_approver(approve=approve)
        )
        yield AgentSession(
            home=home,
            journal=journal,
            session_id=session_id,
            new=new,
            settings=settings,
            providers=providers,
            dispatcher=dispatcher,
            secrets=policy.secrets,
            view=view or RunView(),
        )
    finally:
        if claim is not None:
            claim.release()
        journal.close()


def run_agent(  # noqa: PLR0913 - the command line's options, passed through
    home: Home,
    prompt: str,
    *,
    session: str | None = None,
    model: str | None = None,
    approve: bool = False,
    view: RunView | None = None,
) -> RunOutcome:
    """Run the agent once on `prompt` in a new session or the one named; how it ended."""
    with agent_session(home, session=session, model=model, approve=approve, view=view) as opened:
        return anyio.run(opened.run_until_sigint, prompt)


def run_log(scope: RunScope) -> Path:
    """The raw log a run writes: the session's, or a subagent run's own."""
    if scope.kind is SessionKind.SUBAGENT:
        return scope.envelope.run_root(scope.run_id) / "logs" / "session.log"
    return scope.envelope.log


def _recover(journal: Journal, session_id: SessionId) -> None:
    """End as crashed the runs a process that died left live: this process holds the claim."""
    session = journal.session(session_id)
    if any(run.ended is None for run in session.runs.values()):
        journal.update_session(session_id, settle)
