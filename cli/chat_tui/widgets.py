"""The widgets of the terminal chat: one per entry, redrawn from it; CLI layer.

A message, a notice or an attachment is a line of text; a tool call is a line that Enter or a
click expands to its arguments and result; an approval prompt is its question and one
button per answer it offers.
"""

from __future__ import annotations

import re
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Click
from textual.message import Message
from textual.widgets import Button, Static

from cli.chat_tui.approval import LABELS, Choice, choices
from cli.chat_tui.entries import ApprovalPrompt, Entry, Said, Streaming, ToolCall
from cli.chat_tui.lines import render

CHOICE_PREFIX = "choice-"


def widget_id(key: str) -> str:
    """The DOM id of an entry's widget (ids allow letters, digits, `_` and `-`)."""
    return "e-" + re.sub(r"[^A-Za-z0-9_-]", "_", key)


class EntryLine(Static):
    """A message, a streamed answer, a notice or an attachment."""

    def __init__(self, entry: Entry) -> None:
        self.text = render(entry)
        super().__init__(self.text, id=widget_id(entry.key), classes=_classes(entry))

    @property
    def plain(self) -> str:
        """What it shows, without styles."""
        return self.text.plain

    def show(self, entry: Entry) -> None:
        """Redraw from `entry`."""
        self.set_classes(_classes(entry))
        self.text = render(entry)
        self.update(self.text)


class ToolLine(Static, can_focus=True):
    """One tool call; Enter or a click expands it to its arguments and result."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "expand", "expand/fold", show=False)]

    class Toggled(Message):
        """The person asked to expand or fold a tool call."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key

    def __init__(self, call: ToolCall) -> None:
        self.text = render(call)
        super().__init__(self.text, id=widget_id(call.key), classes="entry tool")
        self.key = call.key

    @property
    def plain(self) -> str:
        """What it shows, without styles."""
        return self.text.plain

    def show(self, entry: Entry) -> None:
        """Redraw from `entry`."""
        self.text = render(entry)
        self.update(self.text)

    def action_expand(self) -> None:
        """Ask for the call to be expanded or folded."""
        self.post_message(self.Toggled(self.key))

    def on_click(self, event: Click) -> None:
        """A click toggles too."""
        event.stop()
        self.focus()
        self.action_expand()


class ApprovalBox(Vertical):
    """A call waiting for consent: the question and a button per answer."""

    class Chosen(Message):
        """The person answered an approval prompt."""

        def __init__(self, approval_id: str, choice: Choice) -> None:
            super().__init__()
            self.approval_id = approval_id
            self.choice = choice

    def __init__(self, prompt: ApprovalPrompt) -> None:
        super().__init__(id=widget_id(prompt.key), classes="approval")
        self.prompt = prompt
        self._offered = choices(prompt)

    @property
    def plain(self) -> str:
        """The question it shows, without styles."""
        return render(self.prompt).plain

    def compose(self) -> ComposeResult:
        """The question, then the answers."""
        yield Static(render(self.prompt), classes="ask")
        with Horizontal(classes="choices"):
            yield from self._buttons()

    def show(self, entry: Entry) -> None:
        """Redraw from `entry`; the buttons change only when the answers offered do."""
        assert isinstance(entry, ApprovalPrompt)  # noqa: S101 - the view keys widgets by entry
        self.prompt = entry
        self.query_one(".ask", Static).update(render(entry))
        offered = choices(entry)
        row = self.query_one(".choices", Horizontal)
        if offered != self._offered:
            self._offered = offered
            row.remove_children()
            row.mount_all(self._buttons())
        for button in row.query(Button):
            button.disabled = entry.answering is not None

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Turn a button into the answer it stands for."""
        event.stop()
        name = (event.button.id or "").removeprefix(CHOICE_PREFIX)
        self.post_message(self.Chosen(self.prompt.approval_id, Choice(name)))

    def _buttons(self) -> list[Button]:
        return [
            Button(
                LABELS[choice],
                id=f"{CHOICE_PREFIX}{choice}",
                variant="error" if choice is Choice.DENY else "primary",
                compact=True,
            )
            for choice in self._offered
        ]


EntryView = EntryLine | ToolLine | ApprovalBox


def view_for(entry: Entry) -> EntryView:
    """A new widget showing `entry`."""
    if isinstance(entry, ToolCall):
        return ToolLine(entry)
    if isinstance(entry, ApprovalPrompt):
        return ApprovalBox(entry)
    return EntryLine(entry)


def _classes(entry: Entry) -> str:
    kind = type(entry).__name__.lower()
    if isinstance(entry, Said):
        kind = f"said {entry.role}{' pending' if entry.state else ''}"
    if isinstance(entry, Streaming):
        kind = "streaming"
    return f"entry {kind}"
