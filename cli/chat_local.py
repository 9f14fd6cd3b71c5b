"""`ledgerclaw chat` in this process: the agent runs here, reading lines from stdin; CLI layer.

Input is read on a thread of its own, so typing while a run works reaches the run as
steering; a line ending with a backslash continues on the next one. Ctrl-C aborts the
running turn, a second Ctrl-C leaves, and so does Ctrl-D or `/exit`. Loaded only by a chat
that does not attach to a daemon.
"""

from __future__ import annotations

import math
import signal
import sys
import threading

import anyio
import anyio.from_thread
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectSendStream

from adapters.api.agent_run import agent_session
from adapters.api.chat import ChatEvent, ChatNotices, EndOfInput, Interrupt, Line, chat_loop
from adapters.home import Home
from cli import render
from cli.run_view import terminal_view

CONTINUATION = "\\"


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


def chat_here(home: Home, session: str | None, model: str | None, approve: bool) -> None:
    """Chat with the agent in this process until stdin ends, Ctrl-C twice or `/exit`."""
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
