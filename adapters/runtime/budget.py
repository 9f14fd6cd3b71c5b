"""The slots hosted runs share: model requests and tool calls at once; adapter layer.

The daemon hosts many sessions, each running one run at a time. Every model request waits
for a slot of the global model budget and every tool call for a slot of the global tool
budget, so a burst of sessions cannot open more requests than the providers (or the
machine) take. A session's own calls also pass its lane, which holds fewer slots than the
budget: one session whose calls hang holds at most its lane, and the others go on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio


@dataclass(frozen=True)
class Budget:
    """Global model-request and tool-call slots, and the size of each session's lane."""

    model_requests: int = 8
    tool_calls: int = 16
    lane: int = 4
    """The tool calls one session may run at once, within the global budget."""
    _models: anyio.CapacityLimiter = field(init=False, repr=False, compare=False)
    _tools: anyio.CapacityLimiter = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_models", anyio.CapacityLimiter(self.model_requests))
        object.__setattr__(self, "_tools", anyio.CapacityLimiter(self.tool_calls))

    def lane_of_a_run(self) -> Lane:
        """A new lane: what one run (one session at a time) passes for its calls."""
        return Lane(self, anyio.CapacityLimiter(min(self.lane, self.tool_calls)))

    @property
    def models_in_use(self) -> int:
        """Model requests holding a slot now."""
        return int(self._models.borrowed_tokens)

    @property
    def tools_in_use(self) -> int:
        """Tool calls holding a slot now."""
        return int(self._tools.borrowed_tokens)


@dataclass(frozen=True)
class Lane:
    """One run's way through the budget."""

    budget: Budget
    calls: anyio.CapacityLimiter

    @asynccontextmanager
    async def model_request(self) -> AsyncIterator[None]:
        """Hold a model-request slot for the body."""
        async with self.budget._models:  # noqa: SLF001 - the lane is the budget's own door
            yield

    @asynccontextmanager
    async def tool_call(self) -> AsyncIterator[None]:
        """Hold a slot of this run's lane, then of the global tool budget, for the body."""
        async with self.calls, self.budget._tools:  # noqa: SLF001 - as above
            yield
