"""The terminal chat attached to a real daemon, driven headless through Textual's pilot."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, Input, OptionList

from adapters.control.chat_link import Backoff, LinkNotice, Pushed
from adapters.control.client import ControlError
from adapters.control.home_gateway import HomeGateway
from adapters.home import Home
from cli.chat_cmd import attachable
from cli.chat_tui import lines
from cli.chat_tui.app import ChatApp
from cli.chat_tui.conversation import Conversation
from cli.chat_tui.entries import Notice, Streaming
from cli.chat_tui.lines import render
from cli.chat_tui.widgets import ApprovalBox, EntryLine, ToolLine
from tests.chat_rig import WAIT as CHAT_WAIT
from tests.chat_rig import (
    answer_step,
    attach_step,
    chat_home,
    home_gateway,
    read_step,
    until,
    write_step,
)
from tests.daemon_harness import RunningDaemon, start_daemon

pytestmark = pytest.mark.anyio
FAST = Backoff(first=0.1, factor=2, most=0.5)
"""Reconnect attempts close together, so a restarted daemon is found soon after it is up."""


@dataclass
class Attached:
    """A chat app running headless, attached to a daemon's session."""

    app: ChatApp
    pilot: Pilot[Any]
    pushed: list[Pushed]

    def shown(self) -> list[str]:
        """What the conversation's widgets show, top to bottom."""
        children = self.app.query_one("#log").children
        return [c.plain for c in children if isinstance(c, EntryLine | ToolLine | ApprovalBox)]

    def conversation(self) -> Conversation:
        """The app's conversation, once attached."""
        assert self.app.conversation is not None
        return self.app.conversation

    async def until(self, check: Callable[[], bool], what: str) -> None:
        """Let the app work until `check` holds."""
        await until(check, what, self.pilot.pause)

    async def until_shown(self, text: str) -> None:
        """Let the app work until a widget shows `text`."""
        await self.until(lambda: any(text in line for line in self.shown()), repr(text))

    async def type(self, text: str) -> None:
        """Type `text` into the input and press Enter."""
        self.app.query_one("#prompt", Input).value = text
        self.app.query_one("#prompt", Input).focus()
        await self.pilot.press("enter")

    async def connected(self) -> None:
        """Wait until the link is up."""
        await self.until(
            lambda: self.app.conversation is not None and self.app.conversation.link == "connected",
            "the link",
        )

    async def choose(self, choice: str) -> None:
        """Press the button of `choice` on the approval prompt shown."""
        await self.until(lambda: bool(self.app.query(ApprovalBox)), "an approval prompt")
        button = self.app.query_one(ApprovalBox).query_one(f"#choice-{choice}", Button)
        self.app.set_focus(button)
        await self.pilot.press("enter")


@asynccontextmanager
async def attached(daemon: RunningDaemon, session: str | None) -> AsyncIterator[Attached]:
    """The chat app on `session` (None: the picker), with every push it gets recorded."""
    app = ChatApp(home_gateway(daemon).open, session, backoff=FAST)
    pushed: list[Pushed] = []
    deliver = app._deliver

    async def recording(notices: Sequence[LinkNotice]) -> None:
        pushed.extend(n for n in notices if isinstance(n, Pushed))
        await deliver(notices)

    app._deliver = recording  # type: ignore[method-assign] # a spy on what the real link delivers
    async with app.run_test(size=(120, 50)) as pilot:
        yield Attached(app, pilot, pushed)


def new_session(daemon: RunningDaemon) -> str:
    """A new agent session of the daemon."""
    with home_gateway(daemon).connection() as gateway:
        return str(gateway.call("sessions.create")["session_id"])


def history(daemon: RunningDaemon, session: str) -> list[dict[str, Any]]:
    """The session's journaled events, as chat.history gives them."""
    with home_gateway(daemon).connection() as gateway:
        rows: list[dict[str, Any]] = gateway.call(
            "chat.history", {"session": session, "limit": 500}
        )["events"]
    return rows


def ended_twice(daemon: RunningDaemon, session: str) -> list[dict[str, Any]]:
    """The session's history once two of its runs have ended."""
    deadline = time.monotonic() + CHAT_WAIT
    while time.monotonic() < deadline:
        rows = history(daemon, session)
        if sum(r["event"] == "session.run_ended" for r in rows) >= 2:
            return rows
        time.sleep(0.05)
    msg = f"two runs of {session} did not end within {CHAT_WAIT} s"
    raise AssertionError(msg)


@pytest.fixture
def reading(tmp_path: Path, work: Path) -> Iterator[RunningDaemon]:
    """A daemon whose agent says it will look, reads notes.md, then answers."""
    (work / "notes.md").write_text("the notes say hi")
    steps = [read_step(work / "notes.md", "Let me look."), answer_step("They say hi.")]
    daemon = start_daemon(chat_home(tmp_path, work, steps))
    yield daemon
    daemon.stop(signal.SIGKILL)


@pytest.fixture
def writing(tmp_path: Path, work: Path) -> Iterator[RunningDaemon]:
    """A daemon whose agent writes out.md (which needs approval), then answers."""
    steps = [write_step(work / "out.md", "hello"), answer_step("Wrote it.")]
    daemon = start_daemon(chat_home(tmp_path, work, steps))
    yield daemon
    daemon.stop(signal.SIGKILL)


@pytest.fixture
def slow(tmp_path: Path, work: Path) -> Iterator[RunningDaemon]:
    """A daemon whose agent takes 30 s over its first answer."""
    daemon = start_daemon(chat_home(tmp_path, work, [{"delay": 30}, answer_step("late")]))
    yield daemon
    daemon.stop(signal.SIGKILL)


async def test_a_message_streams_its_answer_with_a_line_per_tool_call(
    reading: RunningDaemon,
) -> None:
    """The answer streams in pieces, the journaled messages replace them, the read is one line."""
    session = new_session(reading)
    async with attached(reading, session) as chat:
        await chat.connected()
        await chat.type("what do my notes say?")
        await chat.until_shown("They say hi.")
        shown = chat.shown()
        pieces = [p.payload["text"] for p in chat.pushed if p.event == "chat.delta"]
        streams = [e for e in chat.conversation().entries if isinstance(e, Streaming)]

    arguments = f'{{"path":"{reading.home.parent / "work" / "notes.md"}"}}'
    read = f"▸ read_file {lines.cut(arguments, lines.ARGUMENTS_WIDTH)}  success"
    assert ["you> what do my notes say?", "Let me look.", read, "They say hi."] == shown
    assert "Let me look.They say hi." == "".join(pieces)
    assert [] == streams


async def test_a_tool_line_expands_to_its_arguments_and_result(reading: RunningDaemon) -> None:
    """Enter on a tool line shows its arguments and result; a click folds it again."""
    async with attached(reading, new_session(reading)) as chat:
        await chat.connected()
        await chat.type("read my notes")
        await chat.until_shown("They say hi.")
        line = chat.app.query_one(ToolLine)
        line.focus()
        await chat.pilot.press("enter")
        await chat.until(lambda: line.plain.startswith("▾"), "the line to expand")
        expanded = line.plain
        await chat.pilot.click(ToolLine)
        await chat.until(lambda: line.plain.startswith("▸"), "the line to fold")

    assert '"path": ' in expanded
    assert "the notes say hi" in expanded


async def test_an_approval_is_answered_from_its_prompt(writing: RunningDaemon, work: Path) -> None:
    """The prompt offers this directory (the targets' parent); choosing it lets the write run."""
    session = new_session(writing)
    async with attached(writing, session) as chat:
        await chat.connected()
        await chat.type("write it")
        await chat.until_shown("? approve write_file")
        asked = chat.shown()[-1]
        await chat.choose("directory")
        await chat.until_shown("Wrote it.")
        [line] = [text for text in chat.shown() if "write_file" in text]
        boxes = chat.app.query(ApprovalBox)

    assert f"this directory: {work}" in asked
    assert "success" in line
    assert "approved (directory)" in line
    assert not boxes
    assert "hello" == (work / "out.md").read_text()
    [decided] = [r for r in history(writing, session) if r["event"] == "session.approval_decided"]
    assert ("directory", str(work)) == (decided["fields"]["scope"], decided["fields"]["directory"])


async def test_a_prompt_answered_elsewhere_disappears(writing: RunningDaemon) -> None:
    """Denied from another client first, the prompt goes and the call's line says so."""
    async with attached(writing, new_session(writing)) as chat:
        await chat.connected()
        await chat.type("write it")
        await chat.until(lambda: bool(chat.app.query(ApprovalBox)), "an approval prompt")
        [prompt] = [e for e in chat.conversation().entries if e.key.startswith("approval:")]

        def deny() -> None:
            with home_gateway(writing).connection() as other:
                approval_id = prompt.key.removeprefix("approval:")
                other.call("approvals.decide", {"id": approval_id, "verdict": "rejected"})

        await asyncio.to_thread(deny)
        await chat.until(lambda: not chat.app.query(ApprovalBox), "the prompt to go")
        await chat.until_shown("denied")
        [line] = [text for text in chat.shown() if "write_file" in text]

    assert "denied" in line


async def test_typing_during_a_run_steers_it(writing: RunningDaemon) -> None:
    """A message typed while the run waits is queued for it and joins the same run."""
    session = new_session(writing)
    async with attached(writing, session) as chat:
        await chat.connected()
        await chat.type("write it")
        await chat.until(lambda: bool(chat.app.query(ApprovalBox)), "an approval prompt")
        await chat.type("and then stop")
        await chat.until_shown("(queued for the run)")
        await chat.choose("once")
        await chat.until_shown("Wrote it.")
        users = [text for text in chat.shown() if text.startswith("you> ")]

    assert ["you> write it", "you> and then stop"] == users
    rows = history(writing, session)
    queued = [r["fields"] for r in rows if r["event"] == "session.message_queued"]
    assert [("steering", "and then stop")] == [(q["kind"], q["text"]) for q in queued]
    assert 1 == sum(r["event"] == "session.run_started" for r in rows)


async def test_escape_aborts_the_running_turn(slow: RunningDaemon) -> None:
    """Escape during a run sends chat.abort; the run ends `abort` and the chat says so."""
    async with attached(slow, new_session(slow)) as chat:
        await chat.connected()
        await chat.type("take your time")
        await chat.until(lambda: chat.conversation().running is not None, "the run")
        await chat.pilot.press("escape")
        await chat.until_shown("run ended: abort")
        shown = chat.shown()
        running = chat.conversation().running

    assert "aborting the turn" in shown
    assert "run ended: abort: the user aborted the run" in shown
    assert running is None


async def test_a_file_the_agent_attaches_is_one_line(tmp_path: Path, work: Path) -> None:
    """attach_file journals attachment_sent: the chat shows its name, type, size and digest."""
    (work / "notes.md").write_text("the notes say hi")
    steps = [attach_step(work / "notes.md"), answer_step("Attached.")]
    daemon = start_daemon(chat_home(tmp_path, work, steps, attach=True))
    try:
        async with attached(daemon, new_session(daemon)) as chat:
            await chat.connected()
            await chat.type("send me my notes")
            await chat.until_shown("Attached.")
            shown = chat.shown()
    finally:
        daemon.stop(signal.SIGKILL)

    assert "📎 notes.md (text/plain, 16 B) sha256:9dbe521cfd06" in shown


async def test_the_picker_attaches_to_a_listed_session(reading: RunningDaemon) -> None:
    """Without --session, the picker lists the daemon's sessions under "a new session"."""
    session = new_session(reading)
    async with attached(reading, None) as chat:
        listing = chat.app.screen.query_one(OptionList)
        await chat.until(lambda: listing.option_count == 2, "the sessions listed")
        listing.focus()
        listing.highlighted = 1
        await chat.pilot.press("enter")
        await chat.connected()

    assert session == chat.conversation().session


async def test_the_picker_creates_a_new_session(reading: RunningDaemon) -> None:
    """Choosing "a new session" creates one and attaches to it."""
    existing = new_session(reading)
    async with attached(reading, None) as chat:
        listing = chat.app.screen.query_one(OptionList)
        await chat.until(lambda: listing.option_count == 2, "the sessions listed")
        listing.focus()
        listing.highlighted = 0
        await chat.pilot.press("enter")
        await chat.connected()
        created = chat.conversation().session

    with home_gateway(reading).connection() as gateway:
        hosted = {row["session_id"] for row in gateway.call("sessions.list")["sessions"]}
    assert created != existing
    assert {existing, created} == hosted


async def test_a_restarted_daemon_is_rejoined_and_nothing_is_shown_twice(
    tmp_path: Path, work: Path
) -> None:
    """Stop the daemon, type while it is down, start it again: the chat resumes where it was.

    The message typed while the daemon was down is sent once it is back, under the client run
    id it was given; what the chat shows then equals a replay of the session's whole history.
    """
    home = chat_home(tmp_path, work, [answer_step("Hi.")])  # each daemon plays it from the top
    daemon = start_daemon(home)
    session = new_session(daemon)
    try:
        async with attached(daemon, session) as chat:
            await chat.connected()
            await chat.type("one")
            await chat.until_shown("Hi.")
            await asyncio.to_thread(daemon.stop)
            await chat.until(lambda: chat.conversation().link.startswith("reconnecting"), "loss")
            status = lines.status_line(chat.conversation())
            await chat.type("two")
            await chat.until_shown("(waiting for the daemon)")
            daemon = await asyncio.to_thread(start_daemon, home, daemon.port)
            await chat.until(lambda: chat.shown().count("Hi.") == 2, "the second answer")
            # The answer may show first as its streamed preview: wait for the journal's end.
            rows = await asyncio.to_thread(ended_twice, daemon, session)
            last = rows[-1]["position"]
            await chat.until(lambda: chat.conversation().position == last, "the journal's end")
            conversation = chat.conversation()
            shown = [render(e).plain for e in conversation.entries if not isinstance(e, Notice)]
            notices = [e.text for e in conversation.entries if isinstance(e, Notice)]
            position = conversation.position
    finally:
        daemon.stop(signal.SIGKILL)

    assert "reconnecting (attempt" in status
    assert ["you> one", "Hi.", "you> two", "Hi."] == shown
    assert ["reconnected; resumed after what was shown"] == notices
    replay = Conversation(session)
    for row in rows:
        replay.apply_row(row)
    assert [render(e).plain for e in replay.entries] == shown
    assert rows[-1]["position"] == position
    client_runs = [
        r["fields"]["client_run_id"] for r in rows if r["event"] == "session.run_started"
    ]
    assert 2 == len(set(client_runs))


async def test_a_session_the_daemon_cannot_subscribe_ends_the_chat_with_its_refusal(
    reading: RunningDaemon,
) -> None:
    """An unknown session is no reason to retry: the app ends, saying what the daemon said."""
    app = ChatApp(home_gateway(reading).open, "ses_" + "0" * 32, backoff=FAST)
    async with app.run_test() as pilot:
        await until(lambda: app.return_value is not None, "the app to end", pilot.pause)

    assert app.return_value is not None
    assert "(unknown_session)" in str(app.return_value.problem)


def test_the_chat_attaches_only_with_a_terminal_a_daemon_hosting_agents_and_no_local(
    reading: RunningDaemon, tmp_path: Path
) -> None:
    """`attachable` finds the gateway; --local, no terminal or no daemon mean in-process."""
    home = Home(reading.home)
    lonely = tmp_path / "lonely"
    lonely.mkdir(mode=0o700)

    found = attachable(home, local=False, terminal=True)

    assert isinstance(found, HomeGateway)
    assert attachable(home, local=True, terminal=True) is None
    assert attachable(home, local=False, terminal=False) is None
    assert attachable(Home(lonely), local=False, terminal=True) is None
    with pytest.raises(ControlError) as refused:
        found.hosted_session("ses_" + "0" * 32)
    assert "session_not_hosted" == refused.value.code
