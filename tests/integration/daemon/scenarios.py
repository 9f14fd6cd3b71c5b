"""What the end-to-end tests do the same way over every transport."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
from mcp import Client

from tests.daemon_harness import result_text


async def exercise_every_tool(client: Client, work: Path) -> types.CallToolResult:
    """Call each first-party tool once, checking each works; the last read's result.

    `find_files` is deferred: it is missing from the list until `load_tool` loads it.
    """
    names = {t.name for t in (await client.list_tools()).tools}
    assert "find_files" not in names
    assert {"read_file", "write_file", "shell_execute", "load_tool"} <= names
    calls = [
        ("set_working_directory", {"path": str(work)}),
        ("read_file", {"path": "notes.txt"}),
        ("list_directory", {"path": str(work)}),
        ("grep", {"pattern": "beta", "path": str(work)}),
        ("shell_execute", {"command": "echo hello", "cwd": str(work)}),
        ("load_tool", {"name": "find_files"}),
    ]
    results = {}
    for name, arguments in calls:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, (name, result_text(result))
        results[name] = result
    assert "beta" in result_text(results["read_file"])
    assert "notes.txt" in result_text(results["list_directory"])
    assert "hello" in result_text(results["shell_execute"])
    assert "find_files" in {t.name for t in (await client.list_tools()).tools}
    found = await client.call_tool("find_files", {"pattern": "*.txt", "path": str(work)})
    assert "notes.txt" in result_text(found)
    read = await client.call_tool("read_file", {"path": "notes.txt"})
    revision = result_text(read).split("revision: ")[1].split()[0]
    edit = {"path": "notes.txt", "old_text": "gamma", "new_text": "delta", "revision": revision}
    edited = await client.call_tool("edit_file", edit)
    assert not edited.is_error, result_text(edited)
    missing = await client.call_tool("tool_output_read", {"call_id": "mcp_missing"})
    assert missing.is_error
    assert "delta" in (work / "notes.txt").read_text()
    return read


def saw_list_changed(messages: list[object]) -> bool:
    """Whether a `tools/list_changed` notification is among the client's messages."""
    return any(
        isinstance(getattr(m, "root", m), types.ToolListChangedNotification) for m in messages
    )
