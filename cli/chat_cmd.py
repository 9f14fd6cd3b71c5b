"""`ledgerclaw chat`: an interactive conversation with the agent in the terminal; CLI layer.

When the home's daemon runs and hosts agents, and the chat has a terminal, it attaches to
the daemon with the Textual app of `cli/chat_tui/` (loaded only then). Otherwise, or with
`--local`, the agent runs in this process: input is read on a thread of its own, so typing
while a run works reaches the run as steering; a line ending with a backslash continues on
the next one. Ctrl-C aborts the running turn, a second Ctrl-C leaves, and so does Ctrl-D or
`/exit`.
"""

from __future__ import annotations

import math
import signal
import sys
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
import typer
from anyio.streams.memory import MemoryObjectSendStream

from adapters.api.agent_run import agent_session
from adapters.api.chat import ChatEvent, ChatNotices, EndOfInput, Interrupt, Line, chat_loop
from adapters.control.home_gateway import HomeGateway, agent_gateway
from adapters.home import Home
from adapters.wiring.home import current_home, open_reader
from cli import render
from cli.common import expected_errors
from cli.run_cmd import approve_option, model_option, session_option, terminal_view
from domain.errors import LedgerclawError

CONTINUATION = "\\"


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
    return agent_gateway(home)


def attach(home: Home, gateway: HomeGateway, session: str | None) -> None:
    """Chat in the terminal app, attached to `session` (a unique prefix will do) or a pick."""
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


def _read_lines(
    send: MemoryObjectSendStream[ChatEvent], token: anyio.lowlevel.EventLoopToken
) -> None:
    """Read messages from stdin until it ends; post each to the chat loop."""
    pending: list[str] = []
    for raw in sys.stdin:
        line = raw.rstrip("\n")
        if line.endswith(CONTINUATION):
            pending.append(line[: -len(CONTINUATION)])
            continue
        pending.append(line)
        text, pending = "\n".join(pending), []
        if not _post(send, Line(text), token):
            return
    _post(send, EndOfInput(), token)


def _post(
    send: MemoryObjectSendStream[ChatEvent], event: ChatEvent, token: anyio.lowlevel.EventLoopToken
) -> bool:
    try:
        anyio.from_thread.run_sync(send.send_nowait, event, token=token)
    except (RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
        return False
    return True


def _prompt() -> None:
    if sys.stdin.isatty():
        sys.stdout.write("you> ")
        sys.stdout.flush()


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
    home = current_home()
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
    with agent_session(
        home, session=session, model=model, approve=approve, view=terminal_view()
    ) as opened:
        render.line(
            f"session {opened.session_id}  (Ctrl-D or /exit leaves)", "dim", console=render.err
        )

        async def main() -> None:
            send, receive = anyio.create_memory_object_stream[ChatEvent](math.inf)
            token = anyio.lowlevel.current_token()
            reader = threading.Thread(target=_read_lines, args=(send, token), daemon=True)
            reader.start()
            async with anyio.create_task_group() as tasks:

                async def interrupts() -> None:
                    with anyio.open_signal_receiver(signal.SIGINT) as signals:
                        async for _signal in signals:
                            send.send_nowait(Interrupt())

                tasks.start_soon(interrupts)
                notices = ChatNotices(say=lambda text: render.line(text, "dim"), ready=_prompt)
                with receive:
                    await chat_loop(opened, receive, notices)
                tasks.cancel_scope.cancel()
            send.close()

        anyio.run(main)
