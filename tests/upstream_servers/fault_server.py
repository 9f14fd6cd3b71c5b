"""An MCP server that fails on purpose, for the upstream tests; run it as a script.

    python fault_server.py --transport stdio|http [--port N] [--state-file PATH]
        [--start-delay S] [--era any|legacy] [--auth none|bearer|plain]
        [--require-header NAME=VALUE]

Every tool call is appended to the state file (one JSON line) before it does anything, so a
test can count how often a call reached the server. Over http it prints READY on stderr once
it listens at http://127.0.0.1:PORT/mcp. `--era legacy` refuses the modern probe so that a
client falls back to the handshake and holds a session; it applies to http only (over stdio
the first message fixes the era; a test that wants the handshake there asks for it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp import MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from mcp_types.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND

UNAUTHORIZED = {
    "jsonrpc": "2.0",
    "error": {"code": -32000, "message": "Unauthorized: No API key provided"},
    "id": None,
}


class Faults:
    """The server's switches, shared by its tools and its HTTP guard."""

    def __init__(self, options: argparse.Namespace) -> None:
        self.options = options
        self.revoked = False

    def record(self, tool: str, arguments: dict[str, Any]) -> None:
        """Append one delivered call to the state file."""
        if self.options.state_file:
            with Path(self.options.state_file).open("a") as sink:
                sink.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
                sink.flush()
                os.fsync(sink.fileno())


def build(faults: Faults) -> MCPServer:  # noqa: C901 - one nested function per tool
    """The server and its tools."""

    async def legacy_only(ctx: Any, call_next: Any) -> Any:
        if faults.options.era == "legacy" and ctx.method == "server/discover":
            raise MCPError(METHOD_NOT_FOUND, "Method not found")
        return await call_next(ctx)

    server = MCPServer("faults", version="1", log_level="WARNING", middleware=[legacy_only])
    read_only = ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )

    @server.tool(annotations=read_only, description="Say the text back.")
    def echo(text: str) -> str:
        faults.record("echo", {"text": text})
        return text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        faults.record("add", {"a": a, "b": b})
        return a + b

    @server.tool(description="Keep a note (a change outside the session).")
    def write_note(text: str) -> str:
        faults.record("write_note", {"text": text})
        return f"noted: {text}"

    @server.tool(description="Die in the middle of the call.")
    def crash(text: str) -> str:
        faults.record("crash", {"text": text})
        os._exit(3)

    @server.tool(description="Never answer.")
    async def hang(seconds: float = 3600) -> str:
        faults.record("hang", {"seconds": seconds})
        await anyio.sleep(seconds)
        return "woke"

    @server.tool(description="Report a failure in the tool's own words.")
    def fail_declared(message: str) -> CallToolResult:
        faults.record("fail_declared", {"message": message})
        return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)

    @server.tool(description="Answer with a JSON-RPC error.")
    def rpc_error(message: str) -> str:
        faults.record("rpc_error", {"message": message})
        raise MCPError(INVALID_PARAMS, message)

    @server.tool(description="Refuse every request from now on (HTTP 401).")
    def revoke() -> str:
        faults.record("revoke", {})
        faults.revoked = True
        return "revoked"

    @server.tool(description="Add a tool and tell the clients the list changed.")
    async def grow(name: str, ctx: Context) -> str:
        faults.record("grow", {"name": name})

        def sprout(text: str) -> str:
            return text

        server.add_tool(sprout, name=name, description=f"The tool {name}, grown at run time.")
        await ctx.notify_tools_changed()
        session = getattr(ctx, "session", None)
        if session is not None:
            # A modern-era request has no session to tell: its clients listen instead.
            with contextlib.suppress(Exception):
                await session.send_tool_list_changed()
        return f"grew {name}"

    @server.tool(description="Answer with COUNT numbered lines.")
    def big(count: int) -> str:
        faults.record("big", {"count": count})
        return "\n".join(f"line {n}" for n in range(count))

    return server


class Guard:
    """The HTTP answers that come before MCP: 401s with and without a challenge."""

    def __init__(self, app: Any, faults: Faults) -> None:
        self.app, self.faults = app, faults

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Refuse a request as the options say, else serve it."""
        if scope["type"] != "http" or scope["path"].rstrip("/") != "/mcp":
            await self.app(scope, receive, send)
            return
        options = self.faults.options
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        refuse = self.faults.revoked or options.auth == "plain"
        if options.require_header:
            name, _, value = options.require_header.partition("=")
            refuse = refuse or headers.get(name.lower()) != value
        if options.auth == "bearer":
            port = options.port
            challenge = (
                f'Bearer resource_metadata="http://127.0.0.1:{port}'
                '/.well-known/oauth-protected-resource/mcp"'
            )
            await _answer(send, 401, {"error": "invalid_token"}, [("www-authenticate", challenge)])
            return
        if refuse:
            await _answer(send, 401, UNAUTHORIZED)
            return
        await self.app(scope, receive, send)


async def _answer(
    send: Any, status: int, body: dict[str, Any], extra: list[tuple[str, str]] | None = None
) -> None:
    headers = [(b"content-type", b"application/json")]
    headers += [(k.encode(), v.encode()) for k, v in extra or ()]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


def main() -> None:
    """Parse the options, wait the start delay, serve."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state-file", default="")
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--era", choices=("any", "legacy"), default="any")
    parser.add_argument("--auth", choices=("none", "bearer", "plain"), default="none")
    parser.add_argument("--require-header", default="")
    options = parser.parse_args()
    time.sleep(options.start_delay)
    faults = Faults(options)
    server = build(faults)
    if options.transport == "stdio":
        server.run("stdio")
        return
    app = Guard(server.streamable_http_app(), faults)

    class Ready(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            sys.stderr.write("READY\n")
            sys.stderr.flush()

    config = uvicorn.Config(app, host="127.0.0.1", port=options.port, log_level="warning")
    asyncio.run(Ready(config).serve())


if __name__ == "__main__":
    main()
