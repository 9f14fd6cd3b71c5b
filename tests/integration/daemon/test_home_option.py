"""`--home` for the long-running commands, started as a client that drops the environment."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.daemon_harness import (
    CLI,
    free_port,
    result_meta,
    result_text,
    wait_for,
    write_governed_config,
)
from tests.integration.daemon.journal_view import session_ids


def bare_environment(user: Path) -> dict[str, str]:
    """What a client such as MCP Inspector passes a stdio server: no LEDGERCLAW_HOME."""
    return {
        "HOME": str(user),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }


@pytest.mark.slow
@pytest.mark.anyio
async def test_mcp_serve_works_on_the_home_option_without_its_variable(
    tmp_path: Path, work: Path
) -> None:
    """`mcp serve --home H` in a bare environment, as Inspector starts it, journals in H."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    user = tmp_path / "user"
    user.mkdir()
    params = StdioServerParameters(
        command=CLI[0],
        args=[*CLI[1:], "mcp", "serve", "--home", str(home)],
        env=bare_environment(user),
        cwd=str(Path.cwd()),
    )

    with (tmp_path / "stdio.err").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            result = await client.call_tool("read_file", {"path": str(work / "notes.txt")})

    assert "beta" in result_text(result), (tmp_path / "stdio.err").read_text()
    assert [result_meta(result)["ledgerclaw/session_id"]] == session_ids(home)
    assert not (user / ".ledgerclaw").exists()


@pytest.mark.slow
def test_daemon_run_and_its_clients_work_on_the_home_option(tmp_path: Path, work: Path) -> None:
    """`--home H daemon run` serves H; `--home H daemon status` finds that daemon."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    user = tmp_path / "user"
    user.mkdir()
    port = free_port()
    with (tmp_path / "daemon.err").open("w") as errlog:
        daemon = subprocess.Popen(
            [*CLI, "--home", str(home), "daemon", "run", "--port", str(port)],
            env=bare_environment(user),
            stdout=subprocess.DEVNULL,
            stderr=errlog,
        )
    try:

        def answers() -> bool:
            status = subprocess.run(
                [*CLI, "--home", str(home), "daemon", "status", "--json"],
                env=bare_environment(user),
                capture_output=True,
                check=False,
                timeout=30,
            )
            return status.returncode == 0

        wait_for(answers, timeout=30, what="the daemon to answer through --home")
        assert (home / "daemon.pid").is_file()
        assert not (user / ".ledgerclaw").exists()
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
    assert 0 == daemon.returncode, (tmp_path / "daemon.err").read_text()
