"""The governed tools as an MCP server: every call goes through the dispatcher; adapter layer.

Built on the SDK's low-level `Server`, so the schemas and results on the wire are exactly
the pipeline's: the tool list is the calling session's policy-visible set, each tool with
the title and annotations of its definition; a call's text is the pipeline's one result,
and a denial or correction comes back as a tool error carrying the presenter's
instruction. Whether the call ran, and how its attempt ended, is in the result's `_meta`
under `ledgerclaw/...`. A tool the session cannot see is a protocol error (`-32602`), as
MCP specifies, though its attempt is journaled like any other; invalid arguments stay a
tool error, so the model can correct them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter, ValidationError

from adapters.mcp.callers import caller_of, has_connection
from adapters.mcp.elicitation import elicitor_for
from adapters.mcp.progress import progress_for
from adapters.runtime.approvals import CALL_ELICITOR, CALL_PROGRESS
from adapters.runtime.session_host import Caller, HostedSession, NotAdmittingError, SessionHost
from domain.errors import LedgerclawError
from domain.tools.definition import ToolDefinition
from domain.tools.result import ToolResult
from domain.values.authorization import DenialCategory
from domain.values.conversation import ToolName
from domain.values.runs import SessionCloseReason

log = logging.getLogger(__name__)
SERVER_NAME = "ledgerclaw"
INSTRUCTIONS = (
    "Governed file and shell tools. Every call is authorized, journaled and receipted; a"
    " denied call says why and what to do instead. Paths are relative to the project"
    " directory once set_working_directory declared one."
)
STOPPING = -32000
INVALID_PARAMS = types.INVALID_PARAMS
INTERNAL_ERROR = types.INTERNAL_ERROR
NAME_SHOWN = 128
"""How much of an unknown tool's name the error repeats."""
_TOOL_NAME: TypeAdapter[str] = TypeAdapter(ToolName)


class GovernedServer(Server[Any]):
    """The low-level server, advertising that its tool list changes (it does)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        *args: Any,  # noqa: ANN401 - passed through to the SDK unchanged
        **kwargs: Any,  # noqa: ANN401 - passed through to the SDK unchanged
    ) -> Any:  # noqa: ANN401 - the SDK's own options type
        """The SDK's options with `tools.listChanged` switched on."""
        options = notification_options or NotificationOptions(tools_changed=True)
        return super().create_initialization_options(options, *args, **kwargs)


def tool_of(definition: ToolDefinition) -> types.Tool:
    """A pipeline tool definition as an MCP tool, annotated from the same definition."""
    effects = definition.effects
    return types.Tool(
        name=definition.name,
        title=definition.title,
        description=definition.description,
        input_schema=dict(definition.parameters),
        annotations=types.ToolAnnotations(
            title=definition.title,
            read_only_hint=effects.read_only,
            destructive_hint=effects.destructive,
            idempotent_hint=effects.idempotent,
            open_world_hint=effects.open_world,
        ),
    )


def unknown_tool(name: str, session_id: str, result: ToolResult | None = None) -> MCPError:
    """The protocol error for a tool the session cannot see, naming its attempt if any."""
    shown = name if len(name) <= NAME_SHOWN else name[:NAME_SHOWN] + "…"
    data = {"ledgerclaw/session_id": session_id}
    if result is not None:
        data["ledgerclaw/attempt_id"] = str(result.attempt_id)
    return MCPError(INVALID_PARAMS, f"Unknown tool: {shown}", data)


def _journalable(name: str) -> bool:
    """Whether the journal can record an attempt under this name."""
    try:
        _TOOL_NAME.validate_python(name)
    except ValidationError:
        return False
    return True


def result_of(result: ToolResult, session_id: str) -> types.CallToolResult:
    """The pipeline's one result as an MCP tool result (an error unless it succeeded)."""
    meta: dict[str, Any] = {
        "ledgerclaw/session_id": session_id,
        "ledgerclaw/attempt_id": str(result.attempt_id),
        "ledgerclaw/end": str(result.end),
    }
    if result.outcome is not None:
        meta["ledgerclaw/outcome"] = str(result.outcome)
    if result.denial is not None:
        meta["ledgerclaw/denial"] = str(result.denial)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=result.text)],
        is_error=result.is_error,
        _meta=meta,
    )


def build_server(host: SessionHost, transport: str) -> GovernedServer:
    """An MCP server over `host`'s sessions for one transport (`stdio` or `http`)."""
    bus = InMemorySubscriptionBus()

    async def hosted_for(ctx: ServerRequestContext[Any, Any]) -> tuple[HostedSession, Caller]:
        caller = caller_of(ctx, transport)
        known = host.sessions.get(caller.key)
        try:
            hosted = await host.session_for(caller)
        except NotAdmittingError as error:
            raise MCPError(STOPPING, str(error)) from None
        if hosted is not known:
            _attach(hosted, ctx, caller, host, bus)
        hosted.last_used = anyio.current_time()  # any request keeps a session from going idle
        return hosted, caller

    async def on_list_tools(
        ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        hosted, _caller = await hosted_for(ctx)
        return types.ListToolsResult(tools=[tool_of(d) for d in host.tools_for(hosted)])

    async def on_call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        hosted, caller = await hosted_for(ctx)
        return await _call(host, hosted, caller, ctx, params)

    registry = host.dispatcher.tools.registry

    def input_schema(name: str) -> dict[str, Any] | None:
        # The SDK checks a stateless-era call's parameter header against the tool's schema;
        # without this it would list every tool before each call. Schemas are the same for
        # every caller; whether this caller may use the tool is decided in the pipeline.
        return dict(registry.get(name).parameters) if name in registry else None

    return GovernedServer(
        SERVER_NAME,
        version=_version(),
        instructions=INSTRUCTIONS,
        get_tool_input_schema=input_schema,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


async def _call(
    host: SessionHost,
    hosted: HostedSession,
    caller: Caller,
    ctx: ServerRequestContext[Any, Any],
    params: types.CallToolRequestParams,
) -> types.CallToolResult:
    """One `tools/call`: through the pipeline, with this request's elicitor and progress."""
    name, session_id = params.name, str(hosted.session_id)
    if not _journalable(name):
        # No attempt can be recorded under a name the journal cannot hold.
        raise unknown_tool(name, session_id)
    elicitor = elicitor_for(ctx, caller) if has_connection(caller) else None
    token = CALL_ELICITOR.set(elicitor)
    progress = CALL_PROGRESS.set(progress_for(ctx))
    try:
        result = await host.call(hosted, name, dict(params.arguments or {}))
    except NotAdmittingError as error:
        raise MCPError(STOPPING, str(error)) from None
    except LedgerclawError as error:
        log.warning("call %s failed in the daemon: %s", name, error)
        raise MCPError(INTERNAL_ERROR, f"the call failed in the daemon: {error}") from None
    finally:
        CALL_PROGRESS.reset(progress)
        CALL_ELICITOR.reset(token)
    if result.denial is DenialCategory.NOT_EXPOSED:
        # Unregistered, or hidden from this session: either way not in its tool list.
        raise unknown_tool(name, session_id, result)
    return result_of(result, session_id)


def _attach(
    hosted: HostedSession,
    ctx: ServerRequestContext[Any, Any],
    caller: Caller,
    host: SessionHost,
    bus: InMemorySubscriptionBus,
) -> None:
    """Wire a newly opened session to its connection: notifications and closing.

    A stateless-era request brings a fresh connection each time (over stdio too), so its
    teardown says nothing about the client: such sessions learn of tool changes through
    `subscriptions/listen` and end with the process or after the idle period.
    """
    if not has_connection(caller) or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:

        async def publish() -> None:
            await bus.publish(ToolsListChanged())

        hosted.on_tools_changed = publish
        return
    # The SDK keeps one Connection per handshake-era client (and per stdio process); its
    # exit stack unwinds when the client goes away: a DELETE, the idle timeout, EOF.
    connection = ctx.session._connection  # noqa: SLF001 - the SDK exposes no public handle
    hosted.on_tools_changed = _notifier(connection.send_tool_list_changed)

    async def closed() -> None:
        idle = anyio.current_time() - hosted.last_used >= host.idle_seconds
        reason = SessionCloseReason.IDLE if idle else SessionCloseReason.CLIENT_CLOSED
        await host.close(caller.key, reason)

    connection.exit_stack.push_async_callback(closed)


def _notifier(send: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
    async def notify() -> None:
        try:
            await send()
        except Exception:  # noqa: BLE001 - a client that cannot be told will list again
            log.info("could not notify a client that its tool list changed")

    return notify


def _version() -> str:
    try:
        return version("ledgerclaw")
    except PackageNotFoundError:
        return "0"
