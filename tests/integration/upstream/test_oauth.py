"""OAuth for upstream MCP servers against a real OAuth-protected server in a subprocess."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from adapters.upstream.oauth import (
    AuthorizationFailedError,
    AuthorizationNeededError,
    FileTokenStorage,
    authorization_needed,
    authorize,
    connection_auth,
    find_error,
    forget,
    has_tokens,
    token_directory,
)
from tests.daemon_harness import free_port

pytestmark = pytest.mark.anyio
SERVER_SCRIPT = Path(__file__).parents[2] / "upstream_servers" / "oauth_server.py"
ACCESS_TTL = 2
NAME = "demo"


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The origin of a running OAuth-protected MCP server, for the whole module."""
    port = free_port()
    log = tmp_path_factory.mktemp("oauth-server") / "stderr"
    command = [sys.executable, str(SERVER_SCRIPT), "--port", str(port)]
    with log.open("w") as stderr:
        process = subprocess.Popen([*command, "--access-ttl", str(ACCESS_TTL)], stderr=stderr)
    try:
        deadline = time.monotonic() + 20
        while "READY" not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the OAuth test server did not start: {log.read_text()}")
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def url(origin: str) -> str:
    """The server's MCP endpoint."""
    return f"{origin}/mcp"


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """The token directory of a fresh home."""
    return token_directory(tmp_path / "home")


def browser(decision: str | None = None) -> Callable[[str], None]:
    """A browser that opens the authorization URL and follows it back to the loopback listener."""

    def open_url(authorization_url: str) -> None:
        extra = "" if decision is None else "&" + urlencode({"decision": decision})
        httpx2.get(authorization_url + extra, follow_redirects=True, timeout=10)

    return open_url


def stored(directory: Path) -> dict[str, dict[str, str]]:
    """The token file's JSON."""
    data: dict[str, dict[str, str]] = json.loads((directory / f"{NAME}.json").read_text())
    return data


async def whoami(directory: Path, url: str) -> dict[str, Any] | None:
    """What `whoami` answers over a fresh daemon-style connection."""
    http = httpx2.AsyncClient(auth=connection_auth(directory, NAME, url))
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        result = await client.call_tool("whoami", {})
    answer: dict[str, Any] | None = result.structured_content
    return answer


async def test_authorize_stores_working_tokens_owner_only(directory: Path, url: str) -> None:
    """An authorization stores tokens owner-only, nothing else, and closes its listener."""
    shown: list[str] = []

    def open_url(authorization_url: str) -> None:
        shown.append(authorization_url)
        browser()(authorization_url)

    await authorize(directory, NAME, url, show_url=open_url)
    callback = parse_qs(urlsplit(shown[0]).query)["redirect_uri"][0]
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(callback, timeout=5)

    assert True is has_tokens(directory, NAME)
    assert 0o600 == (directory / f"{NAME}.json").stat().st_mode & 0o777
    assert (0o700, 0o700) == (
        directory.stat().st_mode & 0o777,
        directory.parent.stat().st_mode & 0o777,
    )
    assert [f"{NAME}.json"] == [p.name for p in directory.iterdir()]


async def test_a_daemon_connection_uses_the_stored_tokens(directory: Path, url: str) -> None:
    """A connection calls a tool with the stored tokens, without any interaction."""
    await authorize(directory, NAME, url, show_url=browser())

    expected = {"result": stored(directory)["client_info"]["client_id"]}
    assert expected == await whoami(directory, url)


async def test_expired_tokens_refresh_by_themselves(directory: Path, url: str) -> None:
    """After expiry a new connection and a running one both refresh, and the file follows."""
    await authorize(directory, NAME, url, show_url=browser())
    first = stored(directory)["tokens"]["access_token"]
    await anyio.sleep(ACCESS_TTL + 0.1)
    client_id = stored(directory)["client_info"]["client_id"]

    http = httpx2.AsyncClient(auth=connection_auth(directory, NAME, url))
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        before = await client.call_tool("whoami", {})
        second = stored(directory)["tokens"]["access_token"]
        await anyio.sleep(ACCESS_TTL + 0.1)
        after = await client.call_tool("whoami", {})
    third = stored(directory)["tokens"]["access_token"]

    expected = ({"result": client_id}, {"result": client_id}, 3)
    assert expected == (
        before.structured_content,
        after.structured_content,
        len({first, second, third}),
    )


async def test_no_tokens_fail_the_connection_as_authorization_needed(
    directory: Path, url: str
) -> None:
    """Without stored tokens the connection fails, recognisably, before any request."""
    with pytest.raises(Exception) as raised:  # noqa: PT011 - the SDK wraps it in a group
        await whoami(directory, url)

    needed = find_error(raised.value, AuthorizationNeededError)
    expected = (True, True, "MCP server demo needs authorizing. Run: ledgerclaw mcp auth demo")
    assert expected == (
        isinstance(raised.value, ExceptionGroup),
        authorization_needed(raised.value),
        str(needed),
    )


async def test_revoked_tokens_fail_the_owner_and_close_the_caller(
    directory: Path, url: str, origin: str
) -> None:
    """Revoked mid-session, the owner unwinds needing authorization; a caller gets -32000."""
    await authorize(directory, NAME, url, show_url=browser())
    entered, stop = anyio.Event(), anyio.Event()
    clients: list[Client] = []
    failures: list[BaseException] = []

    async def owner() -> None:
        http = httpx2.AsyncClient(auth=connection_auth(directory, NAME, url))
        try:
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                clients.append(client)
                entered.set()
                await stop.wait()
        except Exception as error:  # noqa: BLE001 - the owner keeps whatever unwinds
            failures.append(error)

    async with anyio.create_task_group() as group:
        group.start_soon(owner)
        await entered.wait()
        httpx2.post(f"{origin}/revoke-all")
        with pytest.raises(MCPError) as raised:
            await clients[0].call_tool("whoami", {})
        stop.set()

    expected = (-32000, "Connection closed", False, True)
    actual = (
        raised.value.error.code,
        raised.value.error.message,
        authorization_needed(raised.value),
        authorization_needed(failures[0]),
    )
    assert expected == actual


async def test_a_refusal_fails_and_stores_nothing(directory: Path, url: str) -> None:
    """An `error=access_denied` redirect fails the authorization and writes no file."""
    with pytest.raises(AuthorizationFailedError) as raised:
        await authorize(directory, NAME, url, show_url=browser("deny"))

    expected = ("demo refused the authorization (access_denied)", False, False)
    actual = (str(raised.value), has_tokens(directory, NAME), (directory / f"{NAME}.json").exists())
    assert expected == actual


async def test_a_silent_browser_times_out_and_the_scope_is_asked_for(
    directory: Path, url: str
) -> None:
    """With no answer the authorization times out; the URL shown asks for the scope given."""
    shown: list[str] = []
    started = time.monotonic()
    with pytest.raises(AuthorizationFailedError) as raised:
        await authorize(
            directory, NAME, url, show_url=shown.append, timeout_seconds=0.5, scope="tools extra"
        )

    scope = parse_qs(urlsplit(shown[0]).query)["scope"]
    expected = ("no answer from the browser within 0.5 seconds", ["tools extra"], False, True)
    actual = (str(raised.value), scope, has_tokens(directory, NAME), time.monotonic() - started < 5)
    assert expected == actual


async def test_a_state_mismatch_fails_the_authorization(directory: Path, url: str) -> None:
    """A redirect whose state is not the one sent fails the authorization."""

    def forged(authorization_url: str) -> None:
        answer = httpx2.get(authorization_url, timeout=10).headers["location"]
        parts = urlsplit(answer)
        code = parse_qs(parts.query)["code"][0]
        callback = f"{parts.scheme}://{parts.netloc}{parts.path}"
        httpx2.get(callback, params={"code": code, "state": "forged"}, timeout=10)

    with pytest.raises(AuthorizationFailedError) as raised:
        await authorize(directory, NAME, url, show_url=forged)

    expected = (True, False)
    actual = ("State parameter mismatch" in str(raised.value), has_tokens(directory, NAME))
    assert expected == actual


async def test_an_unreachable_server_fails_the_authorization(directory: Path) -> None:
    """A server nobody answers for fails the authorization with the address it tried."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with pytest.raises(AuthorizationFailedError) as raised:
        await authorize(directory, NAME, url, show_url=browser())

    prefix = f"cannot reach demo at {url}: ConnectError("
    assert (True, False) == (str(raised.value).startswith(prefix), has_tokens(directory, NAME))


async def test_a_corrupt_file_reads_as_no_tokens(
    directory: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A corrupt token file reads as no tokens, is left as it is, and is warned about."""
    directory.mkdir(parents=True)
    (directory / f"{NAME}.json").write_text('{"tokens": {"access_tok')
    caplog.set_level(logging.WARNING, logger="adapters.upstream.oauth")

    tokens = await FileTokenStorage(directory, NAME).get_tokens()

    expected = (None, False, '{"tokens": {"access_tok', True)
    actual = (
        tokens,
        has_tokens(directory, NAME),
        (directory / f"{NAME}.json").read_text(),
        "ignoring OAuth token file" in caplog.text,
    )
    assert expected == actual


async def test_forget_removes_the_stored_tokens(directory: Path, url: str) -> None:
    """Forgetting removes the tokens once; a second time there is nothing to remove."""
    await authorize(directory, NAME, url, show_url=browser())

    assert (True, False, False) == (
        forget(directory, NAME),
        has_tokens(directory, NAME),
        forget(directory, NAME),
    )


def test_a_server_name_cannot_leave_the_directory(directory: Path) -> None:
    """A name that is not a server name is refused before any path is built from it."""
    with pytest.raises(ValueError, match="is not an MCP server name") as raised:
        has_tokens(directory, "../keys")

    assert "'../keys' is not an MCP server name" == str(raised.value)
