"""A client that hangs up mid-request, against a real daemon over a raw socket."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.daemon_harness import start_daemon, wait_for, write_config

DISCONNECTED = "the client disconnected before its request was read"


def test_a_client_hanging_up_mid_body_is_one_debug_line(tmp_path: Path) -> None:
    """A partial /mcp body then a close leaves one DEBUG line in daemon.log, no traceback."""
    home = tmp_path / "home"
    write_config(home, '[daemon]\nlog_level = "debug"\ngrace_seconds = 1\n')
    daemon = start_daemon(home)
    log = home / "logs" / "daemon.log"
    try:
        token = daemon.pair()
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{daemon.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: 1000\r\n\r\n"
        )
        with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as client:
            client.sendall(head.encode() + b'{"jsonrpc": "2.0", "id": 1, ')
        wait_for(
            lambda: DISCONNECTED in log.read_text() or "ClientDisconnect" in log.read_text(),
            what="the daemon to notice the disconnect",
        )
    finally:
        assert 0 == daemon.stop()
    text = log.read_text()
    assert [] == [line for line in text.splitlines() if " ERROR " in line]
    assert "Traceback" not in text
    [line] = [line for line in text.splitlines() if DISCONNECTED in line]
    assert " DEBUG ledgerclaw.mcp.server.streamable_http: Error handling POST request: " in line
