"""`ledgerclaw chat` in a real terminal attaches to the daemon; without one it stays in-process."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import time
from pathlib import Path

from tests.chat_rig import chat_home
from tests.daemon_harness import CLI, environment, start_daemon
from tests.gateway_rig import ended, gateway

WAIT = 30.0


def read_until(fd: int, wanted: bytes, seen: bytearray) -> bool:
    """Read the terminal's output into `seen` until it holds `wanted`, or WAIT passes."""
    deadline = time.monotonic() + WAIT
    while wanted not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 65536)
            except OSError:  # the other side closed: the app exited
                break
    return wanted in seen


def test_chat_on_a_terminal_attaches_to_the_daemons_session_and_leaves_it_running(
    tmp_path: Path, work: Path
) -> None:
    """Under a pseudo-terminal the command draws the app on the session; Ctrl+Q exits 0."""
    home = chat_home(tmp_path, work, [{"reply": {"text": "Hello from the daemon."}}])
    daemon = start_daemon(home)
    try:
        with gateway(daemon) as client:
            session = client.call("sessions.create")["session_id"]
            client.call("chat.send", {"session": session, "text": "hi"})
            ended(client, session)
        controller, terminal = pty.openpty()
        env = {**environment(home), "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
        process = subprocess.Popen(
            [*CLI, "chat", "--session", session[:12]],
            env=env,
            stdin=terminal,
            stdout=terminal,
            stderr=terminal,
            close_fds=True,
        )
        os.close(terminal)
        seen = bytearray()
        try:
            shown = read_until(controller, b"Hello from the daemon.", seen)
            os.write(controller, b"\x11")  # Ctrl+Q
            code = process.wait(timeout=WAIT)
        finally:
            if process.poll() is None:
                process.kill()
            os.close(controller)
        with gateway(daemon) as client:
            listed = [row["session_id"] for row in client.call("sessions.list")["sessions"]]
    finally:
        assert 0 == daemon.stop()

    assert shown, bytes(seen[-2000:]).decode(errors="replace")
    assert 0 == code
    assert session in listed


def test_chat_without_a_terminal_runs_in_process_even_with_a_daemon(
    tmp_path: Path, work: Path
) -> None:
    """Piped input: the chat answers in its own process and opens no session in the daemon."""
    home = chat_home(tmp_path, work, [{"reply": {"text": "Answered in-process."}}])
    daemon = start_daemon(home)
    try:
        done = subprocess.run(
            [*CLI, "chat"],
            env=environment(home),
            input="hello\n",
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
        with gateway(daemon) as client:
            hosted = client.call("sessions.list")["sessions"]
    finally:
        assert 0 == daemon.stop()

    assert 0 == done.returncode, done.stderr
    assert "Answered in-process." in done.stdout
    assert [] == hosted
