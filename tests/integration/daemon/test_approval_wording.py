"""What `ledgerclaw approvals deny|approve` prints: each decision said once, plainly."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.daemon_harness import cli_json, run_cli, stdio_client, wait_for, write_governed_config


@pytest.mark.anyio
async def test_a_denial_says_the_call_will_not_run_and_claims_no_reach(
    tmp_path: Path, work: Path
) -> None:
    """`approvals deny` names the call and says it will not run, never "for this call only"."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    printed: list[str] = []

    def operator() -> None:
        wait_for(lambda: bool(cli_json(home, "approvals", "list")), what="a pending approval")
        [pending] = cli_json(home, "approvals", "list")
        done = run_cli(home, "approvals", "deny", pending["id"])
        printed.extend(
            [str(done.returncode), done.stdout.strip(), pending["id"], pending["summary"]]
        )

    thread = threading.Thread(target=operator)
    async with stdio_client(home) as client:
        thread.start()
        result = await client.call_tool("write_file", {"path": str(work / "x.txt"), "content": "x"})
    thread.join()

    code, out, approval_id, summary = printed
    assert result.is_error
    assert ("0", f"denied {approval_id} (write_file: {summary}); it will not run") == (code, out)
