"""OAuth for upstream MCP servers: stored tokens, daemon connections, `mcp auth`; adapter layer.

`ledgerclaw mcp auth SERVER` runs the SDK's authorization-code flow (PKCE, dynamic
registration) with a loopback redirect, proves the tokens with a `tools/list`, and only then
stores them in `<home>/credentials/mcp/SERVER.json`: owner-only, under a tree no tool may read.
The daemon's connections use those tokens and refresh them by themselves; they never start an
interactive flow, and fail with `AuthorizationNeededError` when one is needed.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import anyio
import httpx2
from mcp import Client, MCPError
from mcp.client.auth import (
    AuthorizationCodeResult,
    OAuthClientProvider,
    OAuthFlowError,
    TokenStorage,
)
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl, BaseModel, ValidationError

from adapters.upstream.oauth_callback import LoopbackCallback, loopback_callback
from domain.errors import LedgerclawError
from domain.upstream.catalog import SERVER_NAME

logger = logging.getLogger(__name__)
CLIENT_NAME = "ledgerclaw"
_HTTP_TIMEOUT = httpx2.Timeout(30, read=300)
_EARLY_SECONDS = 30.0
"""Refresh this long before expiry at most (a tenth of the lifetime for short tokens), so a
token never expires in flight: the SDK answers a 401 with a new authorization, not a refresh."""
_E = TypeVar("_E", bound=BaseException)


def token_directory(home_root: Path) -> Path:
    """Where OAuth tokens of upstream servers live: inside the protected credentials tree."""
    return home_root / "credentials" / "mcp"


class AuthorizationNeededError(LedgerclawError):
    """An upstream needs an interactive authorization: no tokens, or they can no longer refresh."""

    def __init__(self, server: str) -> None:
        self.server = server
        super().__init__(
            f"MCP server {server} needs authorizing. Run: ledgerclaw mcp auth {server}"
        )


class AuthorizationFailedError(LedgerclawError):
    """`mcp auth` did not obtain working tokens; nothing was stored."""


class _TokenFile(BaseModel):
    """The JSON held for one server. `expires_at` is the access token's end, in Unix seconds."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None
    expires_at: float | None = None


def _token_path(directory: Path, server: str) -> Path:
    if not re.fullmatch(SERVER_NAME, server):
        msg = f"{server!r} is not an MCP server name"
        raise ValueError(msg)
    return directory / f"{server}.json"


def _expiry(tokens: OAuthToken) -> float | None:
    return None if tokens.expires_in is None else time.time() + tokens.expires_in


class FileTokenStorage:
    """The SDK's `TokenStorage` for one server, in `<directory>/<server>.json` (mode 0o600).

    Every write replaces the file atomically, so a crash leaves the old file or the new one.
    A client registration is kept in memory and written with the tokens it obtained, never
    alone. A file that cannot be read or parsed reads as no tokens, with a warning.
    """

    def __init__(self, directory: Path, server: str) -> None:
        self.directory = directory
        self.server = server
        self.path = _token_path(directory, server)
        self.expires_at: float | None = None
        """When the tokens last read or written expire (Unix seconds), if they say."""
        self._client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        """The stored tokens, if any."""
        stored = await anyio.to_thread.run_sync(self.load)
        self.expires_at = stored.expires_at
        return stored.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Store new tokens with the client registration they belong to."""
        stored = await anyio.to_thread.run_sync(self.load)
        record = _TokenFile(
            tokens=tokens,
            client_info=self._client_info or stored.client_info,
            expires_at=_expiry(tokens),
        )
        await anyio.to_thread.run_sync(self.save, record)
        self.expires_at = record.expires_at

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The client registration: a new one not yet stored, else the stored one."""
        return self._client_info or (await anyio.to_thread.run_sync(self.load)).client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep a new registration; it is written with the next tokens."""
        self._client_info = client_info

    def load(self) -> _TokenFile:
        """What the file holds; empty when it is missing, unreadable or corrupt."""
        record, problem = self._read()
        if problem is not None:
            logger.warning(
                "ignoring OAuth token file %s (%s); `ledgerclaw mcp auth %s` replaces it",
                self.path,
                problem,
                self.server,
            )
        return record

    def save(self, record: _TokenFile) -> None:
        """Write `record` owner-only: a temporary file beside it, fsync, then a rename."""
        _private_directory(self.directory)
        if self.path.exists() and self._read()[1] is not None:
            logger.warning("replacing unreadable OAuth token file %s", self.path)
        handle, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{self.server}.")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(record.model_dump_json(exclude_none=True).encode())
                out.flush()
                os.fsync(out.fileno())
            Path(temporary).replace(self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        _sync_directory(self.directory)

    def _read(self) -> tuple[_TokenFile, str | None]:
        try:
            return _TokenFile.model_validate_json(self.path.read_bytes()), None
        except FileNotFoundError:
            return _TokenFile(), None
        except OSError as error:
            return _TokenFile(), error.strerror or str(error)
        except ValidationError as error:
            return _TokenFile(), f"not a token file: {error.error_count()} problem(s)"


def _private_directory(directory: Path) -> None:
    """Create `directory` and its missing parents as 0o700; tighten it if it exists."""
    missing = [p for p in (directory, *directory.parents) if not p.exists()]
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)
    directory.chmod(0o700)


def _sync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def has_tokens(directory: Path, server: str) -> bool:
    """Whether `server` has stored tokens (a corrupt file has none)."""
    return FileTokenStorage(directory, server).load().tokens is not None


def forget(directory: Path, server: str) -> bool:
    """Remove the stored tokens of `server`; False when there were none."""
    path = _token_path(directory, server)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _refresh_at(expires_at: float | None, expires_in: int | None) -> float | None:
    """When to count a token as expired: a little before it is, so it never expires in flight."""
    if expires_at is None:
        return None
    return expires_at - min(_EARLY_SECONDS, (expires_in or 0) / 10)


class _EarlyExpiryContext(OAuthContext):
    """The SDK's OAuth context, counting tokens as expired a little before they are."""

    def update_token_expiry(self, token: OAuthToken) -> None:
        """Note when `token` should be refreshed."""
        self.token_expiry_time = _refresh_at(_expiry(token), token.expires_in)


class _Provider(OAuthClientProvider):
    """`OAuthClientProvider` that refreshes early and knows when stored tokens expire.

    With `needs_tokens` (a server name) it refuses to start without stored tokens and a
    registration, before any request: the SDK would otherwise register a new client first.
    """

    def __init__(  # noqa: PLR0913 - the SDK provider's own parameters
        self,
        url: str,
        metadata: OAuthClientMetadata,
        storage: TokenStorage,
        redirect: Callable[[str], Awaitable[None]],
        callback: Callable[[], Awaitable[AuthorizationCodeResult]],
        *,
        needs_tokens: str | None = None,
    ) -> None:
        super().__init__(url, metadata, storage, redirect, callback)
        self.context = _EarlyExpiryContext(url, metadata, storage, redirect, callback)
        self._needs_tokens = needs_tokens

    async def _initialize(self) -> None:
        # The SDK keeps no expiry with stored tokens, so after a restart it would send an
        # expired token, get 401 and start a new authorization instead of refreshing.
        await super()._initialize()
        tokens, storage = self.context.current_tokens, self.context.storage
        if self._needs_tokens is not None and (tokens is None or self.context.client_info is None):
            raise AuthorizationNeededError(self._needs_tokens)
        if tokens is not None and isinstance(storage, FileTokenStorage):
            self.context.token_expiry_time = _refresh_at(storage.expires_at, tokens.expires_in)


def connection_auth(directory: Path, server: str, url: str) -> httpx2.Auth:
    """OAuth for one daemon connection to `server` at `url`, from the stored tokens.

    It adds the stored access token, refreshes it (storing the new pair) shortly before it
    expires, and never opens anything: with no stored tokens or registration it raises
    `AuthorizationNeededError` before any request, and so it does when the server answers 401
    (a revoked token, a failed refresh), since the SDK answers a 401 with a new authorization,
    never with a refresh. Give all connections to one server in a process the same provider:
    the server may rotate refresh tokens, and a second provider would hold a spent one.

    The error is raised inside the SDK's HTTP transport task, not in the caller. The transport's
    task group fails, the task that entered `async with Client(...)` is cancelled, and an
    `ExceptionGroup` holding the error unwinds from that block (one level deep in mcp 2.3.0;
    `authorization_needed` looks through any depth and through causes). A `call_tool` awaiting
    in another task gets `MCPError(-32000, "Connection closed")`, which does not say why, and
    so do later calls on that client. On the 401 path the SDK also logs "OAuth flow error" at
    ERROR with the traceback.
    """
    metadata = _client_metadata("http://127.0.0.1/callback")

    async def refuse(_: str) -> None:
        raise AuthorizationNeededError(server)

    async def never() -> AuthorizationCodeResult:
        raise AuthorizationNeededError(server)

    storage = FileTokenStorage(directory, server)
    return _Provider(url, metadata, storage, refuse, never, needs_tokens=server)


class _MemoryStorage:
    """Tokens of an authorization in progress: stored in the file only once they work."""

    def __init__(self) -> None:
        self.record = _TokenFile()

    async def get_tokens(self) -> OAuthToken | None:
        """The tokens obtained so far."""
        return self.record.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        """Keep new tokens."""
        self.record = self.record.model_copy(
            update={"tokens": tokens, "expires_at": _expiry(tokens)}
        )

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        """The registration made by this authorization."""
        return self.record.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        """Keep the registration."""
        self.record = self.record.model_copy(update={"client_info": client_info})


async def authorize(  # noqa: PLR0913 - the flow's knobs are keyword-only
    directory: Path,
    server: str,
    url: str,
    *,
    show_url: Callable[[str], None],
    timeout_seconds: float = 300,
    scope: str | None = None,
) -> None:
    """Authorize ledgerclaw at `server` interactively and store working tokens.

    `show_url` gets the authorization URL to open in a browser, in a worker thread (it may
    block; the listener keeps answering); the browser comes back to a loopback listener on
    127.0.0.1. A fresh client is registered every time, since its redirect URI names this
    run's port. `scope` replaces the scope the SDK picked from the server's
    challenge or metadata. Raises `AuthorizationFailedError` on a timeout, a refusal, a state
    mismatch, an unreachable server or tokens that do not work; the stored file is then as it was.
    """
    target = FileTokenStorage(directory, server)
    storage = _MemoryStorage()
    try:
        async with loopback_callback() as callback:
            handlers = _interactive(callback, server, show_url, timeout_seconds, scope)
            metadata = _client_metadata(callback.redirect_uri)
            provider = _Provider(url, metadata, storage, *handlers)
            async with (
                httpx2.AsyncClient(auth=provider, timeout=_HTTP_TIMEOUT) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                await client.list_tools()
    except Exception as error:
        failure = _failure(error, server, url)
        if failure.__traceback__ is not None:  # raised in the flow, and says it all
            raise failure from None
        raise failure from error
    if storage.record.tokens is None:
        msg = f"{server} at {url} did not ask for an OAuth authorization; nothing was stored"
        raise AuthorizationFailedError(msg)
    await anyio.to_thread.run_sync(target.save, storage.record)


def _interactive(
    callback: LoopbackCallback,
    server: str,
    show_url: Callable[[str], None],
    timeout_seconds: float,
    scope: str | None,
) -> tuple[Callable[[str], Awaitable[None]], Callable[[], Awaitable[AuthorizationCodeResult]]]:
    """The redirect and callback handlers of an interactive authorization."""

    async def redirect(authorization_url: str) -> None:
        shown = authorization_url if scope is None else _with_scope(authorization_url, scope)
        await anyio.to_thread.run_sync(show_url, shown)

    async def answer() -> AuthorizationCodeResult:
        with anyio.move_on_after(timeout_seconds):
            got = await callback.wait()
            if got.error is not None:
                detail = f": {got.error_description}" if got.error_description else ""
                msg = f"{server} refused the authorization ({got.error}{detail})"
                raise AuthorizationFailedError(msg)
            return AuthorizationCodeResult(code=got.code or "", state=got.state, iss=got.iss)
        msg = f"no answer from the browser within {timeout_seconds:g} seconds"
        raise AuthorizationFailedError(msg)

    return redirect, answer


def _client_metadata(redirect_uri: str) -> OAuthClientMetadata:
    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",  # noqa: S106 - a public client: no secret
    )


def _with_scope(url: str, scope: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "scope"] + [("scope", scope)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _failure(error: Exception, server: str, url: str) -> AuthorizationFailedError:
    """What went wrong in an authorization, said for the person who ran it."""
    if (failed := find_error(error, AuthorizationFailedError)) is not None:
        return failed
    if (flow := find_error(error, OAuthFlowError)) is not None:
        return AuthorizationFailedError(f"the OAuth flow with {server} failed: {flow}")
    if (transport := find_error(error, httpx2.TransportError)) is not None:
        return AuthorizationFailedError(f"cannot reach {server} at {url}: {transport!r}")
    if (rpc := find_error(error, MCPError)) is not None:
        return AuthorizationFailedError(f"{server} refused the new tokens: {rpc}")
    return AuthorizationFailedError(f"authorizing {server} failed: {error!r}")


def _chain(error: BaseException) -> Iterator[BaseException]:
    """`error`, the members of every ExceptionGroup in it, and their causes and contexts."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)


def find_error(error: BaseException, kind: type[_E]) -> _E | None:
    """The first `kind` in `error`, its exception groups and its causes."""
    return next((e for e in _chain(error) if isinstance(e, kind)), None)


def authorization_needed(error: BaseException) -> bool:
    """Whether a connection failed because its server needs `ledgerclaw mcp auth`."""
    return find_error(error, AuthorizationNeededError) is not None
