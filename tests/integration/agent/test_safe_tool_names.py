"""Upstream tool names on a provider's wire and back, against loopback servers: real HTTP, SSE."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adapters.home import Home, resolve_home
from adapters.providers.anthropic_messages import AnthropicProvider
from adapters.providers.openai_chat import OpenAICompatProvider
from adapters.providers.safe_names import SafeToolNames
from adapters.settings.agent import ModelSettings, ProviderKind
from adapters.settings.config_file import Config
from adapters.wiring.providers import ProviderSet
from domain.agent.failover import Candidate
from domain.agent.replies import ModelRequest, ToolSpec
from domain.ids import CallId
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from tests.fakes import anthropic_server, openai_server

KEY = "sk-test-0123456789abcdef"
NOW = "time/get_current_time"
WIRE_NOW = "time__get_current_time"
EARLIER = ToolCallRequest(call_id=CallId("call_0"), name=NOW, arguments={"timezone": "UTC"})
REQUEST = ModelRequest(
    prefix="You are a test.",
    messages=(
        ChatMessage(role=MessageRole.USER, content="What time is it in Paris and in UTC?"),
        ChatMessage(role=MessageRole.ASSISTANT, tool_calls=(EARLIER,)),
        ChatMessage(role=MessageRole.TOOL, content="12:00", call_id=CallId("call_0")),
    ),
    tools=(
        ToolSpec(name=NOW, description="The current time in a zone."),
        ToolSpec(name="read_file", description="Read a file."),
    ),
)
PARIS = {"timezone": "Europe/Paris"}


@pytest.fixture
def openai_fake() -> Iterator[openai_server.FakeServer]:
    """An OpenAI-compatible fake on a free loopback port."""
    with openai_server.serving(models=("gpt-test",)) as server:
        yield server


def keyed_home(root: Path) -> Home:
    """A home whose default credential profile holds the test key."""
    root.mkdir(parents=True)
    secrets = root / "secrets.toml"
    secrets.write_text(f'[profiles.default]\napi_key = "{KEY}"\n')
    secrets.chmod(0o600)
    return resolve_home({"LEDGERCLAW_HOME": str(root)})


@pytest.mark.anyio
async def test_an_openai_request_carries_wire_names_and_the_reply_comes_back_named(
    openai_fake: openai_server.FakeServer,
) -> None:
    """`time/get_current_time` is `time__get_current_time` on the wire and in the reply only."""
    openai_fake.enqueue(openai_server.tool_call_reply([("call_1", WIRE_NOW, PARIS)]))
    provider = SafeToolNames(OpenAICompatProvider(openai_fake.base_url, lambda _: KEY))

    reply = await provider.reply(Candidate("openai", "gpt-test", "default"), REQUEST)
    await provider.aclose()

    [sent] = openai_fake.requests
    assert [WIRE_NOW, "read_file"] == [t["function"]["name"] for t in sent.body["tools"]]
    assert [WIRE_NOW] == [c["function"]["name"] for c in sent.body["messages"][2]["tool_calls"]]
    assert [("call_1", NOW, PARIS)] == [(c.call_id, c.name, c.arguments) for c in reply.tool_calls]


@pytest.mark.anyio
async def test_a_configured_openai_model_is_asked_through_safe_names(
    tmp_path: Path, openai_fake: openai_server.FakeServer
) -> None:
    """The provider set wraps a server's provider: its requests carry wire names too."""
    openai_fake.enqueue(openai_server.tool_call_reply([("call_1", WIRE_NOW, PARIS)]))
    model = ModelSettings(
        provider=ProviderKind.OPENAI, model="gpt-test", base_url=openai_fake.base_url
    )
    providers = ProviderSet(Config(models={"served": model}), keyed_home(tmp_path / "home"), {})

    reply = await providers(Candidate("openai", "gpt-test", "default")).reply(
        Candidate("openai", "gpt-test", "default"), REQUEST
    )
    await providers.aclose()

    [sent] = openai_fake.requests
    assert [WIRE_NOW, "read_file"] == [t["function"]["name"] for t in sent.body["tools"]]
    assert [NOW] == [c.name for c in reply.tool_calls]


@pytest.mark.anyio
async def test_a_request_of_safe_names_reaches_the_server_as_it_was(
    openai_fake: openai_server.FakeServer,
) -> None:
    """Only `read_file` offered: the wrapper changes nothing on the way out or back."""
    openai_fake.enqueue(openai_server.tool_call_reply([("call_1", "read_file", {"path": "a"})]))
    plain = SafeToolNames(OpenAICompatProvider(openai_fake.base_url, lambda _: KEY))
    request = REQUEST.model_copy(
        update={"messages": REQUEST.messages[:1], "tools": REQUEST.tools[1:]}
    )

    reply = await plain.reply(Candidate("openai", "gpt-test", "default"), request)
    await plain.aclose()

    [sent] = openai_fake.requests
    assert ["read_file"] == [t["function"]["name"] for t in sent.body["tools"]]
    assert [("read_file", {"path": "a"})] == [(c.name, c.arguments) for c in reply.tool_calls]


@pytest.mark.anyio
async def test_an_anthropic_request_carries_wire_names_and_the_reply_comes_back_named() -> None:
    """The Messages API sees `time__get_current_time` in tools and tool_use; the reply does not."""
    with anthropic_server.serving(models=("claude-test",), api_key=KEY) as fake:
        fake.enqueue(anthropic_server.tool_use_message([("toolu_1", WIRE_NOW, PARIS)]))
        provider = SafeToolNames(AnthropicProvider(fake.base_url, lambda _profile: KEY))

        reply = await provider.reply(Candidate("anthropic", "claude-test", "default"), REQUEST)
        await provider.aclose()
        [sent] = fake.requests

    body: dict[str, Any] = dict(sent.body or {})
    assert [WIRE_NOW, "read_file"] == [t["name"] for t in body["tools"]]
    used = [
        block["name"]
        for message in body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_use"
    ]
    assert [WIRE_NOW] == used
    assert [("toolu_1", NOW, PARIS)] == [(c.call_id, c.name, c.arguments) for c in reply.tool_calls]
