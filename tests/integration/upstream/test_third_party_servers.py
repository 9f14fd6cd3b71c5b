"""Servers nobody here wrote, through the governed pipeline: time, git, and everything.

`mcp-server-time` and `mcp-server-git` come from the package index (the dev extra) and run
over stdio. `@modelcontextprotocol/server-everything` comes from npm: it is installed once
into a cache directory and run over stdio and Streamable HTTP; without Node or the package
these tests are skipped, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.sandbox import launch
from adapters.settings.mcp import ServerSettings
from domain.values.receipts import OutcomeCategory
from tests.daemon_harness import free_port
from tests.upstream_rig import upstream_rig

pytestmark = pytest.mark.anyio
EVERYTHING = "@modelcontextprotocol/server-everything"
NPM_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ledgerclaw-tests"
ENTRY = NPM_CACHE / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def everything() -> tuple[str | None, str]:
    """The path of server-everything's entry point, or None and why it is not here."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        return None, "Node is not installed here, so server-everything cannot run"
    if not ENTRY.exists():
        prefix = ENTRY.parents[4]  # the directory that holds node_modules/
        prefix.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", EVERYTHING],
                check=True,
                capture_output=True,
                timeout=180,
            )
        except (subprocess.SubprocessError, OSError) as error:
            return None, f"{EVERYTHING} could not be installed from npm: {error}"
        if not ENTRY.exists():
            return None, f"npm installed {EVERYTHING} without {ENTRY.relative_to(prefix)}"
    return str(ENTRY), ""


def time_server(**settings: object) -> ServerSettings:
    """mcp-server-time over stdio, its tools offered at once."""
    args = ("-m", "mcp_server_time", "--local-timezone", "UTC")
    return ServerSettings.model_validate(
        {"transport": "stdio", "command": sys.executable, "args": args, "loading": "core"}
        | settings
    )


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A git repository with one commit and one untracked file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    (repo / "draft.txt").write_text("not yet\n")
    return repo


async def test_the_time_server_answers_through_the_pipeline(tmp_path: Path) -> None:
    """convert_time runs governed (approved), with the server's own words in the result."""
    async with upstream_rig(tmp_path, {"time": time_server()}) as rig:
        await rig.state("time", "connected")
        result = await rig.call(
            "time/convert_time", source_timezone="UTC", time="12:00", target_timezone="Asia/Tokyo"
        )
        [receipt] = rig.receipts()

    assert '"datetime": "' in result.text
    assert "Asia/Tokyo" in result.text
    assert (OutcomeCategory.SUCCESS, "time") == (receipt.outcome, receipt.upstream.server)


async def test_the_git_server_reads_a_repository_and_bad_arguments_never_leave(
    tmp_path: Path, repository: Path
) -> None:
    """git_status sees the untracked file; a call missing its argument is refused here."""
    git = ServerSettings(
        transport="stdio",
        command=sys.executable,
        args=("-m", "mcp_server_git", "--repository", str(repository)),
        loading="core",
    )
    async with upstream_rig(tmp_path, {"git": git}) as rig:
        await rig.state("git", "connected", seconds=30)
        status = await rig.call("git/git_status", repo_path=str(repository))
        refused = await rig.call("git/git_status")
        receipts = rig.receipts()

    assert "draft.txt" in status.text
    assert OutcomeCategory.INVALID_INPUT == receipts[1].outcome
    assert receipts[1].upstream is None
    assert "repo_path" in refused.text


@pytest.mark.skipif(launch.abi_version() < 1, reason="the kernel offers no Landlock here")
async def test_a_sandboxed_server_cannot_read_outside_its_paths(tmp_path: Path) -> None:
    """Under the launcher the time server runs; the home's secrets stay out of its reach."""
    from adapters.home import Home  # noqa: PLC0415 - only this test builds a home's confinement
    from adapters.upstream.link import LinkOptions  # noqa: PLC0415
    from adapters.wiring.upstream import _confine  # noqa: PLC0415

    home = Home(tmp_path / "confined-home")
    home.root.mkdir(mode=0o700, parents=True, exist_ok=True)
    home.secrets.write_text("[redact]\nvalues = ['top-secret']\n")
    home.secrets.chmod(0o600)
    settings = time_server(sandbox=True)
    argv = _confine(home, "time", settings, [sys.executable, "-c", f"open({str(home.secrets)!r})"])
    denied = subprocess.run(argv, capture_output=True, text=True, check=False)
    options = {"time": LinkOptions(confine=lambda argv: _confine(home, "time", settings, argv))}
    async with upstream_rig(tmp_path, {"time": settings}, options=options) as rig:
        await rig.state("time", "connected", seconds=30)
        result = await rig.call("time/get_current_time", timezone="UTC")

    assert 0 != denied.returncode
    assert "PermissionError" in denied.stderr
    assert '"timezone": "UTC"' in result.text


@pytest.fixture(scope="module")
def everything_entry() -> str:
    """server-everything's entry point, or the test is skipped with the reason."""
    entry, reason = everything()
    if entry is None:
        pytest.skip(reason)
    return entry


async def test_server_everything_over_stdio(tmp_path: Path, everything_entry: str) -> None:
    """Its echo and its image tool come through; the image is named, not inlined."""
    settings = ServerSettings(
        transport="stdio", command="node", args=(everything_entry, "stdio"), loading="core"
    )
    async with upstream_rig(tmp_path, {"everything": settings}) as rig:
        await rig.state("everything", "connected", seconds=30)
        echo = await rig.call("everything/echo", message="hello there")
        image = await rig.call("everything/get-tiny-image")
        total = await rig.call("everything/get-sum", a=2, b=3)

    assert "Echo: hello there" == echo.text
    assert "[image: image/png, " in image.text
    assert "5" in total.text


@pytest.fixture
def everything_http(everything_entry: str, tmp_path: Path) -> Iterator[str]:
    """server-everything over Streamable HTTP on a free port; its URL."""
    port = free_port()
    log = tmp_path / "everything.err"
    with log.open("w") as sink:
        process = subprocess.Popen(
            ["node", everything_entry, "streamableHttp"],  # noqa: S607
            env={**os.environ, "PORT": str(port)},
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )
    deadline = time.monotonic() + 20
    while "listening on port" not in log.read_text():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"server-everything did not start: {log.read_text()}")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait(10)


async def test_server_everything_over_streamable_http(tmp_path: Path, everything_http: str) -> None:
    """Over HTTP it connects on the handshake era with a session, and answers."""
    settings = ServerSettings(transport="http", url=everything_http, loading="core")
    async with upstream_rig(tmp_path, {"everything": settings}) as rig:
        await rig.state("everything", "connected", seconds=30)
        echo = await rig.call("everything/echo", message="over http")
        protocol = rig.manager.links["everything"].protocol

    assert "Echo: over http" == echo.text
    assert protocol is not None
    assert not protocol.startswith("2026-07")
