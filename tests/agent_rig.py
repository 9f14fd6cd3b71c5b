"""A home set up for agent runs with the scripted provider, and a way to drive and watch them.

`agent_home` writes config.toml (a scripted model, optional fallbacks and limits, a trusted
root for the project directory) and the script; `AgentRig` runs the agent in-process,
records what the run showed, and can steer or abort it when a chosen record appears.
Every test that runs the agent checks `verified` at its end: the replay must be identical.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from adapters.api.agent_run import AgentSession, RunOutcome, RunView, agent_session
from adapters.api.agent_verify import SessionCheck, verify_session
from adapters.home import Home, resolve_home
from domain.agent import records
from domain.ids import SessionId
from domain.values.conversation import ToolCallRequest


def write_script(path: Path, steps: Sequence[dict[str, Any]]) -> Path:
    """A JSONL script, one step per line."""
    path.write_text("".join(json.dumps(step) + "\n" for step in steps), encoding="utf-8")
    return path


def reply(text: str = "", *calls: tuple[str, str, dict[str, Any]], **more: Any) -> dict[str, Any]:
    """A scripted reply step with calls given as (id, name, arguments)."""
    tool_calls = [{"id": i, "name": n, "arguments": a} for i, n, a in calls]
    return {"reply": {"text": text, "tool_calls": tool_calls, **more}}


def agent_home(
    root: Path,
    steps: Sequence[dict[str, Any]],
    *,
    extra_models: str = "",
    agent: str = "",
    window: int = 128_000,
    reserve: int = 4_096,
    profiles: str = '["default"]',
) -> Home:
    """A home at `root/home` whose agent plays `steps`; the project is `root/proj`."""
    home_dir, project = root / "home", root / "proj"
    home_dir.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    write_script(home_dir / "script.jsonl", steps)
    (home_dir / "config.toml").write_text(
        f"""[agent]
model = "demo"
{agent}

[models.demo]
provider = "scripted"
model = "demo"
script = "script.jsonl"
context_window = {window}
output_reserve = {reserve}
profiles = {profiles}

{extra_models}

[[tools.roots]]
path = "{project}"
operations = ["read", "write", "declare_project_scope"]
audiences = ["personal"]
""",
        encoding="utf-8",
    )
    return resolve_home({"LEDGERCLAW_HOME": str(home_dir)})


@dataclass
class AgentRig:
    """Runs the agent in `home` and keeps what the run showed."""

    home: Home
    seen: list[records.AgentRecord] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    triggers: list[
        tuple[Callable[[records.AgentRecord], bool], Callable[[AgentSession], object]]
    ] = field(default_factory=list)
    opened: AgentSession | None = None
    batches: list[tuple[tuple[str, ...], bool]] = field(default_factory=list)
    """Each batch launched: its call ids, and whether they ran together."""

    def when(
        self, matches: Callable[[records.AgentRecord], bool], act: Callable[[AgentSession], object]
    ) -> None:
        """Once a record matching `matches` is durable, do `act` (steer, abort) once."""
        self.triggers.append((matches, act))

    def view(self) -> RunView:
        """The view a run reports to."""

        def on_records(entries: Sequence[records.AgentRecord]) -> None:
            for entry in entries:
                self.seen.append(entry)
                for trigger in list(self.triggers):
                    if trigger[0](entry) and self.opened is not None:
                        self.triggers.remove(trigger)
                        trigger[1](self.opened)

        def on_calls(calls: Sequence[ToolCallRequest], together: bool) -> None:
            self.batches.append((tuple(c.call_id for c in calls), together))

        return RunView(on_text=self.text.append, on_records=on_records, on_calls=on_calls)

    def run(
        self,
        *prompts: str,
        session: str | None = None,
        model: str | None = None,
        approve: bool = False,
    ) -> list[RunOutcome]:
        """Run the agent once per prompt in one session (new unless named)."""
        with agent_session(
            self.home, session=session, model=model, approve=approve, view=self.view()
        ) as opened:
            self.opened = opened

            async def main() -> list[RunOutcome]:
                return [await opened.run(prompt) for prompt in prompts]

            try:
                return anyio.run(main)
            finally:
                self.opened = None

    def verified(self, session_id: SessionId) -> SessionCheck:
        """The replay of the session; a test asserts it is identical."""
        return verify_session(self.home, str(session_id))

    def of(self, kind: type[Any]) -> list[Any]:
        """The records of one kind the runs showed, in order."""
        return [r for r in self.seen if isinstance(r, kind)]


def steer(text: str, *, follow_up: bool = False) -> Callable[[AgentSession], object]:
    """An action that sends `text` to the run in progress."""

    def act(opened: AgentSession) -> object:
        assert opened.current is not None
        return opened.current.steer(text, follow_up=follow_up)

    return act


def abort(opened: AgentSession) -> object:
    """The action that aborts the run in progress."""
    assert opened.current is not None
    return opened.current.abort()
