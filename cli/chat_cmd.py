"""`ledgerclaw chat`: an interactive conversation with the agent in the terminal; CLI layer.

When the home's daemon runs and hosts agents, and the chat has a terminal, it attaches to
the daemon with the Textual app of `cli/chat_tui/` (loaded only then). Otherwise, or with
`--local`, the agent runs in this process (`cli/chat_local.py`, loaded only then too).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from adapters.home import Home, resolve_home
from cli import render
from cli.common import expected_errors
from cli.run_cmd import approve_option, model_option, session_option
from domain.errors import LedgerclawError

if TYPE_CHECKING:
    from adapters.control.home_gateway import HomeGateway


class ChatOptionsError(LedgerclawError):
    """Options that choose for an in-process chat were given to one that attaches."""

    exit_code = 2


class ChatDetachedError(LedgerclawError):
    """The attached chat ended because the daemon refused it (an unknown session, …)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code or 1


def attachable(home: Home, *, local: bool, terminal: bool) -> HomeGateway | None:
    """The daemon's gateway to attach to, or None to chat in this process.

    Attaching needs a terminal to draw on and a daemon of the home that hosts agents.
    """
    if local or not terminal:
        return None
    from adapters.control.home_gateway import agent_gateway  # noqa: PLC0415 - only to attach

    return agent_gateway(home)


def attach(home: Home, gateway: HomeGateway, session: str | None) -> None:
    """Chat in the terminal app, attached to `session` (a unique prefix will do) or a pick."""
    from adapters.wiring.home import open_reader  # noqa: PLC0415 - only to attach

    session_id = None
    if session is not None:
        session_id = gateway.hosted_session(str(open_reader(home).resolve_session(session)))
    # Imported here: only an attached chat loads Textual.
    from cli.chat_tui.app import attach as attach_app  # noqa: PLC0415

    outcome = attach_app(gateway.open, session_id)
    if outcome.session is not None:
        render.line(f"session {outcome.session}", "dim", console=render.err)
    if outcome.problem is not None:
        raise ChatDetachedError(outcome.problem, outcome.exit_code)


@expected_errors
def chat(
    session: str | None = session_option(),
    model: str | None = model_option(),
    approve: bool = approve_option(),
    local: bool = typer.Option(
        False, "--local", help="Run the agent in this process even when the daemon hosts agents."
    ),
) -> None:
    """Talk with the agent in the terminal, one run per message.

    When the home's daemon hosts agents, the chat attaches to it in a full-screen terminal
    app (docs/chat.md): Enter sends, Escape aborts the turn, Ctrl+Q leaves. Otherwise, or with
    --local, the agent runs in this process: typing while a run works steers it; a line ending
    with a backslash continues on the next. Ctrl-C aborts the running turn, a second Ctrl-C
    leaves, and so do Ctrl-D and /exit.
    """
    home = resolve_home()
    gateway = attachable(home, local=local, terminal=sys.stdin.isatty() and sys.stdout.isatty())
    if gateway is not None:
        if model is not None or approve:
            msg = (
                "--model and --approve choose for a chat in this process, but the daemon for this"
                " home hosts agents with its own choices; add --local to chat in this process"
            )
            raise ChatOptionsError(msg)
        attach(home, gateway, session)
        return
    # Loaded here: only a chat in this process loads the agent and its event loop.
    from cli.chat_local import chat_here  # noqa: PLC0415

    chat_here(home, session, model, approve)
