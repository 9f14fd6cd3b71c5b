"""`ledgerclaw chat` in a real terminal process: messages, steering, Ctrl-C and leaving."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from adapters.api.agent_verify import session_events
from adapters.home import Home
from domain.ids import SessionId
from domain.session.agent_events import MessageQueued
from domain.session.events import MessageAppended, RunEnded
from domain.values.runs import RunEndReason
from tests.agent_rig import AgentRig, agent_home, reply

WAIT = 30.0


@pytest.fixture
def chats() -> Iterator[Callable[[Home], Chat]]:
    """Start chats; each is stopped and its pipes closed when the test ends."""
    started: list[Chat] = []

    def start(home: Home) -> Chat:
        started.append(Chat(home))
        return started[-1]

    yield start
    for chat in started:
        chat.close()


class Chat:
    """A `ledgerclaw chat` child process whose output lines are read as they come."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli", "chat"],
            env={**os.environ, "LEDGERCLAW_HOME": str(home.root)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.pumps: list[threading.Thread] = []
        for stream in (self.process.stdout, self.process.stderr):
            assert stream is not None
            pump = threading.Thread(target=self._pump, args=(stream,), daemon=True)
            pump.start()
            self.pumps.append(pump)
        self.session = SessionId(self.wait_for("session ses_").split()[1])

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text: str) -> str:
        """The first output line (after those already matched) that holds `text`."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return line
        msg = f"chat never printed {text!r}; it printed {self.seen}"
        raise AssertionError(msg)

    def wait_for_log(self, text: str) -> None:
        """Until the session's log holds `text`."""
        log = self.home.root / "sessions" / str(self.session) / "logs" / "session.log"
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            if log.exists() and text in log.read_text():
                return
            time.sleep(0.05)
        msg = f"the session log never showed {text!r}"
        raise AssertionError(msg)

    def type(self, text: str) -> None:
        """Type a message and Enter."""
        assert self.process.stdin is not None
        self.process.stdin.write(text + "\n")
        self.process.stdin.flush()

    def close(self) -> None:
        """Stop the process if it still runs, and close its pipes."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=WAIT)
        for pump in self.pumps:
            pump.join(timeout=WAIT)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None and not stream.closed:
                stream.close()

    def close_input(self) -> int:
        """Ctrl-D; the exit code once the chat left."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=WAIT)


def test_a_conversation_continues_one_session_until_the_input_ends(
    tmp_path: Path, chats: Callable[[Home], Chat]
) -> None:
    """Two messages are two runs of one session; Ctrl-D leaves with exit code 0."""
    home = agent_home(tmp_path, [reply("Hello."), reply("Hello again.")])
    chat = chats(home)

    chat.type("hi")
    chat.wait_for("[run ended: natural]")
    chat.type("hi again")
    chat.wait_for("Hello again.")
    code = chat.close_input()

    assert 0 == code
    events = session_events(home, chat.session)
    ends = [e.reason for e in events if isinstance(e, RunEnded)]
    assert [RunEndReason.NATURAL, RunEndReason.NATURAL] == ends
    assert AgentRig(home).verified(chat.session).identical


def test_typing_while_a_run_works_queues_steering(
    tmp_path: Path, chats: Callable[[Home], Chat]
) -> None:
    """A message typed during the model request is queued and taken at the next safe point."""
    notes = tmp_path / "proj" / "notes.md"
    steps = [
        {"delay": 1.5},
        reply("", ("c1", "read_file", {"path": str(notes)})),
        reply("Only the first line, then."),
    ]
    chat = chats(agent_home(tmp_path, steps))

    chat.type("read my notes")
    chat.wait_for_log("asked: about")
    chat.type("just the first line")
    chat.wait_for("(queued")
    chat.wait_for("[run ended: natural]")
    chat.close_input()

    events = session_events(chat.home, chat.session)
    assert ["just the first line"] == [e.text for e in events if isinstance(e, MessageQueued)]
    assert AgentRig(chat.home).verified(chat.session).identical


def test_ctrl_c_aborts_the_turn_and_a_second_one_leaves(
    tmp_path: Path, chats: Callable[[Home], Chat]
) -> None:
    """The first SIGINT ends the running turn `abort`; the chat goes on; two more leave."""
    chat = chats(agent_home(tmp_path, [{"delay": 30}, reply("late"), reply("Still here.")]))

    chat.type("slow question")
    chat.wait_for_log("asked: about")
    chat.process.send_signal(signal.SIGINT)
    chat.wait_for("[run ended: abort")
    chat.type("are you there?")
    chat.wait_for("[run ended: natural]")
    chat.process.send_signal(signal.SIGINT)
    chat.process.send_signal(signal.SIGINT)
    code = chat.process.wait(timeout=WAIT)

    assert 0 == code
    assert AgentRig(chat.home).verified(chat.session).identical


def test_a_line_ending_with_a_backslash_continues_the_message(
    tmp_path: Path, chats: Callable[[Home], Chat]
) -> None:
    """Two typed lines joined by a trailing backslash are one user message."""
    chat = chats(agent_home(tmp_path, [reply("Got both lines.")]))

    chat.type("first line\\")
    chat.type("second line")
    chat.wait_for("[run ended: natural]")
    chat.close_input()

    events = session_events(chat.home, chat.session)
    users = [e.message.content for e in events if isinstance(e, MessageAppended)][:1]
    assert ["first line\nsecond line"] == users
