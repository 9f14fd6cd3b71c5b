"""Arguments nested too deeply, and patterns too deep to compile, over real MCP sessions.

Both are the caller's invalid input: a tool result with `isError` and an `invalid_input`
outcome, journaled as an attempt, never a protocol error or a silence.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import (
    http_client,
    result_meta,
    result_text,
    start_daemon,
    stdio_client,
    write_governed_config,
)
from tests.integration.daemon.journal_view import events, session_ids


def nested(depth: int) -> Any:
    """A JSON list `depth` levels deep."""
    return json.loads("[" * depth + "]" * depth)


@pytest.fixture
def home(tmp_path: Path, work: Path) -> Path:
    """A home whose config trusts `work`."""
    root = tmp_path / "home"
    write_governed_config(root, work)
    return root


def receipts(home: Path) -> list[str]:
    """The outcome of every receipt in the home's journal, in order."""
    return [
        str(receipt["outcome"])
        for session_id in session_ids(home)
        for receipt in events(home, session_id, "session.receipt_recorded")
    ]


@pytest.mark.anyio
async def test_stdio_arguments_nested_too_deeply_are_an_invalid_input_result(
    home: Path, work: Path
) -> None:
    """Over stdio, 100 levels of nesting come back as a tool error, journaled invalid_input."""
    async with stdio_client(home) as client:
        result = await client.call_tool(
            "grep", {"pattern": "x", "path": str(work), "z": nested(100)}
        )
    assert result.is_error
    assert "invalid_input" == result_meta(result)["ledgerclaw/outcome"]
    assert "Invalid arguments for grep: arguments: nest deeper than 64 levels" == result_text(
        result
    )
    assert ["invalid_input"] == receipts(home)


@pytest.mark.anyio
async def test_http_patterns_too_deep_to_compile_are_an_invalid_input_result(
    home: Path, work: Path
) -> None:
    """Over HTTP, a 500-group regex and deep arguments are tool errors naming the argument."""
    daemon = start_daemon(home)
    try:
        daemon.pair()
        async with http_client(daemon) as client:
            deep = "(" * 500 + "a" + ")" * 500
            regex = await client.call_tool("grep", {"pattern": deep, "path": str(work)})
            arguments = await client.call_tool("grep", {"pattern": "a", "z": nested(100)})
    finally:
        daemon.stop()
    assert (True, True) == (regex.is_error, arguments.is_error)
    assert result_text(regex).startswith("pattern: too deeply nested")
    assert "arguments: nest deeper than 64 levels" in result_text(arguments)
    assert ["invalid_input", "invalid_input"] == receipts(home)
