"""The client's stdin for `mcp serve`, read so that a signal can always end the process.

Adapter layer.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Awaitable, Callable, Iterator

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types

from adapters.stdio.refusals import verdict

log = logging.getLogger(__name__)


class StdinLines(anyio.AsyncFile[str]):
    """The client's messages, one line each, read from `fd` by a daemon thread.

    The SDK reads stdin in an AnyIO worker thread, and a blocked read there can be
    neither cancelled nor abandoned at exit: a signal could then not end the process
    while the client kept the pipe open. A daemon thread is simply left behind.
    """

    def __init__(self, fd: int) -> None:
        # Never closed: the thread may still be blocked reading it when the process ends.
        wire = open(fd, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - as said
        super().__init__(wire)
        self._send, self._receive = anyio.create_memory_object_stream[str](0)
        self.answer: Callable[[types.JSONRPCError], Awaitable[None]] | None = None
        """Where an error response for a line the SDK cannot read is sent."""

    def start(self) -> None:
        """Start reading; call from the event loop that will consume the lines."""
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._pump, args=(token,), name="stdin", daemon=True).start()

    def _pump(self, token: anyio.lowlevel.EventLoopToken) -> None:
        try:
            for line in iter(self.wrapped.readline, ""):
                anyio.from_thread.run(self._send.send, line, token=token)
            anyio.from_thread.run_sync(self._send.close, token=token)
        except Exception:  # noqa: BLE001 - loop finished, send cancelled, stream closed: all mean stop
            return  # nobody wants more lines

    async def readline(self) -> str:
        """The next line the SDK can read, or "" once the client closed stdin.

        A line it would drop unanswered is answered here instead, through `answer` (see
        adapters/stdio/refusals.py), and the next line is read.
        """
        while True:
            try:
                line = await self._receive.receive()
            except anyio.EndOfStream:
                return ""
            found = verdict(line)
            if found.readable:
                return line
            log.debug("stdin line refused: %s", found.answer.error.message if found.answer else "")
            if found.answer is not None and self.answer is not None:
                try:
                    await self.answer(found.answer)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return ""  # the server stopped writing: it is shutting down

    async def aclose(self) -> None:
        """Stop handing lines over; the blocked thread ends with the process."""
        self._receive.close()


@contextlib.contextmanager
def stdin_claimed() -> Iterator[int]:
    """The wire's stdin as a private descriptor, with fd 0 on the null device meanwhile.

    As the SDK does for the stdin it opens itself: nothing the tools start can read
    the client's messages.
    """
    wire = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        yield wire
    finally:
        os.dup2(wire, 0)
