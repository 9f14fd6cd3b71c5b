"""Gathering one turn's prompt: bootstrap files, the tools offered, the time; adapter layer.

The domain arranges and bounds (`domain/agent/prompt.py`); this module reads. Bootstrap
files come from the session's project directory when one is declared, else from the
session directory; the tools are the session's policy-visible core tools plus those it
loaded, exactly as its MCP face offers them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from adapters.pipeline.context import RunScope
from adapters.pipeline.dispatcher import Dispatcher
from domain.agent.prompt import (
    BOOTSTRAP_FILES,
    OfferedTool,
    TurnFacts,
    stable_prefix,
    volatile_suffix,
)
from domain.agent.replies import ToolSpec
from domain.agent.steps import PromptGathered
from domain.session.aggregate import Session
from domain.tools.definition import Concurrency
from domain.values.audience import Audience, SessionKind
from domain.values.storage import WorkingContext

IDENTITY = """You are the ledgerclaw agent: you help the user by answering and by calling the
tools listed below. Every tool call passes an authorization pipeline and is journaled; a
call may be denied, corrected or need the user's approval, and its result says so. Paths
are resolved against the project directory when one is declared, else the session
directory. Answer plainly, and say when you are unsure."""

READ_LIMIT = 1_048_576
"""Bytes of one bootstrap file read at most; the prompt keeps far fewer characters."""


@dataclass(frozen=True)
class SessionFacts:
    """What a turn's prompt takes from the session: who it serves and where it works."""

    audience: Audience
    loaded_tools: frozenset[str]
    working_context: WorkingContext


def session_facts(session: Session) -> SessionFacts:
    """The prompt's facts of `session` (a view: it changes nothing)."""
    return SessionFacts(session.audience, session.loaded_tools, session.working_context)


@dataclass(frozen=True)
class PromptReader:
    """Reads what one turn's system prompt is made of, for one run."""

    dispatcher: Dispatcher
    identity: str = IDENTITY
    _offered: dict[tuple[Audience, frozenset[str]], tuple[tuple[ToolSpec, ...], frozenset[str]]] = (
        field(default_factory=dict, compare=False)
    )
    """The tools offered and the parallel-safe ones, per audience and loaded set."""

    def offered(
        self, audience: Audience, loaded: frozenset[str]
    ) -> tuple[tuple[ToolSpec, ...], frozenset[str]]:
        """The tools a session of `audience` with `loaded` is offered, made once per pair."""
        found = self._offered.get((audience, loaded))
        if found is None:
            views = self.dispatcher.views(audience, loaded)
            registry = self.dispatcher.tools.registry
            chosen = [d for d in registry if views[d.name].in_request]
            tools = tuple(
                ToolSpec(name=d.name, description=d.description, parameters=d.parameters)
                for d in chosen
            )
            safe = frozenset(d.name for d in chosen if d.concurrency is Concurrency.PARALLEL_SAFE)
            found = self._offered[(audience, loaded)] = (tools, safe)
        return found

    def gather(
        self, run: RunScope, session: SessionFacts, now: datetime, at: float
    ) -> PromptGathered:
        """The prompt fact of the next turn, read now (blocking: call it off the event loop)."""
        tools, parallel = self.offered(session.audience, session.loaded_tools)
        context = session.working_context if run.kind is SessionKind.MAIN else run.working_context
        project = context.project_directory
        files = read_bootstrap(Path(project) if project else run.envelope.root)
        prefix = stable_prefix(
            self.identity, [OfferedTool(t.name, t.description) for t in tools], (), files
        )
        facts = TurnFacts(
            now=now.astimezone().strftime("%Y-%m-%d %H:%M %Z (%z)"),
            project_directory=project,
            areas={
                "directory": str(run.envelope.workspace),
                "artifacts": str(run.envelope.artifacts),
                "tmp": str(run.tmp_dir),
                "spills": str(run.envelope.spills),
            },
            recent_files=context.recent_files[:10],
        )
        return PromptGathered(
            prefix=prefix,
            suffix=volatile_suffix(facts),
            tools=tools,
            parallel_safe=parallel,
            at=at,
        )


def read_bootstrap(directory: Path) -> dict[str, str]:
    """The bootstrap files present in `directory`, each read up to READ_LIMIT bytes.

    A file that cannot be read (a directory, no permission, not UTF-8) is left out rather
    than stopping the turn; a longer file is cut here and again, with a notice, in the prompt.
    """
    found: dict[str, str] = {}
    for name in BOOTSTRAP_FILES:
        path = directory / name
        try:
            with path.open("rb") as handle:
                data = handle.read(READ_LIMIT)
        except OSError:
            continue
        found[name] = data.decode("utf-8", errors="replace")
    return found
