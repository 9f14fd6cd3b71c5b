"""The hosted runs' budget: global slots for model requests and tool calls, lanes per run."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import anyio
import pytest

from adapters.runtime.budget import Budget

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    """The asyncio loop the daemon runs on."""
    return "asyncio"


class Gauge:
    """Counts bodies running at once, and the most there ever were."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self.release = anyio.Event()

    async def hold(self, slot: Callable[[], AbstractAsyncContextManager[None]]) -> None:
        """Run a body in `slot` until released."""
        async with slot():
            self.now += 1
            self.peak = max(self.peak, self.now)
            await self.release.wait()
            self.now -= 1


async def settle(gauge: Gauge, expected: int) -> None:
    """Let every task run until it blocks (in a slot, or waiting for one); check the count."""
    await anyio.wait_all_tasks_blocked()
    assert expected == gauge.now


async def test_model_requests_of_all_runs_share_the_global_slots() -> None:
    """Six runs asking at once: two hold a slot, the rest wait; all finish once released."""
    budget, gauge = Budget(model_requests=2), Gauge()
    async with anyio.create_task_group() as tasks:
        for _ in range(6):
            tasks.start_soon(gauge.hold, budget.lane_of_a_run().model_request)
        await settle(gauge, 2)
        held = (gauge.peak, budget.models_in_use)
        gauge.release.set()

    assert (2, 2) == held
    assert 0 == budget.models_in_use


async def test_a_run_holds_no_more_tool_slots_than_its_lane() -> None:
    """One run with five calls at once holds its lane of two; another run still gets slots."""
    budget, stuck, other = Budget(tool_calls=4, lane=2), Gauge(), Gauge()
    greedy, second = budget.lane_of_a_run(), budget.lane_of_a_run()
    async with anyio.create_task_group() as tasks:
        for _ in range(5):
            tasks.start_soon(stuck.hold, greedy.tool_call)
        await settle(stuck, 2)
        for _ in range(2):
            tasks.start_soon(other.hold, second.tool_call)
        await settle(other, 2)
        held = (stuck.peak, other.peak, budget.tools_in_use)
        stuck.release.set()
        other.release.set()

    assert (2, 2, 4) == held
    assert 0 == budget.tools_in_use


async def test_the_global_tool_budget_bounds_lanes_together() -> None:
    """Three runs with lanes of two against a budget of three: three calls run at once."""
    budget, gauge = Budget(tool_calls=3, lane=2), Gauge()
    async with anyio.create_task_group() as tasks:
        for _ in range(3):
            lane = budget.lane_of_a_run()
            for _ in range(2):
                tasks.start_soon(gauge.hold, lane.tool_call)
        await settle(gauge, 3)
        peak = gauge.peak
        gauge.release.set()

    assert 3 == peak


async def test_a_cancelled_wait_or_body_gives_its_slot_back() -> None:
    """Cancelling a holder and a waiter leaves every slot free."""
    budget = Budget(model_requests=1)
    lane = budget.lane_of_a_run()

    async def forever() -> None:
        async with lane.model_request():
            await anyio.sleep_forever()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(forever)
        tasks.start_soon(forever)
        await anyio.wait_all_tasks_blocked()
        held = budget.models_in_use
        tasks.cancel_scope.cancel()

    assert 1 == held
    assert 0 == budget.models_in_use
