"""The shell policy's escapes E1-E6, tried over MCP as a hostile model would: none runs unasked.

Each command was once reviewed-safe and ran without approval, reading a file outside the
root or a protected one. Now each needs an approval nobody gives (it expires after a second)
or is denied outright; either way its attempt ends `denied`, nothing is read, and the
journal has no allow decision for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_harness import result_meta, result_text, stdio_client, write_config
from tests.integration.daemon.journal_view import events

SECRET = "esc4pe-secret-9f8e"
OUTSIDE = "outside-secret-line"

pytestmark = pytest.mark.anyio


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """A home trusting `work/root`, a secret store, and a secret file outside the root."""
    home = tmp_path / "home"
    root = tmp_path / "work" / "root"
    (root / "sub").mkdir(parents=True)
    (root / "ok.txt").write_text("ok\n")
    outside = tmp_path / "work" / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{OUTSIDE}\n")
    (outside / "x").write_text("o\n")
    write_config(
        home,
        f"""
[tools]
roots = [{{ path = "{root}", operations = ["read", "write"] }}]
approval_timeout_seconds = 1
""",
    )
    (home / "secrets.toml").write_text(f'[redact]\nvalues = ["{SECRET}"]\n')
    (home / "secrets.toml").chmod(0o600)
    # E6's second step: a link named by digits that points out of the root.
    (root / "12").symlink_to("../outside/secret.txt")
    return {"home": home, "root": root, "outside": outside}


ESCAPES = {
    "E1 value in an option cluster": "file -bm../outside/secret.txt ok.txt",
    "E1 a directory in a cluster": "file -bm{outside} ok.txt",
    "E2 a colon list": "file -m ok.txt:../outside/secret.txt ok.txt",
    "E2 a long option's colon list": "file --magic-file=ok.txt:../outside/secret.txt ok.txt",
    "E3 the secret store": "file -bm{home}/secrets.toml ok.txt",
    "E3 the config": "file -bm{home}/config.toml ok.txt",
    "E3 the key store": "file -bm{home}/keys ok.txt",
    "E4 reshaped": 'file -bm{home}/secrets.toml ok.txt 2>&1 | grep -o "[A-Z0-9-]"',
    "E5 grep patterns from a file": "grep -cif../outside/x ok.txt",
    "E5 du excludes from a file": "du -X../outside/secret.txt ok.txt",
    "E6 digits before a redirection": "cat 12</dev/null",
    "E6 a link read as magic": "file -bm12 ok.txt",
    "E6 a link read as patterns": "grep -f12 ok.txt",
}


@pytest.mark.parametrize("command", ESCAPES.values(), ids=ESCAPES.keys())
async def test_an_escape_never_runs_unasked_over_mcp(places: dict[str, Path], command: str) -> None:
    """The call ends denied, shows no secret, and its attempt was never allowed."""
    home = places["home"]
    shown = command.format(home=home, outside=places["outside"])
    async with stdio_client(home) as client:
        result = await client.call_tool(
            "shell_execute", {"command": shown, "cwd": str(places["root"])}
        )
    text = result_text(result)
    meta = result_meta(result)

    assert "denied" == meta["ledgerclaw/end"], text
    assert SECRET not in text
    assert OUTSIDE not in text
    session_id = meta["ledgerclaw/session_id"]
    decisions = events(home, session_id, "session.policy_evaluated")
    assert all(decision["decision"] != "allow" for decision in decisions), decisions
