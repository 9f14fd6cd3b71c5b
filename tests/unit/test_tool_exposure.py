"""The tool registry, exposure per audience and session, and batching of calls."""

from __future__ import annotations

import pytest

from domain.ids import CallId
from domain.tools.concurrency import batches
from domain.tools.definition import Concurrency, Loading, ToolDefinition, ToolEffects
from domain.tools.errors import DuplicateToolError, UnknownToolError
from domain.tools.exposure import AudienceTools, ExposurePolicy, exposure, request_tools
from domain.tools.registry import ToolRegistry
from domain.values.audience import Audience
from domain.values.authorization import ApprovalMode
from domain.values.conversation import ToolCallRequest

SCHEMA = {"type": "object", "properties": {}}


def tool(name: str, **facts: object) -> ToolDefinition:
    """A definition with a fixed schema."""
    return ToolDefinition(name=name, description=f"the {name} tool", parameters=SCHEMA, **facts)


REGISTRY = ToolRegistry(
    [
        tool("read_file", concurrency=Concurrency.PARALLEL_SAFE),
        tool("find_files", loading=Loading.DEFERRED, concurrency=Concurrency.PARALLEL_SAFE),
        tool("shell_execute", approval_mode=ApprovalMode.REQUEST),
        tool("web_fetch", feature_gates=frozenset({"web"})),
    ]
)


def test_a_tool_that_declares_no_effects_is_taken_at_its_most_cautious() -> None:
    """No declaration means: may destroy, unsafe to repeat, open world, as MCP's defaults."""
    effects = tool("anything").effects
    assert (False, True, False, True) == (
        effects.read_only,
        effects.destructive,
        effects.idempotent,
        effects.open_world,
    )


@pytest.mark.parametrize(
    "facts",
    [{"destructive": True, "idempotent": True}, {"destructive": False, "idempotent": False}],
)
def test_a_read_only_tool_cannot_also_destroy_or_be_unsafe_to_repeat(
    facts: dict[str, bool],
) -> None:
    """Contradictory hints are refused where the tool is defined."""
    with pytest.raises(ValueError, match="read-only"):
        ToolEffects(read_only=True, open_world=False, **facts)


def test_a_second_tool_with_the_same_name_is_refused() -> None:
    """Registration fails loudly on a duplicate name and keeps the first definition."""
    registry = ToolRegistry([tool("read_file")])
    with pytest.raises(DuplicateToolError):
        registry.register(ToolDefinition(name="read_file", description="x", parameters=SCHEMA))
    assert "the read_file tool" == registry.get("read_file").description


def test_an_unknown_name_is_a_typed_error() -> None:
    """Looking up a name that was never registered raises UnknownToolError."""
    with pytest.raises(UnknownToolError, match=r"^no tool named 'nope' is registered$"):
        REGISTRY.get("nope")


def test_core_tools_are_in_the_first_request_and_deferred_ones_wait() -> None:
    """A deferred tool is policy-visible but absent from the request until it is loaded."""
    views = {v.name: v for v in exposure(REGISTRY, ExposurePolicy(), Audience.PERSONAL)}
    assert (True, True) == (views["read_file"].policy_visible, views["read_file"].in_request)
    assert (True, False) == (views["find_files"].policy_visible, views["find_files"].in_request)
    loaded = {
        v.name: v for v in exposure(REGISTRY, ExposurePolicy(), Audience.PERSONAL, {"find_files"})
    }
    assert loaded["find_files"].in_request


def test_a_feature_gate_hides_a_tool_until_enabled() -> None:
    """A gated tool is hidden with a reason, and visible once its feature is on."""
    hidden = {v.name: v for v in exposure(REGISTRY, ExposurePolicy(), Audience.PERSONAL)}
    assert "feature gate web is off" == hidden["web_fetch"].reason
    policy = ExposurePolicy(features=frozenset({"web"}))
    shown = {v.name: v for v in exposure(REGISTRY, policy, Audience.PERSONAL)}
    assert shown["web_fetch"].in_request


@pytest.mark.parametrize(
    ("rules", "reason"),
    [
        (AudienceTools(allow=frozenset({"read_file"})), "not offered to team sessions"),
        (AudienceTools(deny=frozenset({"shell_execute"})), "denied for team sessions"),
    ],
)
def test_audience_rules_hide_tools_with_a_reason(rules: AudienceTools, reason: str) -> None:
    """An allow list or a deny list per audience hides shell_execute from team sessions."""
    policy = ExposurePolicy(audiences={Audience.TEAM: rules})
    views = {v.name: v for v in exposure(REGISTRY, policy, Audience.TEAM)}
    assert (False, reason) == (views["shell_execute"].policy_visible, views["shell_execute"].reason)


def test_an_audience_missing_from_a_configured_policy_gets_no_tools() -> None:
    """Rules for one audience only: another audience sees nothing, not everything."""
    policy = ExposurePolicy(
        audiences={Audience.PERSONAL: AudienceTools()}, features=frozenset({"web"})
    )
    views = exposure(REGISTRY, policy, Audience.TEAM)
    assert [] == [view.name for view in views if view.policy_visible]
    assert {"not offered to team sessions"} == {view.reason for view in views}
    assert [] == request_tools(REGISTRY, policy, Audience.TEAM)


def test_the_default_public_audience_has_no_shell() -> None:
    """Public sessions do not see shell_execute by default."""
    names = [d.name for d in request_tools(REGISTRY, ExposurePolicy(), Audience.PUBLIC)]
    assert ["read_file"] == names


def test_approval_mode_deny_hides_the_tool() -> None:
    """A tool whose approval mode is deny is never exposed."""
    policy = ExposurePolicy(approval_modes={"read_file": ApprovalMode.DENY})
    views = {v.name: v for v in exposure(REGISTRY, policy, Audience.PERSONAL)}
    assert "approval mode is deny" == views["read_file"].reason


def test_a_definition_renders_as_a_function_for_the_model() -> None:
    """The model schema carries the name, description and parameters."""
    rendered = tool("read_file").model_schema()
    assert {"name": "read_file", "description": "the read_file tool", "parameters": SCHEMA} == (
        rendered["function"]
    )
    assert "function" == rendered["type"]


def test_a_loaded_deferred_tool_joins_the_request() -> None:
    """After load_tool, the deferred tool is in the next request, after the core ones."""
    names = [d.name for d in request_tools(REGISTRY, ExposurePolicy(), Audience.PERSONAL)]
    loaded = request_tools(REGISTRY, ExposurePolicy(), Audience.PERSONAL, ["find_files"])
    assert (["read_file", "shell_execute"], ["read_file", "find_files", "shell_execute"]) == (
        names,
        [d.name for d in loaded],
    )


def _call(name: str, index: int) -> ToolCallRequest:
    return ToolCallRequest(call_id=CallId(f"c{index}"), name=name)


def test_neighbouring_parallel_safe_calls_share_a_batch() -> None:
    """Sequential and unknown tools run alone; parallel-safe neighbours run together."""
    names = ["read_file", "find_files", "shell_execute", "read_file", "nope", "read_file"]
    groups = batches(REGISTRY, [_call(n, i) for i, n in enumerate(names)])
    assert [
        ["read_file", "find_files"],
        ["shell_execute"],
        ["read_file"],
        ["nope"],
        ["read_file"],
    ] == [[c.name for c in group] for group in groups]
