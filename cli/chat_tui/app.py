"""The terminal chat as a Textual app, attached to a running daemon's session; CLI layer.

The app holds a `ChatLink` to the session and a `Conversation` it feeds; after each batch
of what the link delivers it brings the widgets in line with the conversation's entries.
Enter sends the message typed (as steering while a run works), Escape aborts the running
turn, Tab moves to the tool lines and approval buttons, Ctrl+Q leaves. See docs/chat.md.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Footer, Input, Static

from adapters.control.chat_link import (
    Backoff,
    ChatLink,
    Linked,
    LinkNotice,
    Opener,
    Pushed,
    Unlinked,
)
from adapters.control.gateway_wire import GatewayError, GatewayGoneError
from cli.chat_tui.approval import answer_request
from cli.chat_tui.conversation import Conversation
from cli.chat_tui.lines import status_line
from cli.chat_tui.picker import SessionPicker
from cli.chat_tui.widgets import ApprovalBox, EntryView, ToolLine, view_for

LEAVE_WORDS = frozenset({"/exit", "/quit"})
CSS = """
#status { height: 1; background: $boost; color: $text-muted; padding: 0 1; }
#log { height: 1fr; }
.entry { margin: 0 1; }
.said.user { color: $text; margin-top: 1; }
.pending { color: $text-muted; }
.streaming { color: $text-muted; }
.tool:focus { background: $accent 30%; }
.approval { border: round $warning; height: auto; margin: 0 1; padding: 0 1; }
.choices { height: auto; }
.choices Button { margin-right: 1; }
#prompt { dock: bottom; }
"""


@dataclass(frozen=True)
class ChatOutcome:
    """How the app ended: the session it was attached to, and the failure that ended it."""

    session: str | None
    problem: str | None = None
    exit_code: int = 0


class ChatApp(App[ChatOutcome]):
    """A conversation with one of the daemon's agent sessions."""

    CSS = CSS
    TITLE = "ledgerclaw chat"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "abort", "abort the turn"),
        Binding("ctrl+q", "leave", "leave", priority=True),
    ]

    def __init__(self, opener: Opener, session: str | None, backoff: Backoff | None = None) -> None:
        super().__init__()
        self.opener = opener
        self.session = session
        self.backoff = backoff or Backoff()
        self.conversation: Conversation | None = None
        self.link: ChatLink | None = None
        self._views: dict[str, tuple[EntryView, int]] = {}
        self._syncing = asyncio.Lock()

    def compose(self) -> ComposeResult:
        """The status line, the conversation, the input and the keys."""
        yield Static("connecting…", id="status")
        yield VerticalScroll(id="log")
        yield Input(placeholder="a message (Enter sends; while a run works it steers)", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        """Attach to the session given, or let the person pick one."""
        if self.session is None:
            self.push_screen(SessionPicker(self.opener), callback=self._picked)
        else:
            self._attach_to(self.session)

    async def on_unmount(self) -> None:
        """Close the link as the app ends, so no connection outlives it."""
        if self.link is not None:
            await self.link.aclose()

    # -- the link --------------------------------------------------------------------------

    def _picked(self, session: str | None) -> None:
        if session is None:
            self.exit(ChatOutcome(None))
            return
        self._attach_to(session)

    def _attach_to(self, session: str) -> None:
        self.session = session
        conversation = self.conversation = Conversation(session)
        self.link = ChatLink(
            self.opener, session, cursor=lambda: conversation.position, backoff=self.backoff
        )
        self.query_one("#prompt", Input).focus()
        self.run_worker(self._serve(self.link), name="link", exit_on_error=False)

    async def _serve(self, link: ChatLink) -> None:
        try:
            await link.serve(self._deliver)
        except GatewayError as refusal:
            self.exit(ChatOutcome(self.session, f"{refusal} ({refusal.code})", refusal.exit_code))

    async def _deliver(self, notices: Sequence[LinkNotice]) -> None:
        conversation = self._conversation()
        for notice in notices:
            if isinstance(notice, Linked):
                conversation.linked(again=notice.again)
            elif isinstance(notice, Unlinked):
                conversation.unlinked(notice.why, notice.attempt, notice.retry_in)
            elif isinstance(notice, Pushed):
                conversation.apply_pushed(notice.event, notice.payload)
        await self.sync()

    # -- what the person does --------------------------------------------------------------

    async def on_input_submitted(self, event: Input.Submitted) -> None:
        """Send the message typed: a new run when idle, steering while a run works."""
        text = event.value.strip()
        event.input.value = ""
        if not text or self.link is None:
            return
        if text in LEAVE_WORDS:
            self.action_leave()
            return
        conversation, key = self._conversation(), uuid.uuid4().hex
        if conversation.running is None:
            conversation.sending(key, text)
            self.run_worker(self._send(self.link, key, text), exit_on_error=False)
        else:
            conversation.steering(key, text)
            self.run_worker(self._steer(self.link, key, text), exit_on_error=False)
        await self.sync()

    async def _send(self, link: ChatLink, key: str, text: str) -> None:
        try:
            answer = await link.send(text, client_run_id=key)
        except GatewayError as refusal:
            self._conversation().not_sent(key, str(refusal))
        else:
            self._conversation().sent(key, answer)
        await self.sync()

    async def _steer(self, link: ChatLink, key: str, text: str) -> None:
        # Steering carries no client run id, so it is never sent twice.
        params = {"session": link.session, "text": text}
        try:
            answer = await link.call("chat.send", params)
        except GatewayGoneError:
            self._conversation().not_sent(key, "the connection was lost; send it again")
        except GatewayError as refusal:
            self._conversation().not_sent(key, str(refusal))
        else:
            self._conversation().sent(key, answer)
        await self.sync()

    async def action_abort(self) -> None:
        """Abort the running turn (Escape)."""
        conversation = self._conversation()
        if self.link is None or conversation.running is None:
            conversation.note("no run is working")
        else:
            try:
                answer = await self.link.call("chat.abort", {"session": self.link.session})
            except (GatewayError, GatewayGoneError) as failure:
                conversation.note(f"could not abort: {failure}", "error")
            else:
                conversation.note("aborting the turn" if answer.get("aborted") else "no run works")
        await self.sync()

    def action_leave(self) -> None:
        """Leave the chat (Ctrl+Q or /exit); the session stays in the daemon."""
        self.exit(ChatOutcome(self.session))

    async def on_tool_line_toggled(self, message: ToolLine.Toggled) -> None:
        """Expand or fold a tool call."""
        self._conversation().toggle(message.key)
        await self.sync()

    async def on_approval_box_chosen(self, message: ApprovalBox.Chosen) -> None:
        """Send the answer chosen for an approval prompt."""
        conversation = self._conversation()
        prompt = conversation.prompt(message.approval_id)
        if prompt is None or self.link is None:
            return
        method, params = answer_request(prompt, message.choice, self.link.methods)
        conversation.answering(message.approval_id, str(message.choice))
        await self.sync()
        try:
            answer = await self.link.call(method, params)
        except GatewayError as refusal:
            conversation.answer_refused(message.approval_id, refusal.code, str(refusal))
        except GatewayGoneError as gone:
            conversation.answer_refused(message.approval_id, "", f"{gone}; answer again")
        else:
            conversation.answered(message.approval_id, answer)
        await self.sync()

    # -- the view --------------------------------------------------------------------------

    async def sync(self) -> None:
        """Bring the widgets in line with the conversation: mount, redraw, remove."""
        conversation = self.conversation
        if conversation is None:
            return
        async with self._syncing:
            log = self.query_one("#log", VerticalScroll)
            following = log.scroll_y >= log.max_scroll_y - 1
            entries = conversation.entries
            keys = {entry.key for entry in entries}
            for key in [k for k in self._views if k not in keys]:
                await self._views.pop(key)[0].remove()
            previous: EntryView | None = None
            for entry in entries:
                found = self._views.get(entry.key)
                if found is None:
                    view = view_for(entry)
                    if previous is not None:
                        await log.mount(view, after=previous)
                    elif log.children:
                        await log.mount(view, before=0)
                    else:
                        await log.mount(view)
                elif found[1] != entry.version:
                    view = found[0]
                    view.show(entry)
                else:
                    view = found[0]
                self._views[entry.key] = (view, entry.version)
                previous = view
            self.query_one("#status", Static).update(Text(status_line(conversation)))
            if following:
                log.scroll_end(animate=False)

    def _conversation(self) -> Conversation:
        assert self.conversation is not None  # noqa: S101 - set before the link delivers
        return self.conversation


def attach(opener: Opener, session: str | None) -> ChatOutcome:
    """Run the chat in this terminal until the person leaves; how it ended."""
    outcome = ChatApp(opener, session).run()
    return outcome if outcome is not None else ChatOutcome(session)
