"""Which calls of one model turn may run together; domain layer."""

from __future__ import annotations

from collections.abc import Sequence

from domain.tools.definition import Concurrency
from domain.tools.registry import ToolRegistry
from domain.values.conversation import ToolCallRequest


def batches(
    registry: ToolRegistry, calls: Sequence[ToolCallRequest]
) -> list[list[ToolCallRequest]]:
    """Split calls, in order, into groups: neighbouring parallel-safe calls share a group.

    A sequential or unknown tool always runs alone, so its effects are ordered against
    every call before and after it.
    """
    groups: list[list[ToolCallRequest]] = []
    for call in calls:
        parallel = (
            call.name in registry
            and registry.get(call.name).concurrency is Concurrency.PARALLEL_SAFE
        )
        if (
            parallel
            and groups
            and groups[-1][-1].name in registry
            and _parallel(registry, groups[-1][-1])
        ):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


def _parallel(registry: ToolRegistry, call: ToolCallRequest) -> bool:
    return (
        call.name in registry and registry.get(call.name).concurrency is Concurrency.PARALLEL_SAFE
    )
