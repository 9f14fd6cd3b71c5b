"""One upstream server's owner: it connects, lists, holds the session and answers calls.

Adapter layer. One task per server runs `ServerLink.run`. It enters the SDK client and
leaves it in that same task, whatever happens. The server is `connected` once its tools
were listed. A start that fails backs off; a link that breaks while connected is tried
again once at once, then backs off too. Every change of state goes through the recorder
into the journal, with its reason and its next retry time. A call is never sent twice: a
call that meets a broken connection ends there, and only later calls see the new session.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol, TextIO

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Tool, ToolListChangedNotification
from mcp_types.jsonrpc import INVALID_PARAMS
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from adapters.settings.mcp import ServerSettings
from adapters.settings.secrets_file import UpstreamSecrets
from adapters.tools.contract import ToolOutput, ToolRun
from adapters.upstream.failures import UNAUTHORIZED, Failure, classify
from adapters.upstream.oauth import authorization_needed
from adapters.upstream.results import declared_failure, result_text, unauthorized, unavailable
from adapters.upstream.transport import StatusKeepingTransport
from domain.upstream.catalog import UpstreamTool, offerable, qualified, selected
from domain.upstream.states import FailureClass, ServerState, backoff_seconds
from domain.values.receipts import OutcomeCategory, UpstreamCall

log = logging.getLogger(__name__)
FORBIDDEN = 403
LIST_PAGES = 50
"""Pages of `tools/list` read at most (a server that never stops paging is cut there)."""


class Recorder(Protocol):
    """Where a link's states and catalogs go: the journal."""

    async def state(  # noqa: PLR0913 - the facts of one change
        self,
        server: str,
        state: ServerState,
        reason: str,
        *,
        failure: FailureClass | None,
        next_retry_at: datetime | None,
        failures: int,
    ) -> None:
        """Record a state change."""
        ...

    async def catalog(self, server: str, tools: tuple[UpstreamTool, ...]) -> None:
        """Record a listing (an event only when it changed) and offer its tools."""
        ...


Confine = Callable[[list[str]], list[str]]
"""The argv that runs a stdio server's command under the sandbox."""
HasTokens = Callable[[], bool]
AuthFor = Callable[[], httpx2.Auth | None]


@dataclass
class LinkOptions:
    """What a link needs beyond its settings: credentials, logs, the sandbox, OAuth."""

    secrets: UpstreamSecrets | None = None
    errlog: Path | None = None
    confine: Confine | None = None
    has_tokens: HasTokens = lambda: False
    auth: AuthFor = lambda: None
    rng: random.Random = field(default_factory=random.Random)


def spec_of(tool: Tool) -> UpstreamTool:
    """A listed tool as the journal keeps it."""
    notes = tool.annotations
    read_only = bool(notes and notes.read_only_hint)
    return UpstreamTool(
        name=tool.name,
        title=tool.title or (notes.title if notes else None),
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {}),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        read_only=read_only,
        destructive=not read_only and (notes is None or notes.destructive_hint is not False),
        idempotent=read_only or bool(notes and notes.idempotent_hint),
        open_world=notes is None or notes.open_world_hint is not False,
    )


class ServerLink:
    """The owner of one upstream server's connection."""

    def __init__(
        self, name: str, settings: ServerSettings, recorder: Recorder, options: LinkOptions
    ) -> None:
        self.name, self.settings, self.recorder, self.options = name, settings, recorder, options
        self.state = ServerState.CONNECTING
        self.reason = "not connected yet"
        self.failures = 0
        self.retry_at: float | None = None
        """When the next attempt starts, on the monotonic clock; None: no attempt planned."""
        self.protocol: str | None = None
        self.client: Client | None = None
        self.oauth_challenged = False
        self._wake = anyio.Event()
        self._stopping = False
        self._drop: Failure | None = None
        self._reload = False
        self._relist = False
        self.stopped = anyio.Event()

    # -- control -------------------------------------------------------------------------

    def stop(self) -> None:
        """End the session and the owner."""
        self._stopping = True
        self._wake.set()

    def reload(self) -> None:
        """Connect again now, with the back-off reset (after `mcp auth`, or a fix)."""
        self._reload = True
        self._wake.set()

    def wait_seconds(self) -> float | None:
        """Seconds until the next attempt, None when none is planned."""
        return None if self.retry_at is None else max(0.0, self.retry_at - time.monotonic())

    @property
    def oauth_managed(self) -> bool:
        """Whether ledgerclaw holds OAuth tokens for the server or it sent a Bearer challenge."""
        return self.oauth_challenged or self.options.has_tokens()

    # -- the owner -----------------------------------------------------------------------

    async def run(self) -> None:
        """Own the server until `stop`: connect, hold, back off, as its state says."""
        try:
            if not self.settings.enabled:
                await self._record(ServerState.DISABLED, "enabled = false in its settings")
                while not self._stopping:
                    await self._sleep(None)
                return
            again = False
            while not self._stopping:
                self._reload = False
                why = "reconnecting after the connection broke" if again else "starting"
                await self._record(ServerState.CONNECTING, why, failures=self.failures)
                failure, was_connected = await self._session()
                if self._stopping:
                    break
                if failure is None or self._reload:
                    self.failures, again = 0, False
                    continue
                if was_connected and failure.kind is FailureClass.TRANSPORT:
                    # Reconnect once at once; only a second failure backs off.
                    self.failures, again = 0, True
                    continue
                again = False
                await self._after_failure(failure)
        finally:
            self.client = None
            self.stopped.set()

    async def _after_failure(self, failure: Failure) -> None:
        self.failures += 1
        if failure.status == UNAUTHORIZED:
            self.oauth_challenged = self.oauth_challenged or failure.bearer_challenge
            state = ServerState.NEEDS_AUTH if self.oauth_managed else ServerState.FAILED
            reason = unauthorized(self.name, oauth_managed=self.oauth_managed)
            await self._record(state, reason, failure=failure.kind, failures=self.failures)
            await self._sleep(None)
            return
        if failure.status == FORBIDDEN:
            reason = f"the server refused the connection: {failure.message}"
            await self._record(ServerState.FAILED, reason, failure=failure.kind)
            await self._sleep(None)
            return
        wait = backoff_seconds(self.failures, self.options.rng.uniform(-1, 1))
        await self._record(
            ServerState.BACKOFF,
            failure.message,
            failure=failure.kind,
            wait=wait,
            failures=self.failures,
        )
        await self._sleep(wait)

    async def _sleep(self, seconds: float | None) -> None:
        """Wait for the retry time (None: forever) or a reload or stop, whichever is first."""
        self.retry_at = None if seconds is None else time.monotonic() + seconds
        with anyio.move_on_after(float("inf") if seconds is None else seconds):
            while not (self._stopping or self._reload):
                await self._wait()
        self.retry_at = None

    async def _wait(self) -> None:
        await self._wake.wait()
        self._wake = anyio.Event()

    async def _session(self) -> tuple[Failure | None, bool]:
        """One connection from start to end: the failure that ended it, and if it was up."""
        connected, timed_out = False, False
        up = anyio.Event()
        failure: Failure | None = None
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as watch:

                async def watchdog() -> None:
                    nonlocal timed_out
                    with anyio.move_on_after(self.settings.startup_timeout_seconds):
                        await up.wait()
                        return
                    timed_out = True
                    scope.cancel()

                watch.start_soon(watchdog)
                try:
                    async with self._client() as client:
                        tools = await self._list(client)
                        connected = True
                        up.set()
                        await self._connected(client, tools)
                        failure = await self._hold(client)
                except Exception as error:  # noqa: BLE001 - whatever ended the client is classified
                    failure = classify(error)
                    if authorization_needed(error):
                        self.oauth_challenged = True
                        failure = Failure(
                            FailureClass.APPLICATION,
                            "no usable OAuth tokens",
                            status=UNAUTHORIZED,
                            challenge="Bearer",
                        )
                    log.info("upstream %s: %s (%s)", self.name, failure.message, failure.kind)
                finally:
                    self.client = None
                    watch.cancel_scope.cancel()
        if timed_out:
            seconds = self.settings.startup_timeout_seconds
            message = f"did not start within {seconds:g} s (startup_timeout_seconds)"
            failure = Failure(FailureClass.TRANSPORT, message, delivered=False)
        return failure, connected

    async def _connected(self, client: Client, tools: tuple[UpstreamTool, ...]) -> None:
        self.client, self.failures = client, 0
        self.protocol = client.protocol_version
        await self.recorder.catalog(self.name, tools)
        reason = f"listed {len(tools)} tool{'s' if len(tools) != 1 else ''} ({self.protocol})"
        await self._record(ServerState.CONNECTED, reason)

    async def _hold(self, client: Client) -> Failure | None:
        """Keep the session until it is dropped, reloaded or stopped; relist on a change."""
        async with anyio.create_task_group() as inner:
            if self.protocol in MODERN_PROTOCOL_VERSIONS:
                inner.start_soon(self._listen, client)
            while not (self._stopping or self._reload or self._drop):
                if self._relist:
                    self._relist = False
                    await self.recorder.catalog(self.name, await self._list(client))
                    continue
                await self._wait()
            inner.cancel_scope.cancel()
        dropped, self._drop = self._drop, None
        return dropped

    async def _listen(self, client: Client) -> None:
        """On the modern era, hear `tools/list_changed` through a listen stream."""
        try:
            async with client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self._changed()
        except Exception as error:  # noqa: BLE001 - a server without listen simply never changes
            log.debug("upstream %s offers no listen stream: %s", self.name, error)

    def _changed(self) -> None:
        self._relist = True
        self._wake.set()

    async def _on_message(self, message: object) -> None:
        if isinstance(getattr(message, "root", message), ToolListChangedNotification):
            self._changed()

    async def _list(self, client: Client) -> tuple[UpstreamTool, ...]:
        listed: list[Tool] = []
        cursor: str | None = None
        for _ in range(LIST_PAGES):
            page = await client.list_tools(cursor=cursor, cache_mode="bypass")
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        settings = self.settings
        kept = [
            spec_of(tool)
            for tool in listed
            if offerable(tool.name) and selected(tool.name, settings.allow, settings.deny)
        ]
        skipped = sorted(tool.name for tool in listed if not offerable(tool.name))
        if skipped:
            log.warning("upstream %s: tools with unusable names left out: %s", self.name, skipped)
        return tuple(kept)

    @asynccontextmanager
    async def _client(self) -> AsyncIterator[Client]:
        settings = self.settings
        mode = settings.era.value
        async with AsyncExitStack() as stack:
            if settings.transport == "stdio":
                errlog = stack.enter_context(self._errlog())
                argv = [settings.command or "", *settings.args]
                if self.options.confine is not None:
                    argv = self.options.confine(argv)
                params = StdioServerParameters(
                    command=argv[0], args=argv[1:], env=dict(settings.env) or None, cwd=settings.cwd
                )
                transport: Any = stdio_client(params, errlog=errlog)
            else:
                url = settings.url or ""
                http = httpx2.AsyncClient(
                    transport=StatusKeepingTransport(url),
                    headers=self._headers(),
                    auth=self.options.auth(),
                    timeout=httpx2.Timeout(30, read=300),
                )
                await stack.enter_async_context(http)
                transport = streamable_http_client(url, http_client=http)
            client = Client(transport, mode=mode, message_handler=self._on_message, cache=None)
            yield await stack.enter_async_context(client)

    def _headers(self) -> dict[str, str]:
        headers = dict(self.settings.headers)
        secrets = self.options.secrets
        if secrets is not None:
            headers |= secrets.headers
            if secrets.bearer_token is not None:
                headers["Authorization"] = f"Bearer {secrets.bearer_token}"
        return headers

    def _errlog(self) -> TextIO:
        path = self.options.errlog
        if path is None:
            return open("/dev/null", "w")  # noqa: PTH123 - closed by the exit stack
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path.open("a", encoding="utf-8")

    async def _record(
        self,
        state: ServerState,
        reason: str,
        *,
        failure: FailureClass | None = None,
        wait: float | None = None,
        failures: int = 0,
    ) -> None:
        self.state, self.reason = state, reason
        retry = None if wait is None else datetime.now(UTC) + timedelta(seconds=wait)
        if wait is not None:
            self.retry_at = time.monotonic() + wait
        await self.recorder.state(
            self.name, state, reason, failure=failure, next_retry_at=retry, failures=failures
        )

    # -- calls ---------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any], run: ToolRun) -> ToolOutput:
        """Send one call; its answer, or why there is none, as the pipeline's output."""
        del run  # an upstream call reaches nothing of the session's
        client = self.client
        if client is None or self.state is not ServerState.CONNECTED:
            text = unavailable(self.name, self.wait_seconds(), self.state, self.reason)
            return self._output(text, OutcomeCategory.TRANSIENT_FAILURE, tool, delivered=False)
        try:
            result = await client.call_tool(
                tool, arguments, read_timeout_seconds=self.settings.call_timeout_seconds
            )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:  # noqa: BLE001 - every failure is classified for the model
            return self._failed(tool, classify(error))
        return self._answered(tool, result)

    def _answered(self, tool: str, result: CallToolResult) -> ToolOutput:
        name = qualified(self.name, tool)
        if result.is_error:
            text = declared_failure(name, result)
            return self._output(text, OutcomeCategory.SUCCESS, tool, FailureClass.TOOL)
        return self._output(result_text(result), OutcomeCategory.SUCCESS, tool)

    def _failed(self, tool: str, failure: Failure) -> ToolOutput:
        name = qualified(self.name, tool)
        if failure.kind is FailureClass.TRANSPORT:
            self._drop = failure
            self._wake.set()
            if failure.delivered is False:
                text = f"{name} was not delivered: {failure.message}. It was not sent again."
                outcome = OutcomeCategory.TRANSIENT_FAILURE
            else:
                text = (
                    f"{name} got no answer: {failure.message}. It may or may not have run on"
                    f" {self.name}; it was not sent again."
                )
                outcome = OutcomeCategory.UNKNOWN
            return self._output(text, outcome, tool, failure.kind, failure)
        if failure.status == UNAUTHORIZED:
            self.oauth_challenged = self.oauth_challenged or failure.bearer_challenge
            text = unauthorized(self.name, oauth_managed=self.oauth_managed)
            return self._output(text, OutcomeCategory.ACCESS_DENIED, tool, failure.kind, failure)
        outcome = OutcomeCategory.TRANSIENT_FAILURE
        if failure.status == FORBIDDEN:
            outcome = OutcomeCategory.ACCESS_DENIED
        elif failure.message.startswith(f"{INVALID_PARAMS} "):
            outcome = OutcomeCategory.INVALID_INPUT
        text = f"Error: MCP server '{self.name}' answered {name} with an error: {failure.message}"
        return self._output(text, outcome, tool, failure.kind, failure)

    def _output(  # noqa: PLR0913 - one output's facts
        self,
        text: str,
        outcome: OutcomeCategory,
        tool: str,
        kind: FailureClass | None = None,
        failure: Failure | None = None,
        *,
        delivered: bool | None = None,
    ) -> ToolOutput:
        call = UpstreamCall(
            server=self.name,
            tool=tool,
            failure=None if kind is None else kind.value,
            status=None if failure is None else failure.status,
            delivered=delivered if failure is None else failure.delivered,
        )
        return ToolOutput(text=text, outcome=outcome, upstream=call)
