"""Each failure class and state change of an upstream server, read back from the journal.

The servers are real processes (tests/upstream_servers/fault_server.py) reached over stdio
and Streamable HTTP on 127.0.0.1; the pipeline and the journal are the real ones.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.settings.mcp import ServerSettings
from adapters.settings.secrets_file import UpstreamSecrets
from adapters.upstream.link import LinkOptions
from domain.values.audience import Audience
from domain.values.receipts import OutcomeCategory
from tests.daemon_harness import free_port
from tests.upstream_rig import UpstreamRig, upstream_rig

FAULTS = str(Path(__file__).parents[2] / "upstream_servers" / "fault_server.py")
pytestmark = pytest.mark.anyio


def stdio(state: Path, *extra: str, **settings: Any) -> ServerSettings:
    """The fault server over stdio, recording each delivered call in `state`."""
    args = (FAULTS, "--transport", "stdio", "--state-file", str(state), *extra)
    settings = {"loading": "core", **settings}
    return ServerSettings(transport="stdio", command=sys.executable, args=args, **settings)


def deliveries(state: Path, tool: str) -> int:
    """How many calls of `tool` reached the server."""
    if not state.exists():
        return 0
    return sum(json.loads(line)["tool"] == tool for line in state.read_text().splitlines())


class HttpServer:
    """The fault server over Streamable HTTP as a subprocess; restartable on its port."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        self.port, self.extra, self.tmp = free_port(), extra, tmp
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Its MCP endpoint."""
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        """Start it and wait until it listens."""
        path = self.tmp / f"faults-{self.port}-{time.monotonic_ns()}.err"
        command = [sys.executable, FAULTS, "--transport", "http", "--port", str(self.port)]
        with path.open("wb") as log:
            self.process = subprocess.Popen(
                [*command, "--state-file", str(self.tmp / "http-state"), *self.extra],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        deadline = time.monotonic() + 20
        while b"READY" not in path.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                msg = f"the fault server did not start: {path.read_text()}"
                raise AssertionError(msg)
            time.sleep(0.05)

    def stop(self) -> None:
        """Kill it."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def http_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    """A fault server over HTTP, with the flags the test's parameter names."""
    server = HttpServer(tmp_path, *getattr(request, "param", ()))
    server.start()
    yield server
    server.stop()


def http(url: str, **settings: Any) -> ServerSettings:
    """Settings of an http server at `url`, its tools offered at once."""
    return ServerSettings(transport="http", url=url, **{"loading": "core", **settings})


def states(rig: UpstreamRig, server: str = "faults") -> list[str]:
    """The server's journaled states, oldest first."""
    return [str(change.state) for change in rig.states(server)]


async def test_a_server_is_connected_once_its_tools_are_listed(tmp_path: Path) -> None:
    """The catalog event names every tool with its digest; the tools are offered deferred."""
    settings = stdio(tmp_path / "s", loading="deferred")
    async with upstream_rig(tmp_path, {"faults": settings}) as rig:
        await rig.state("faults", "connected")
        [catalog] = rig.catalogs("faults")
        definition = rig.pipeline.dispatcher.tools.registry.get("faults/echo")
        before = rig.pipeline.dispatcher.views(Audience.PERSONAL, frozenset())["faults/echo"]
        loaded = await rig.call("load_tool", name="faults/echo")

    assert ["connecting", "connected"] == states(rig)
    assert {"echo", "add", "crash", "hang", "fail_declared"} <= set(catalog.added)
    assert [d.name for d in catalog.digests] == sorted(d.name for d in catalog.digests)
    assert all(len(d.digest) == 64 for d in catalog.digests)
    assert "deferred" == str(definition.loading)
    assert definition.effects.read_only
    assert (True, False) == (before.policy_visible, before.in_request)
    assert "faults/echo is now available from the next model request" == loaded.text


async def test_a_tool_declared_error_is_a_result_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`isError` is formatted for the model, logged, and the server stays connected."""
    caplog.set_level(logging.WARNING)
    async with upstream_rig(tmp_path, {"faults": stdio(tmp_path / "s")}) as rig:
        await rig.state("faults", "connected")
        result = await rig.call("faults/fail_declared", message="disk on fire")
        [receipt] = rig.receipts()

    expected = "Error: MCP tool 'faults/fail_declared' reported a failure: disk on fire"
    assert expected == result.text
    assert (OutcomeCategory.SUCCESS, "tool_error") == (receipt.outcome, receipt.upstream.failure)
    assert any("reported a failure: disk on fire" in r.getMessage() for r in caplog.records)
    assert ["connecting", "connected"] == states(rig)


async def test_an_application_error_is_returned_without_a_reconnect(tmp_path: Path) -> None:
    """A JSON-RPC error comes back as it is; no state changes."""
    async with upstream_rig(tmp_path, {"faults": stdio(tmp_path / "s")}) as rig:
        await rig.state("faults", "connected")
        result = await rig.call("faults/rpc_error", message="no such ledger")
        again = await rig.call("faults/echo", text="still here")
        first = rig.receipts()[0]

    assert "no such ledger" in result.text
    assert "application_error" == first.upstream.failure
    assert "still here" in again.text
    assert ["connecting", "connected"] == states(rig)


async def test_a_crash_mid_call_reconnects_once_and_never_replays(tmp_path: Path) -> None:
    """The crashed call ends `unknown`; the server is connected again; it ran exactly once."""
    state = tmp_path / "s"
    async with upstream_rig(tmp_path, {"faults": stdio(state)}) as rig:
        await rig.state("faults", "connected")
        crashed = await rig.call("faults/crash", text="once")
        await rig.wait(lambda: states(rig).count("connected") == 2, "the reconnect")
        after = await rig.call("faults/echo", text="after")
        receipt = rig.receipts()[0]

    assert OutcomeCategory.UNKNOWN == receipt.outcome
    assert ("transport_or_session", None) == (receipt.upstream.failure, receipt.upstream.delivered)
    assert "it was not sent again" in crashed.text
    assert "after" in after.text
    assert 1 == deliveries(state, "crash")
    assert ["connecting", "connected", "connecting", "connected"] == states(rig)
    assert "reconnecting" in rig.states("faults")[2].reason


async def test_a_call_that_times_out_is_not_repeated(tmp_path: Path) -> None:
    """A hang past the call timeout is a transport failure: unknown outcome, one delivery."""
    state = tmp_path / "s"
    settings = stdio(state, call_timeout_seconds=1)
    async with upstream_rig(tmp_path, {"faults": settings}) as rig:
        await rig.state("faults", "connected")
        await rig.call("faults/hang", seconds=30)
        await rig.wait(lambda: states(rig).count("connected") == 2, "the reconnect")
        receipt = rig.receipts()[0]

    assert OutcomeCategory.UNKNOWN == receipt.outcome
    assert 1 == deliveries(state, "hang")


async def test_a_slow_start_backs_off_and_calls_answer_unavailable(tmp_path: Path) -> None:
    """Past the start-up timeout: backoff with the next try journaled; a reload tries again."""
    settings = stdio(tmp_path / "s", "--start-delay", "5", startup_timeout_seconds=0.5)
    async with upstream_rig(tmp_path, {"faults": settings}) as rig:
        await rig.state("faults", "backoff")
        backoff = rig.states("faults")[-1]
        rig.manager.reload("faults")
        await rig.wait(lambda: len(rig.states("faults")) >= 3, "the reloaded attempt")

    assert ["connecting", "backoff", "connecting"] == states(rig)[:3]
    assert "did not start within 0.5 s" in backoff.reason
    assert "transport_or_session" == str(backoff.failure)
    assert backoff.next_retry_at is not None
    wait = (backoff.next_retry_at - backoff.changed_at).total_seconds()
    assert 24 <= wait <= 36
    assert 1 == backoff.failures


async def test_the_last_good_catalog_survives_a_restart_and_answers_unavailable(
    tmp_path: Path,
) -> None:
    """Tools stay offered from the journal while the server cannot start; calls say why."""
    async with upstream_rig(tmp_path / "a", {"faults": stdio(tmp_path / "s")}) as rig:
        await rig.state("faults", "connected")
    home = tmp_path / "a"
    broken = ServerSettings(transport="stdio", command=str(tmp_path / "missing"), loading="core")
    async with upstream_rig(home, {"faults": broken}) as again:
        await again.state("faults", "backoff")
        result = await again.call("faults/echo", text="hello")
        receipt = again.receipts()[-1]

    assert result.text.startswith("unavailable: faults is reconnecting (next try in ")
    assert OutcomeCategory.TRANSIENT_FAILURE == receipt.outcome
    assert "missing" in again.states("faults")[-1].reason


@pytest.mark.parametrize("era", ["auto", "legacy"])
async def test_list_changed_reconciles_the_catalog(tmp_path: Path, era: str) -> None:
    """A tool added upstream is journaled as added and offered, on either protocol era."""
    settings = stdio(tmp_path / "s", era=era)
    async with upstream_rig(tmp_path, {"faults": settings}) as rig:
        await rig.state("faults", "connected")
        await rig.call("faults/grow", name="sprout")
        await rig.wait(lambda: len(rig.catalogs("faults")) == 2, "the second catalog")
        latest = rig.catalogs("faults")[-1]
        offered = "faults/sprout" in rig.pipeline.dispatcher.tools.registry

    assert ("sprout",) == latest.added
    assert offered


@pytest.mark.parametrize("http_server", [("--era", "legacy")], indirect=True)
async def test_a_lost_http_session_is_a_session_failure(
    tmp_path: Path, http_server: HttpServer
) -> None:
    """A restarted server answers 404 for the old session: not delivered, reconnected once."""
    async with upstream_rig(tmp_path, {"faults": http(http_server.url)}) as rig:
        await rig.state("faults", "connected")
        http_server.stop()
        http_server.start()
        lost = await rig.call("faults/write_note", text="lost")
        await rig.wait(lambda: states(rig).count("connected") == 2, "the new session")
        kept = await rig.call("faults/write_note", text="kept")
        receipts = rig.receipts()

    assert OutcomeCategory.TRANSIENT_FAILURE == receipts[0].outcome
    assert (False, "transport_or_session") == (
        receipts[0].upstream.delivered,
        receipts[0].upstream.failure,
    )
    assert "was not delivered" in lost.text
    assert OutcomeCategory.SUCCESS == receipts[1].outcome
    assert "kept" in kept.text
    assert 0 == deliveries(tmp_path / "http-state", "write_note") - 1


@pytest.mark.parametrize("http_server", [("--auth", "bearer")], indirect=True)
async def test_a_bearer_challenge_needs_oauth(tmp_path: Path, http_server: HttpServer) -> None:
    """A 401 with a Bearer challenge: needs_auth, and the remedy is `mcp auth`."""
    async with upstream_rig(tmp_path, {"faults": http(http_server.url)}) as rig:
        await rig.state("faults", "needs_auth")
        change = rig.states("faults")[-1]

    assert "needs_auth" == str(change.state)
    assert "Run: ledgerclaw mcp auth faults" in change.reason
    assert change.next_retry_at is None


@pytest.mark.parametrize("http_server", [("--auth", "plain")], indirect=True)
async def test_a_plain_401_says_to_check_the_credentials(
    tmp_path: Path, http_server: HttpServer
) -> None:
    """A 401 without a challenge from a server without OAuth tokens: failed, check headers."""
    async with upstream_rig(tmp_path, {"faults": http(http_server.url)}) as rig:
        await rig.state("faults", "failed")
        change = rig.states("faults")[-1]

    assert "Check the configured credentials or headers" in change.reason
    assert "application_error" == str(change.failure)


@pytest.mark.parametrize(
    "http_server", [("--require-header", "X-Api-Key=k3y-v4lue")], indirect=True
)
async def test_secret_headers_reach_the_server_and_a_revoked_key_is_an_application_error(
    tmp_path: Path, http_server: HttpServer
) -> None:
    """Headers from secrets.toml let it connect; a later 401 on a call keeps it connected."""
    options = {"faults": LinkOptions(secrets=UpstreamSecrets(headers={"X-Api-Key": "k3y-v4lue"}))}
    async with upstream_rig(tmp_path, {"faults": http(http_server.url)}, options=options) as rig:
        await rig.state("faults", "connected")
        await rig.call("faults/revoke")
        refused = await rig.call("faults/echo", text="x")
        receipt = rig.receipts()[-1]

    assert "Check the configured credentials or headers" in refused.text
    assert (OutcomeCategory.ACCESS_DENIED, 401) == (receipt.outcome, receipt.upstream.status)
    assert ["connecting", "connected"] == states(rig)
