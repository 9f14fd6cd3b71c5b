"""An upstream tool's result as text a model reads, and the messages of its failures; adapters.

Text parts are kept as they are; other parts are named (an image, a resource link) rather than
inlined; structured content is shown as JSON when the result has no text. A tool-declared
error (`isError`) becomes "Error: MCP tool 'SERVER/TOOL' reported a failure: ..." and a warning
in the log: it is the tool's own answer, not an exception.
"""

from __future__ import annotations

import base64
import json
import logging

from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

log = logging.getLogger(__name__)


def result_text(result: CallToolResult) -> str:
    """Everything a model should read of `result`, as text."""
    parts = [_part(part) for part in result.content]
    text = "\n".join(part for part in parts if part)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
    return text


def _part(part: object) -> str:
    if isinstance(part, TextContent):
        return part.text
    if isinstance(part, ImageContent | AudioContent):
        kind = "image" if isinstance(part, ImageContent) else "audio"
        return f"[{kind}: {part.mime_type}, {_size(part.data)} bytes]"
    if isinstance(part, ResourceLink):
        return f"[resource link: {part.uri}]"
    if isinstance(part, EmbeddedResource):
        inner = part.resource
        if isinstance(inner, TextResourceContents):
            return inner.text
        return f"[resource: {inner.uri}, {inner.mime_type or 'binary'}]"
    return f"[{type(part).__name__}]"


def _size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data)


def declared_failure(name: str, result: CallToolResult) -> str:
    """The text of a tool-declared error, logged as a warning."""
    text = result_text(result).strip() or "(no details)"
    message = f"MCP tool '{name}' reported a failure: {text}"
    log.warning("%s", message[:2000])
    return f"Error: {message}"


def unavailable(server: str, wait_seconds: float | None, state: str, reason: str = "") -> str:
    """The answer to a call while its server is not connected."""
    if wait_seconds is None:
        return f"unavailable: {server} is {state}" + (f": {reason}" if reason else "")
    return f"unavailable: {server} is reconnecting (next try in {max(0, round(wait_seconds))} s)"


def unauthorized(server: str, *, oauth_managed: bool) -> str:
    """The remedy for a 401: the OAuth flow for a server that uses it, else the credentials."""
    if oauth_managed:
        return f"{server} needs authorization. Run: ledgerclaw mcp auth {server}"
    return (
        f"{server} refused the credentials (HTTP 401). Check the configured credentials or"
        f" headers: [mcp.{server}] in secrets.toml, or [mcp.servers.{server}] headers"
    )
