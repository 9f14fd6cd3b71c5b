"""A provider wrapper that sends tool names the provider accepts; adapter layer.

OpenAI and Anthropic refuse `/` and `.` in a function name, which an upstream server's tools
carry (`time/get_current_time`). `SafeToolNames` maps the names of a request's tools and of
the calls in its transcript to wire names (`domain/agent/tool_names.py`), asks the provider it
wraps, and maps the names of the reply's calls back, so the loop, the journal and replay only
ever see the tools' own names. Nothing but names is rewritten, and a request whose names are
all safe goes through as it came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from domain.agent.failover import Candidate
from domain.agent.replies import ModelReply, ModelRequest
from domain.agent.tool_names import WireNames, wire_names
from domain.values.conversation import ChatMessage, ToolCallRequest


class WireProvider(Protocol):
    """A provider that talks to a server: it asks, lists the server's models and closes."""

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The model's reply to `request`, asked as `candidate`."""
        ...

    async def catalog(self, profile: str) -> list[str]:
        """The model ids the server lists."""
        ...

    async def aclose(self) -> None:
        """Close the provider's connections."""
        ...


class SafeToolNames:
    """Asks `inner` with provider-safe tool names and gives the reply the tools' own names."""

    def __init__(self, inner: WireProvider) -> None:
        self.inner = inner

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The inner provider's reply to `request` sent with wire names, named back."""
        names = request_names(request)
        if not names.changes_any:
            return await self.inner.reply(candidate, request, on_text)
        reply = await self.inner.reply(candidate, on_wire(request, names), on_text)
        return named_back(reply, names)

    async def catalog(self, profile: str) -> list[str]:
        """The model ids the inner provider's server lists."""
        return await self.inner.catalog(profile)

    async def aclose(self) -> None:
        """Close the inner provider's connections."""
        await self.inner.aclose()


def request_names(request: ModelRequest) -> WireNames:
    """The wire names of every tool a request names: those offered, then those called."""
    offered = [tool.name for tool in request.tools]
    called = [call.name for message in request.messages for call in message.tool_calls]
    return wire_names(list(dict.fromkeys([*offered, *called])))


def on_wire(request: ModelRequest, names: WireNames) -> ModelRequest:
    """`request` with its tools and its transcript's calls under their wire names."""
    tools = tuple(
        tool.model_copy(update={"name": names.to_wire(tool.name)}) for tool in request.tools
    )
    messages = tuple(_message_on_wire(message, names) for message in request.messages)
    return request.model_copy(update={"tools": tools, "messages": messages})


def named_back(reply: ModelReply, names: WireNames) -> ModelReply:
    """`reply` with its calls under the tools' own names."""
    if not reply.tool_calls:
        return reply
    calls = tuple(_renamed(call, names.from_wire(call.name)) for call in reply.tool_calls)
    return reply.model_copy(update={"tool_calls": calls})


def _message_on_wire(message: ChatMessage, names: WireNames) -> ChatMessage:
    # A tool message names only the call it answers (its id), never the tool.
    if not message.tool_calls:
        return message
    calls = tuple(_renamed(call, names.to_wire(call.name)) for call in message.tool_calls)
    return message.model_copy(update={"tool_calls": calls})


def _renamed(call: ToolCallRequest, name: str) -> ToolCallRequest:
    return call if call.name == name else call.model_copy(update={"name": name})
