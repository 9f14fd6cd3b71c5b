"""Which tools a model may see, per audience and per session; domain layer.

Exposure decides visibility only. A visible tool still goes through authorization on every
call, and a hidden tool is refused before any authorization starts.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from pydantic import Field

from domain.base import Value
from domain.text import ShortText
from domain.tools.definition import Loading, ToolDefinition
from domain.tools.registry import ToolRegistry
from domain.values.audience import Audience
from domain.values.authorization import ApprovalMode

NO_SUCH_TOOL = "no such tool"
"""The detail of a `not_exposed` denial whose name no tool is registered under; journals
of every version carry exactly this text, so readers can tell a made-up name from a
hidden tool."""


class AudienceTools(Value):
    """The tools one audience may see: all registered (allow None) or a named set, minus deny.

    A name with `*`, `?` or `[` is a glob: `time/*` names every tool of the server `time`.
    """

    allow: frozenset[ShortText] | None = None
    deny: frozenset[ShortText] = frozenset()

    def allows(self, name: str) -> bool:
        """Whether `name` is in the allowed set (every name when it is unset)."""
        return self.allow is None or _named(name, self.allow)

    def denies(self, name: str) -> bool:
        """Whether `name` is denied."""
        return _named(name, self.deny)


def _named(name: str, names: frozenset[str]) -> bool:
    if name in names:
        return True
    return any(fnmatchcase(name, n) for n in names if any(c in n for c in "*?["))


def _default_audiences() -> dict[Audience, AudienceTools]:
    return {
        Audience.PERSONAL: AudienceTools(),
        Audience.TEAM: AudienceTools(),
        Audience.PUBLIC: AudienceTools(deny=frozenset({"shell_execute"})),
    }


class ExposurePolicy(Value):
    """Audience rules, enabled feature gates and per-tool approval modes."""

    audiences: dict[Audience, AudienceTools] = Field(default_factory=_default_audiences)
    features: frozenset[ShortText] = frozenset()
    approval_modes: dict[ShortText, ApprovalMode] = Field(default_factory=dict)

    def approval_mode(self, definition: ToolDefinition) -> ApprovalMode | None:
        """The configured mode for a tool, else its definition's default."""
        return self.approval_modes.get(definition.name, definition.approval_mode)


class Visibility(Value):
    """Whether one tool is policy-visible and in the next model request, and why (not)."""

    name: ShortText
    policy_visible: bool
    in_request: bool
    reason: str


def visibility(
    definition: ToolDefinition,
    policy: ExposurePolicy,
    audience: Audience,
    loaded: Iterable[str] = (),
) -> Visibility:
    """Decide the visibility of one tool for one audience and the session's loaded tools."""
    name = definition.name
    rules = policy.audiences.get(audience, AudienceTools(allow=frozenset()))
    hidden = _hidden_because(definition, policy, audience, rules)
    if hidden:
        return Visibility(name=name, policy_visible=False, in_request=False, reason=hidden)
    if definition.loading is Loading.CORE:
        return Visibility(name=name, policy_visible=True, in_request=True, reason="core tool")
    if name in set(loaded):
        return Visibility(name=name, policy_visible=True, in_request=True, reason="loaded")
    return Visibility(
        name=name, policy_visible=True, in_request=False, reason="deferred: load it with load_tool"
    )


def _hidden_because(
    definition: ToolDefinition, policy: ExposurePolicy, audience: Audience, rules: AudienceTools
) -> str:
    missing = sorted(definition.feature_gates - policy.features)
    if missing:
        return f"feature gate {', '.join(missing)} is off"
    if definition.audiences is not None and audience not in definition.audiences:
        return f"not offered to {audience} sessions"
    if not rules.allows(definition.name):
        return f"not offered to {audience} sessions"
    if rules.denies(definition.name):
        return f"denied for {audience} sessions"
    if policy.approval_mode(definition) is ApprovalMode.DENY:
        return "approval mode is deny"
    return ""


def exposure(
    registry: ToolRegistry, policy: ExposurePolicy, audience: Audience, loaded: Iterable[str] = ()
) -> list[Visibility]:
    """The visibility of every registered tool, in registration order."""
    loaded_set = frozenset(loaded)
    return [visibility(d, policy, audience, loaded_set) for d in registry]


def request_tools(
    registry: ToolRegistry, policy: ExposurePolicy, audience: Audience, loaded: Iterable[str] = ()
) -> list[ToolDefinition]:
    """The definitions the next model request carries."""
    loaded_set = frozenset(loaded)
    return [d for d in registry if visibility(d, policy, audience, loaded_set).in_request]
