"""Approved commands that leave their root, over the CLI and over MCP: the kernel stops them.

The shell policy cannot see a path inside a program's string (`python3 -c "open(...)"`) or one
the shell computes (`$PWD/..`), so an operator may approve such a command; the sandbox still
keeps it inside its roots, and the audit says it was confined.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.daemon_harness import (
    cli_json,
    result_text,
    run_cli,
    stdio_client,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="needs a Linux kernel")

SECRET = "sekrit-value-31337"


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """A home trusting `work/root` (read and write), a secret store, and a victim outside."""
    home = tmp_path / "home"
    root = tmp_path / "work" / "root"
    root.mkdir(parents=True)
    (root / "ok.txt").write_text("ok\n")
    outside = tmp_path / "work" / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("still here\n")
    write_config(
        home,
        f"""
[tools]
roots = [{{ path = "{root}", operations = ["read", "write"] }}]
approval_timeout_seconds = 20
""",
    )
    (home / "secrets.toml").write_text(f'[redact]\nvalues = ["{SECRET}"]\n')
    (home / "secrets.toml").chmod(0o600)
    return {"home": home, "root": root, "outside": outside}


def _reversed_secret_command(home: Path) -> str:
    code = f"print(open('{home / 'secrets.toml'}').read()[::-1])"
    return f'python3 -c "{code}"'


def _cli_call(home: Path, command: str, cwd: Path) -> dict[str, object]:
    arguments = json.dumps({"command": command, "cwd": str(cwd)})
    done = run_cli(
        home, "tool", "call", "shell_execute", "--args", arguments, "--approve", "--json"
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_an_approved_cli_call_cannot_read_the_secret_store(places: dict[str, Path]) -> None:
    """E8 over the CLI: the program's own PermissionError, and the secret never shows."""
    home = places["home"]
    result = _cli_call(home, _reversed_secret_command(home), places["root"])

    assert "PermissionError" in str(result["text"])
    assert SECRET[::-1] not in str(result["text"])
    [row] = cli_json(home, "audit", "attempts")
    assert "confined (required)" == row["sandbox"]
    assert 0 == row["sandbox_network"]


def test_an_approved_cli_call_cannot_act_outside_its_root(places: dict[str, Path]) -> None:
    """E7 over the CLI: `$PWD/..` paths are approved, and the kernel refuses each one."""
    home, outside = places["home"], places["outside"]
    command = (
        "rm $PWD/../outside/victim.txt; cat $PWD/../outside/victim.txt;"
        " echo x > $PWD/../outside/written.txt"
    )
    result = _cli_call(home, command, places["root"])

    assert 3 == str(result["text"]).count("Permission denied")
    assert "still here\n" == (outside / "victim.txt").read_text()
    assert not (outside / "written.txt").exists()


@pytest.mark.anyio
async def test_an_approved_mcp_call_cannot_read_the_secret_store(places: dict[str, Path]) -> None:
    """E8 over MCP: approved by the operator while the client waits, and still confined."""
    home = places["home"]

    def operator() -> None:
        wait_for(lambda: bool(cli_json(home, "approvals", "list")), what="a pending approval")
        [pending] = cli_json(home, "approvals", "list")
        done = run_cli(home, "approvals", "approve", pending["id"])
        assert 0 == done.returncode, done.stderr

    thread = threading.Thread(target=operator)
    async with stdio_client(home) as client:
        thread.start()
        command = _reversed_secret_command(home)
        result = await client.call_tool(
            "shell_execute", {"command": command, "cwd": str(places["root"])}
        )
    thread.join()
    text = result_text(result)

    assert "PermissionError" in text
    assert SECRET[::-1] not in text
    assert SECRET not in text
