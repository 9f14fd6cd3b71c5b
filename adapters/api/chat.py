"""The conversation loop of `ledgerclaw chat`: runs, steering and interrupts from a terminal.

The terminal (cli/chat_cmd.py) turns keystrokes and signals into events; this loop decides
what each means. A line typed while no run works starts one; a line typed while one works
is steering, taken at its next safe point; Ctrl-C aborts the running turn and keeps the
conversation, and a second Ctrl-C with nothing running (or within two seconds) leaves at
once. The end of input, or `/exit`, leaves once the run in progress has ended. Adapter
layer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from adapters.api.agent_run import AgentSession, RunOutcome

LEAVE_WINDOW = 2.0
"""Seconds within which a second Ctrl-C leaves even while a run works."""
LEAVE_WORDS = frozenset({"/exit", "/quit"})


@dataclass(frozen=True)
class Line:
    """A message the user finished typing (continuation lines already joined)."""

    text: str


@dataclass(frozen=True)
class Interrupt:
    """Ctrl-C."""


@dataclass(frozen=True)
class EndOfInput:
    """Ctrl-D, or the input stream closed."""


ChatEvent = Line | Interrupt | EndOfInput


@dataclass
class ChatNotices:
    """What the loop tells the person beside the run's own output."""

    say: Callable[[str], None]
    ready: Callable[[], None] = lambda: None
    """No run works: the terminal may show its prompt."""


@dataclass
class _Chat:
    opened: AgentSession
    notices: ChatNotices
    outcomes: list[RunOutcome]
    running: bool = False
    last_interrupt: float = -LEAVE_WINDOW
    waiting: list[str] = field(default_factory=list)
    """Messages that arrived as a run ended: each starts the next run, in order."""

    async def run_waiting(self) -> None:
        self.running = True
        try:
            while self.waiting:
                self.outcomes.append(await self.opened.run(self.waiting.pop(0)))
        finally:
            self.running = False
            self.notices.ready()

    def interrupt(self) -> bool:
        """Handle Ctrl-C; True when it means leave."""
        now = time.monotonic()
        again = now - self.last_interrupt < LEAVE_WINDOW
        self.last_interrupt = now
        if self.running and self.opened.current is not None and not again:
            self.opened.current.abort()
            self.notices.say("(aborting the turn; Ctrl-C again to leave)")
            return False
        if not self.running and not again:
            self.notices.say("(Ctrl-C again to leave, or type /exit)")
            return False
        return True

    def line(self, text: str, tasks: TaskGroup) -> bool:
        """Handle a typed message; True when it means leave (after the run in progress)."""
        if text.strip() in LEAVE_WORDS:
            return True
        if not text.strip():
            return False
        if self.running:
            current = self.opened.current
            if current is not None and current.steer(text):
                self.notices.say("(queued: the agent takes it at its next safe point)")
            else:
                self.waiting.append(text)  # the run is ending: this starts the next one
            return False
        self.waiting.append(text)
        self.running = True  # before the task starts, so the next line steers or waits
        tasks.start_soon(self.run_waiting)
        return False


async def chat_loop(
    opened: AgentSession, events: MemoryObjectReceiveStream[ChatEvent], notices: ChatNotices
) -> list[RunOutcome]:
    """Converse until the person leaves; every run's outcome, in order."""
    chat = _Chat(opened, notices, [])
    notices.ready()
    async with anyio.create_task_group() as tasks:
        async for event in events:
            if isinstance(event, EndOfInput):
                break
            if isinstance(event, Interrupt):
                if chat.interrupt():
                    if opened.current is not None:
                        opened.current.abort()
                    chat.waiting.clear()
                    break
            elif chat.line(event.text, tasks):
                break
        # Input ended: the run in progress, if any, finishes before the chat does.
    return chat.outcomes
