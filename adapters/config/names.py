"""Names in the configuration that must come from a closed set: tools, gates and models.

Adapter layer. A misspelt tool name would otherwise leave the real tool exposed and unguarded
(`shell_exec = "deny"` denies nothing), so every name must be registered, exactly.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence

import orjson

from adapters.settings.agent import AgentSettings, ModelSettings
from adapters.settings.tools import ToolSettings
from domain.tools.registry import ToolRegistry

Location = tuple[int | str, ...]


def unknown_names(
    tools: ToolSettings, catalog: ToolRegistry, servers: Iterable[str] = ()
) -> list[tuple[Location, str]]:
    """Every tool or feature gate the `[tools]` section names that is not registered.

    A name `SERVER/...` (a tool or a glob) is known when `SERVER` is a configured upstream
    server: its catalog is the server's to list, at run time.

    Returns:
        The key of each unknown name and what is wrong with it, in file order.
    """
    names = [definition.name for definition in catalog]
    names += [
        name
        for name in (*tools.approval, *_audience_names(tools))
        if name.partition("/")[0] in set(servers) and "/" in name
    ]
    gates = sorted({gate for definition in catalog for gate in definition.feature_gates})
    problems: list[tuple[Location, str]] = [
        (("tools", "approval", name), f"unknown tool{_hint(name, names, 'tools')}")
        for name in tools.approval
        if name not in names
    ]
    for audience, setting in tools.audiences.items():
        for field, listed in (("allow", setting.allow or ()), ("deny", setting.deny)):
            problems += [
                (("tools", "audiences", str(audience), field, index), _unknown("tool", name, names))
                for index, name in enumerate(listed)
                if name not in names
            ]
    problems += [
        (("tools", "features", index), _unknown("feature gate", gate, gates))
        for index, gate in enumerate(tools.features)
        if gate not in gates
    ]
    return problems


def _audience_names(tools: ToolSettings) -> list[str]:
    return [
        name
        for setting in tools.audiences.values()
        for name in (*(setting.allow or ()), *setting.deny)
    ]


def unknown_models(
    agent: AgentSettings, models: dict[str, ModelSettings]
) -> list[tuple[Location, str]]:
    """Every model the `[agent]` section names that no `[models.NAME]` table defines."""
    known = sorted(models)
    named: list[tuple[Location, str]] = []
    if agent.model is not None:
        named.append((("agent", "model"), agent.model))
    named += [(("agent", "fallbacks", index), name) for index, name in enumerate(agent.fallbacks)]
    problems = [
        (loc, _unknown("model", name, known, "no [models.NAME] table defines one"))
        for loc, name in named
        if name not in known
    ]
    if agent.model is not None and agent.model in agent.fallbacks:
        index = agent.fallbacks.index(agent.model)
        problems.append(
            (("agent", "fallbacks", index), "the first model cannot be its own fallback")
        )
    return problems


def _unknown(kind: str, name: str, known: Sequence[str], none: str = "") -> str:
    hint = _hint(name, known, kind + "s", none)
    return f"unknown {kind} {orjson.dumps(name).decode()}{hint}"


def _hint(name: str, known: Sequence[str], plural: str, none: str = "") -> str:
    """The closest known name, else the whole list (or that there is none)."""
    if not known:
        return f" ({none})" if none else f" (no registered tool has {plural})"
    close = difflib.get_close_matches(name, known, n=1)
    if close:
        return f" (did you mean {close[0]}?)"
    return f" (known {plural}: {', '.join(known)})"
