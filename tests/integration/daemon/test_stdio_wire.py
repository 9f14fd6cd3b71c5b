"""`ledgerclaw mcp serve` as a real subprocess, fed raw lines on stdin: the wire and stderr.

Every request with an id gets exactly one response, whatever its line holds: each bad line
below is followed by a `ping`, and the next two replies must be the bad line's error and
then the ping's answer.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from tests.daemon_harness import CLI, run_cli, write_config, write_governed_config
from tests.integration.daemon.journal_view import events as journal_events
from tests.integration.daemon.journal_view import session_ids, timeline

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z [A-Z]+ ")
REPLY_TIMEOUT = 30.0
"""How long a test waits for a reply before it fails instead of hanging."""


class RawStdio:
    """One `mcp serve` process: raw lines in, parsed replies out, stderr kept."""

    def __init__(self, home: Path, *extra: str) -> None:
        env = {
            "LEDGERCLAW_HOME": str(home),
            "PATH": os.environ["PATH"],
            "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        }
        self.process = subprocess.Popen(
            [*CLI, "mcp", "serve", *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(Path.cwd()),
        )
        self._replies: queue.Queue[str] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,))
        self._reader.start()
        self.stderr = ""

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            self._replies.put(line.decode())

    def send(self, line: str | dict[str, Any]) -> None:
        """Write one line (a dict is sent as JSON)."""
        text = line if isinstance(line, str) else json.dumps(line)
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")
        self.process.stdin.flush()

    def reply(self) -> dict[str, Any]:
        """The next message the server wrote."""
        return dict(json.loads(self._replies.get(timeout=REPLY_TIMEOUT)))

    def initialize(self) -> None:
        """The handshake, as a client that speaks the 2025-06-18 protocol makes it."""
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
        assert "init" == self.reply()["id"]
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> tuple[int, str]:
        """Close stdin, wait for the exit; the exit status and everything on stderr."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=REPLY_TIMEOUT)
        self.release()
        return code, self.stderr

    def release(self) -> None:
        """Kill the process if it still runs, and close every pipe."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._reader.join()
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None and not pipe.closed:
                if pipe is self.process.stderr:
                    self.stderr = pipe.read().decode(errors="replace")
                pipe.close()


@pytest.fixture
def home(tmp_path: Path, work: Path) -> Path:
    """A home whose config trusts `work`."""
    root = tmp_path / "home"
    write_governed_config(root, work)
    return root


@pytest.fixture
def server(home: Path) -> Iterator[RawStdio]:
    """A started, initialized stdio server, killed if a test leaves it running."""
    raw = RawStdio(home)
    try:
        raw.initialize()
        yield raw
    finally:
        raw.release()


def deep_call(request_id: int, depth: int) -> str:
    """A tools/call whose arguments nest `depth` levels deep."""
    arguments = '{"pattern": "x", "z": ' + "[" * depth + "]" * depth + "}"
    return (
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
        f'"params": {{"name": "grep", "arguments": {arguments}}}}}'
    )


BAD_REQUESTS: list[tuple[str, int | str | None, int]] = [
    ("garbage", None, -32700),
    ('{"jsonrpc": "2.0", "id": 7, "method": "tools/list"', None, -32700),
    ('{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": [1]}', 8, -32602),
    ('{"jsonrpc": "2.0", "id": "s", "method": 5}', "s", -32600),
    ('{"jsonrpc": "1.0", "id": 9, "method": "ping"}', 9, -32600),
    ("[1, 2]", None, -32600),
    (deep_call(10, 300), 10, -32700),
    ('{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": 5}}', 12, -32602),
    ('{"jsonrpc": "2.0", "id": 13, "method": "no/such/method"}', 13, -32601),
]


def test_every_bad_request_gets_exactly_one_error_response(server: RawStdio) -> None:
    """Garbage is -32700 with id null; a bad request its -32600/-32602 with its id, once."""
    answered = []
    for number, (line, _, _) in enumerate(BAD_REQUESTS):
        server.send(line)
        server.send({"jsonrpc": "2.0", "id": f"ping-{number}", "method": "ping"})
        error, pong = server.reply(), server.reply()
        answered.append((error.get("id"), error.get("error", {}).get("code"), pong["id"]))
    expected = [(rid, code, f"ping-{n}") for n, (_, rid, code) in enumerate(BAD_REQUESTS)]
    assert expected == answered
    assert 0 == server.close()[0]


@pytest.mark.parametrize(
    "line",
    [
        "",
        "   ",
        '{"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}',
        '{"jsonrpc": "2.0", "id": 3, "result": "not a reply to anything"}',
    ],
    ids=["empty", "blank", "notification", "response"],
)
def test_blank_lines_notifications_and_responses_get_no_answer(server: RawStdio, line: str) -> None:
    """What asks for no answer gets none: the next reply is the following ping's."""
    server.send(line)
    server.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert {"jsonrpc": "2.0", "id": "after", "result": {}} == server.reply()


def test_arguments_too_deep_for_the_journal_are_an_invalid_input_result(
    server: RawStdio,
) -> None:
    """Arguments 100 levels deep reach the pipeline and come back as a tool error result."""
    server.send(deep_call(11, 100))
    reply = server.reply()
    assert (11, True) == (reply["id"], reply["result"]["isError"])
    assert "invalid_input" == reply["result"]["_meta"]["ledgerclaw/outcome"]


def test_a_clean_start_and_stop_writes_nothing_on_stderr(home: Path) -> None:
    """At the default level a session that starts, lists, calls and ends leaves stderr empty."""
    server = RawStdio(home)
    try:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        assert "list" == server.reply()["id"]
        server.send(
            {
                "jsonrpc": "2.0",
                "id": "call",
                "method": "tools/call",
                "params": {"name": "grep", "arguments": {"pattern": "alpha"}},
            }
        )
        assert "call" == server.reply()["id"]
        assert (0, "") == server.close()
    finally:
        server.release()


def test_every_log_line_of_a_stdio_server_carries_a_ledgerclaw_name(
    tmp_path: Path, work: Path
) -> None:
    """At debug, every line in daemon.log and on stderr is under a `ledgerclaw` logger."""
    home = tmp_path / "home"
    write_config(home, f'[daemon]\nlog_level = "debug"\n[tools]\nroots = [{{ path = "{work}" }}]\n')
    server = RawStdio(home)
    try:
        server.initialize()
        server.send("garbage")
        assert -32700 == server.reply()["error"]["code"]
        code, stderr = server.close()
    finally:
        server.release()
    logged = (home / "logs" / "daemon.log").read_text().splitlines()
    names = {
        line.split(" ")[2].rstrip(":")
        for line in [*logged, *stderr.splitlines()]
        if LOG_LINE.match(line)
    }
    assert 0 == code
    assert {"ledgerclaw.http", "ledgerclaw.adapters.stdio.stdin"} <= names
    assert [] == sorted(name for name in names if not name.startswith("ledgerclaw."))


def call(request_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tools/call request."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


def session_events(home: Path) -> list[list[str]]:
    """The event names of each session in the home's journal, oldest session first."""
    return [[e.event for e in timeline(home, s)] for s in session_ids(home)]


def test_project_is_declared_as_the_session_opens_and_journaled_like_the_tool(
    home: Path, work: Path
) -> None:
    """`--project` is the set_working_directory call a client would make, event for event."""
    declared = RawStdio(home, "--project", str(work))
    try:
        declared.initialize()
        declared.send(call("read", "read_file", path="notes.txt"))
        read = declared.reply()
        assert (0, "") == declared.close()
    finally:
        declared.release()
    assert not read["result"]["isError"]
    asked = RawStdio(home)
    try:
        asked.initialize()
        asked.send(call("cd", "set_working_directory", path=str(work)))
        asked.reply()
        asked.send(call("read", "read_file", path="notes.txt"))
        asked.reply()
        asked.close()
    finally:
        asked.release()
    [by_option, by_client] = session_events(home)
    assert by_client == by_option
    [declaration] = [
        r
        for r in journal_events(home, session_ids(home)[0], "session.receipt_recorded")
        if r["project_declaration"]
    ]
    assert str(work) == declaration["project_declaration"]


def test_a_project_outside_the_roots_is_denied_with_one_warning(home: Path, tmp_path: Path) -> None:
    """A refused `--project` is a journaled denial and one warning; the session still serves."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = RawStdio(home, "--project", str(elsewhere))
    try:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
        assert "tools" in server.reply()["result"]
        code, stderr = server.close()
    finally:
        server.release()
    assert 0 == code
    [line] = stderr.splitlines()
    assert (
        f"WARNING ledgerclaw.adapters.stdio.serve: --project {elsewhere} was not declared" in line
    )
    [denied] = journal_events(home, session_ids(home)[0], "session.attempt_denied")
    assert "outside_roots" == denied["category"]


def test_a_project_that_is_not_a_directory_stops_the_start(home: Path, tmp_path: Path) -> None:
    """`--project` naming nothing is a usage error (exit 2) before anything is served."""
    done = run_cli(home, "mcp", "serve", "--project", str(tmp_path / "missing"))
    assert 2 == done.returncode
    assert "does not exist" in done.stderr
    assert not (home / "ledgerclaw.db").exists()
