"""Approvals answered by the MCP client itself (elicitation), over stdio and over HTTP."""

from __future__ import annotations

import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.daemon_harness import (
    RunningDaemon,
    cli_json,
    http_client,
    result_meta,
    result_text,
    run_cli,
    start_daemon,
    stdio_client,
    wait_for,
    write_governed_config,
)
from tests.integration.daemon.journal_view import events

Connect = Callable[..., AbstractAsyncContextManager[Client]]
CLIENT = types.Implementation(name="elicit-tester", version="1.0")
ONCE = types.ElicitResult(action="accept", content={"decision": "approve once"})
SESSION = types.ElicitResult(action="accept", content={"decision": "approve for this session"})
DENY = types.ElicitResult(action="accept", content={"decision": "deny"})
DECLINE = types.ElicitResult(action="decline")
CANCEL = types.ElicitResult(action="cancel")


class Asker:
    """A client's elicitation callback that gives the scripted answers and keeps the questions."""

    def __init__(self, *answers: types.ElicitResult) -> None:
        self.answers = list(answers)
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(
        self, _context: object, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        """Record the question and give the next answer."""
        self.asked.append(params)
        return self.answers.pop(0)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One home and its trusted work directory, shared by this module's tests."""
    base = tmp_path_factory.mktemp("elicitation")
    work = (base / "work").resolve()
    work.mkdir()
    home = base / "home"
    write_governed_config(home, work)
    return home, work


@pytest.fixture(scope="module")
def daemon(place: tuple[Path, Path]) -> Iterator[RunningDaemon]:
    """A running daemon on the shared home, with one paired device."""
    running = start_daemon(place[0])
    running.pair()
    yield running
    assert 0 == running.stop()


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, place: tuple[Path, Path]) -> Connect:
    """Opens a client (`mode`, options) over this test's transport, as `elicit-tester`."""
    home = place[0]
    if request.param == "http":
        daemon: RunningDaemon = request.getfixturevalue("daemon")

        def over_http(mode: str, **options: Any) -> AbstractAsyncContextManager[Client]:
            return http_client(daemon, mode=mode, client_info=CLIENT, **options)

        return over_http

    def over_stdio(mode: str, **options: Any) -> AbstractAsyncContextManager[Client]:
        return stdio_client(home, mode=mode, client_info=CLIENT, **options)

    return over_stdio


@pytest.fixture
def target(place: tuple[Path, Path]) -> Path:
    """A file to write, in a directory of its own under the trusted work directory."""
    return Path(tempfile.mkdtemp(dir=place[1])) / "out.txt"


@asynccontextmanager
async def cli_approves(home: Path) -> AsyncIterator[list[dict[str, Any]]]:
    """Approve the next pending approval from the command line; yields what it listed."""
    listed: list[dict[str, Any]] = []

    def operator() -> None:
        wait_for(lambda: bool(cli_json(home, "approvals", "list")), what="a pending approval")
        listed.extend(cli_json(home, "approvals", "list"))
        done = run_cli(home, "approvals", "approve", listed[0]["id"])
        assert done.returncode == 0, done.stderr

    thread = threading.Thread(target=operator)
    thread.start()
    try:
        yield listed
    finally:
        thread.join()


@pytest.mark.anyio
async def test_approve_once_runs_the_write_and_names_the_client(
    connect: Connect, place: tuple[Path, Path], target: Path
) -> None:
    """The client is asked, answers `approve once`; the write runs, decided by the client."""
    asker = Asker(ONCE)
    async with connect("legacy", elicitation_callback=asker) as client:
        result = await client.call_tool("write_file", {"path": str(target), "content": "ok\n"})
    assert not result.is_error, result_text(result)
    assert "ok\n" == target.read_text()
    [question] = asker.asked
    assert "write_file" in question.message
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(place[0], session_id, "session.approval_decided")
    assert ("approved", "mcp client elicit-tester") == (decided["verdict"], decided["decided_by"])


@pytest.mark.anyio
async def test_approve_for_the_session_lets_the_same_call_run_again_unasked(
    connect: Connect, place: tuple[Path, Path], target: Path
) -> None:
    """`approve for this session`: an identical second call runs without a second question."""
    asker = Asker(SESSION)
    arguments = {"path": str(target), "content": "again\n"}
    async with connect("legacy", elicitation_callback=asker) as client:
        first = await client.call_tool("write_file", arguments)
        second = await client.call_tool("write_file", arguments)
    assert not first.is_error, result_text(first)
    assert not second.is_error, result_text(second)
    assert 1 == len(asker.asked)
    session_id = result_meta(first)["ledgerclaw/session_id"]
    assert session_id == result_meta(second)["ledgerclaw/session_id"]
    [decided] = events(place[0], session_id, "session.approval_decided")
    assert ("approved", "session") == (decided["verdict"], decided["scope"])
    assert 2 == len(events(place[0], session_id, "session.receipt_recorded"))


@pytest.mark.anyio
async def test_declining_or_denying_rejects_the_call(
    connect: Connect, place: tuple[Path, Path], target: Path
) -> None:
    """A declined question and a `deny` answer both reject the call; nothing is written."""
    asker = Asker(DECLINE, DENY)
    async with connect("legacy", elicitation_callback=asker) as client:
        declined = await client.call_tool("write_file", {"path": str(target), "content": "x"})
        denied = await client.call_tool("write_file", {"path": str(target), "content": "y"})
    for result in (declined, denied):
        assert result.is_error
        assert "approval_rejected" == result_meta(result)["ledgerclaw/denial"]
    assert not target.exists()
    session_id = result_meta(declined)["ledgerclaw/session_id"]
    decided = events(place[0], session_id, "session.approval_decided")
    assert [("rejected", "mcp client elicit-tester")] * 2 == [
        (d["verdict"], d["decided_by"]) for d in decided
    ]


@pytest.mark.anyio
async def test_a_dismissed_question_leaves_the_approval_to_the_cli(
    connect: Connect, place: tuple[Path, Path], target: Path
) -> None:
    """The client cancels the question; the call keeps waiting and the CLI approves it."""
    asker = Asker(CANCEL)
    async with (
        connect("legacy", elicitation_callback=asker) as client,
        cli_approves(place[0]),
    ):
        result = await client.call_tool("write_file", {"path": str(target), "content": "cli\n"})
    assert not result.is_error, result_text(result)
    assert 1 == len(asker.asked)
    assert "cli\n" == target.read_text()
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(place[0], session_id, "session.approval_decided")
    assert "cli (local control)" == decided["decided_by"]


@pytest.mark.anyio
async def test_a_modern_era_client_is_never_asked_and_the_cli_decides(
    connect: Connect, place: tuple[Path, Path], target: Path
) -> None:
    """Modern-era requests carry no server-to-client requests: only the CLI can answer."""
    asker = Asker()
    async with (
        connect("auto", elicitation_callback=asker) as client,
        cli_approves(place[0]) as listed,
    ):
        result = await client.call_tool("write_file", {"path": str(target), "content": "m\n"})
    assert not result.is_error, result_text(result)
    assert [] == asker.asked
    assert "m\n" == target.read_text()
    assert "write_file" == listed[0]["tool"]
    session_id = result_meta(result)["ledgerclaw/session_id"]
    [decided] = events(place[0], session_id, "session.approval_decided")
    assert ("approved", "cli (local control)") == (decided["verdict"], decided["decided_by"])


@pytest.mark.anyio
async def test_concurrent_calls_of_one_session_are_each_asked(
    connect: Connect, place: tuple[Path, Path], target: Path
) -> None:
    """Two writes sent at once wait their turns; each asks its own request's client."""
    asker = Asker(ONCE, ONCE)
    second = target.with_name("second.txt")
    results: list[types.CallToolResult] = []
    async with connect("legacy", elicitation_callback=asker) as client:

        async def write(path: Path) -> None:
            results.append(
                await client.call_tool("write_file", {"path": str(path), "content": "x"})
            )

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(write, target)
            tasks.start_soon(write, second)
    assert [r.is_error for r in results] == [False, False], [result_text(r) for r in results]
    assert (target.read_text(), second.read_text()) == ("x", "x")
    assert len(asker.asked) == 2
    session_id = result_meta(results[0])["ledgerclaw/session_id"]
    deciders = {d["decided_by"] for d in events(place[0], session_id, "session.approval_decided")}
    assert deciders == {"mcp client elicit-tester"}


@pytest.mark.anyio
async def test_the_question_says_whom_approving_for_the_session_covers(
    connect: Connect, target: Path
) -> None:
    """Offering `approve for this session`, the question names the client and the boundary."""
    asker = Asker(ONCE)
    async with connect("legacy", elicitation_callback=asker) as client:
        await client.call_tool("write_file", {"path": str(target), "content": "x"})
    [question] = asker.asked

    assert "'approve for this session' covers" in question.message
    assert "client 'elicit-tester'" in question.message
    over_http = "the requests of MCP session " in question.message and "on device dev_" in (
        question.message
    )
    assert over_http or " of stdio server pid " in question.message, question.message
