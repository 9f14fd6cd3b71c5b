"""A real tool pipeline on a real SQLite journal in a temporary home, for tests."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.home import Home, ensure_home
from adapters.journal.journal import SqliteJournal
from adapters.pipeline.context import PipelinePolicy, RunScope
from adapters.pipeline.dispatcher import Dispatcher
from adapters.pipeline.toolset import ToolSet
from adapters.runtime.approvers import StandingApprover
from adapters.runtime.runs import begin_run, end_run
from adapters.settings.config_file import Config
from adapters.settings.journal import JournalSettings
from adapters.settings.tools import RootSetting, ToolSettings
from adapters.tools.contract import Tool
from adapters.wiring.tools import dispatcher as build_dispatcher
from adapters.wiring.tools import first_party_tools, pipeline_policy
from domain.ids import SessionId
from domain.ports import Approver
from domain.session.opening import SessionOpening
from domain.tools.result import ToolResult
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import ApprovalVerdict, FileOperation
from domain.values.conversation import ToolCallRequest
from tests.builders import tool_call

ALL = tuple(FileOperation)


@dataclass
class Pipeline:
    """A home, its journal, a dispatcher over the first-party tools (plus extras), one run."""

    home: Home
    journal: SqliteJournal
    dispatcher: Dispatcher
    run: RunScope
    calls: int = field(default=0)

    @property
    def workspace(self) -> Path:
        """The run's session directory (the relative base without a project)."""
        return self.run.envelope.workspace

    def request(self, tool: str, /, **arguments: Any) -> ToolCallRequest:
        """A call request with a fresh call id."""
        self.calls += 1
        return tool_call(self.calls, tool, arguments)

    async def call(self, tool: str, /, **arguments: Any) -> ToolResult:
        """Dispatch one call on the pipeline's run."""
        return await self.dispatcher.call(self.run, self.request(tool, **arguments))

    def events(self) -> list[Any]:
        """Every event of the run's session, in order."""
        return list(self.journal.app.events.get(self.run.session_id.as_uuid()))

    def event_names(self) -> list[str]:
        """The short names of the session's events, in order."""
        return [type(e).short_name() for e in self.events()]

    def new_run(self) -> RunScope:
        """End the current run and start another in the same session."""
        end_run(self.journal, self.run)
        self.run = begin_run(self.journal, self.home.root, self.run.session_id)
        return self.run

    def close(self) -> None:
        """Close the journal."""
        self.journal.close()


def make_pipeline(
    root: Path,
    *,
    roots: Sequence[tuple[Path, Sequence[FileOperation]]] = (),
    approver: Approver | None = None,
    extra_tools: Iterable[Tool] = (),
    audience: Audience = Audience.PERSONAL,
    session_id: SessionId | None = None,
    settings: ToolSettings | None = None,
    journal_settings: JournalSettings | None = None,
    **policy_changes: Any,
) -> Pipeline:
    """Build a pipeline with its home at `root / "home"`."""
    home = ensure_home(Home(root / "home"))
    tool_settings = settings or ToolSettings(
        roots=tuple(
            RootSetting(path=str(path), operations=tuple(ops), audiences=tuple(Audience))
            for path, ops in roots
        )
    )
    config = Config(tools=tool_settings)
    journal = SqliteJournal(home.database, journal_settings)
    tools: ToolSet = first_party_tools(config, home)
    for tool in extra_tools:
        tools.add(tool)
    policy: PipelinePolicy = pipeline_policy(home, config)
    if policy_changes:
        policy = PipelinePolicy(**{**policy.__dict__, **policy_changes})
    if session_id is None:
        session_id = SessionId.new()
        journal.open_session(SessionOpening(session_id, "test", SessionKind.MAIN, audience))
    run = begin_run(journal, home.root, session_id)
    dispatcher = build_dispatcher(journal, tools, policy, approver)
    return Pipeline(home=home, journal=journal, dispatcher=dispatcher, run=run)


def approving(verdict: ApprovalVerdict = ApprovalVerdict.APPROVED) -> StandingApprover:
    """An approver that gives the same answer to every request and remembers them."""
    return StandingApprover(verdict, "test operator")
