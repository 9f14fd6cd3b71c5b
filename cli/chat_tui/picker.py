"""The session picker: the daemon's agent sessions, and a new one; CLI layer.

It lists what `sessions.list` answers (the sessions the daemon hosts now, working or not)
under a first entry that creates a new session with `sessions.create`. Choosing dismisses
the screen with the session's id; Escape leaves without one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from adapters.control.chat_link import Opener
from adapters.control.client import DaemonNotRespondingError, DaemonNotRunningError
from adapters.control.gateway_wire import GatewayError, GatewayGoneError

NEW = "new-session"
"""The option id of "a new session"."""
_FAILURES = (GatewayError, GatewayGoneError, DaemonNotRunningError, DaemonNotRespondingError)


class SessionPicker(Screen[str | None]):
    """Choose the session to attach to."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "leave", "leave")]

    def __init__(self, opener: Opener) -> None:
        super().__init__()
        self.opener = opener

    def compose(self) -> ComposeResult:
        """A title, the list, and what went wrong if anything did."""
        yield Static("Choose a session (Enter attaches, Escape leaves)", id="picker-title")
        yield OptionList(Option("+ a new session", id=NEW), id="sessions")
        yield Static("", id="picker-problem")
        yield Footer()

    def on_mount(self) -> None:
        """Ask the daemon for its sessions."""
        self.query_one(OptionList).focus()
        self.run_worker(self._list(), exit_on_error=False)

    async def _list(self) -> None:
        rows = await self._ask("sessions.list")
        listing = self.query_one(OptionList)
        for row in (rows or {}).get("sessions", []):
            session = str(row.get("session_id"))
            working = "  (working)" if row.get("running") else ""
            listing.add_option(Option(f"{session}{working}", id=session))

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """Attach to the chosen session, creating it first for "a new session"."""
        event.stop()
        if event.option_id != NEW:
            self.dismiss(event.option_id)
            return
        created = await self._ask("sessions.create")
        if created is not None:
            self.dismiss(str(created["session_id"]))

    def action_leave(self) -> None:
        """Leave without a session."""
        self.dismiss(None)

    async def _ask(self, method: str) -> dict[str, Any] | None:
        """One request on a connection of its own; None, with the problem shown, on failure."""
        try:
            client = await self.opener()
            try:
                return await client.call(method)
            finally:
                await client.aclose()
        except _FAILURES as failure:
            problem = Text(f"{method} failed: {failure}", style="red")
            self.query_one("#picker-problem", Static).update(problem)
            return None
