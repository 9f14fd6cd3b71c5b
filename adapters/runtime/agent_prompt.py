"""Gathering one turn's prompt: bootstrap files, the tools offered, the time; adapter layer.

The domain arranges and bounds (`domain/agent/prompt.py`); this module reads. Bootstrap
files come from the session's project directory when one is declared, else from the
session directory; the tools are the session's policy-visible core tools plus those it
loaded, exactly as its MCP face offers them, and the tools to load are its other
policy-visible tools (deferred ones it has not loaded), named so the model can ask for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

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

LOAD_TOOL = "load_tool"
"""The tool that puts a deferred tool in the session's requests."""
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


class Offer(NamedTuple):
    """What one session is offered: the request's tools, the parallel-safe ones, those to load."""

    tools: tuple[ToolSpec, ...]
    parallel_safe: frozenset[str]
    to_load: tuple[OfferedTool, ...]


OfferKey = tuple[Audience, frozenset[str], int]
"""An audience, a loaded set and the generation of the tool set they were read from."""


@dataclass(frozen=True)
class PromptReader:
    """Reads what one turn's system prompt is made of, for one run."""

    dispatcher: Dispatcher
    identity: str = IDENTITY
    _offers: dict[OfferKey, Offer] = field(default_factory=dict, compare=False)
    """What is offered per audience and loaded set, for the tool set's current generation."""

    def offered(
        self, audience: Audience, loaded: frozenset[str]
    ) -> tuple[tuple[ToolSpec, ...], frozenset[str]]:
        """The tools a session of `audience` with `loaded` is offered, and the parallel-safe."""
        offer = self.offer(audience, loaded)
        return offer.tools, offer.parallel_safe

    def offer(self, audience: Audience, loaded: frozenset[str]) -> Offer:
        """Everything a session of `audience` with `loaded` is offered, made once per pair.

        A change of the tool set (an upstream catalog) bumps its generation, and what was
        made from the set before is made again.
        """
        generation = self.dispatcher.tools.generation
        key = (audience, loaded, generation)
        found = self._offers.get(key)
        if found is None:
            for stale in [k for k in self._offers if k[2] != generation]:
                del self._offers[stale]
            found = self._offers[key] = self._made(audience, loaded)
        return found

    def _made(self, audience: Audience, loaded: frozenset[str]) -> Offer:
        views = self.dispatcher.views(audience, loaded)
        # One copy of the definitions: a catalog may change the set while a worker reads it,
        # and a tool the views do not know yet waits for the next generation.
        registry = [d for d in tuple(self.dispatcher.tools.registry) if d.name in views]
        chosen = [d for d in registry if views[d.name].in_request]
        tools = tuple(
            ToolSpec(name=d.name, description=d.description, parameters=d.parameters)
            for d in chosen
        )
        safe = frozenset(d.name for d in chosen if d.concurrency is Concurrency.PARALLEL_SAFE)
        to_load = tuple(
            OfferedTool(d.name, d.description)
            for d in registry
            if views[d.name].policy_visible and not views[d.name].in_request
        )
        # A session that cannot call load_tool is not told of tools it could never load.
        can_load = any(d.name == LOAD_TOOL for d in chosen)
        return Offer(tools, safe, to_load if can_load else ())

    def gather(
        self, run: RunScope, session: SessionFacts, now: datetime, at: float
    ) -> PromptGathered:
        """The prompt fact of the next turn, read now (blocking: call it off the event loop)."""
        tools, parallel, to_load = self.offer(session.audience, session.loaded_tools)
        context = session.working_context if run.kind is SessionKind.MAIN else run.working_context
        project = context.project_directory
        files = read_bootstrap(Path(project) if project else run.envelope.root)
        prefix = stable_prefix(
            self.identity,
            [OfferedTool(t.name, t.description) for t in tools],
            (),
            files,
            to_load=to_load,
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
