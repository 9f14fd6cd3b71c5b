"""Progress notifications for the MCP request being served; adapter layer.

A client asks for progress by putting a `progressToken` in the request's `_meta`; only
then is anything sent, on the request's own channel (stdio, or the request's response
stream over HTTP).
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import ServerRequestContext

from adapters.runtime.approvals import Progress


def progress_for(ctx: ServerRequestContext[Any, Any]) -> Progress | None:
    """A reporter bound to this request, or None when the client asked for no progress."""
    if ctx.meta is None or ctx.meta.get("progress_token") is None:
        return None

    async def report(progress: float, total: float | None, message: str) -> None:
        await ctx.session.report_progress(progress, total, message)

    return report
