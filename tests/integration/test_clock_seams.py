"""Where the product reads the Clock port, a fake clock decides the time; integration tests.

The approvals' `asked_at`, a device's revocation time, the ages of the audit filters and the
journal's conflict timeout all read a `Clock` given to them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest
from eventsourcing.persistence import IntegrityError

from adapters.api.operator import revoke_device
from adapters.api.queries import Filters
from adapters.errors import JournalConflictError
from adapters.journal.application import JournalApplication
from adapters.journal.journal import EventJournal
from adapters.runtime.approvals import PendingApprovals
from domain.authorization.approvals import ApprovalRequest
from domain.ids import AttemptId, CallId, DeviceId, SessionId
from domain.values.authorization import ApprovalMode, ApprovalVerdict
from tests.fakes import FakeClock, InMemoryJournal

NOON = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)


def test_an_age_filter_counts_back_from_the_clock():
    """`--since 1d` is a day before the clock's now; `--until 2h` two hours before it."""
    filters = Filters(since="1d", until="2h", clock=FakeClock(NOON))

    assert NOON - timedelta(days=1) == filters.lower
    assert NOON - timedelta(hours=2) == filters.upper


def test_a_pending_approval_was_asked_at_the_clocks_time():
    """The operator's listing shows the time the clock told when the call asked."""
    approvals = PendingApprovals(clock=FakeClock(NOON))
    asked = ApprovalRequest(
        session_id=SessionId.new(),
        attempt_id=AttemptId.new(),
        call_id=CallId("c1"),
        tool_name="write_file",
        summary="write /w/a.txt",
        mode=ApprovalMode.REQUEST,
    )

    async def scenario() -> datetime:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(approvals.ask, asked)
            while not approvals.listing():  # noqa: ASYNC110 - the request appears in another task
                await anyio.sleep(0.001)
            [pending] = approvals.listing()
            approvals.decide(pending.approval_id, ApprovalVerdict.REJECTED, "cli")
        return pending.asked_at

    assert NOON == anyio.run(scenario)


def test_a_revoked_device_is_revoked_at_the_clocks_time():
    """Revoking a device records the clock's now as its revocation time."""
    journal = InMemoryJournal()
    device_id = DeviceId.new()
    journal.update_devices(
        lambda r: r.pair(device_id, "phone", bytes(16), "s" * 32, NOON - timedelta(days=1))
    )

    row = revoke_device(journal, str(device_id), clock=FakeClock(NOON))

    assert NOON.isoformat() == row["revoked_at"]


class _AlwaysConflicting(EventJournal):
    """A journal whose every save meets another writer, ticking the clock each time."""

    def __init__(self, clock: FakeClock) -> None:
        app = JournalApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
        super().__init__(app, conflict_timeout=1.0, clock=clock)
        self.ticking = clock
        self.saves = 0

    def save(self, *_aggregates: object) -> None:
        self.saves += 1
        self.ticking.advance(0.25)
        raise IntegrityError


def test_the_conflict_timeout_is_measured_on_the_clock():
    """Retries stop once the clock says the conflict timeout passed: four saves of 0.25 s."""
    journal = _AlwaysConflicting(FakeClock(NOON))

    with pytest.raises(JournalConflictError):
        journal.update_devices(lambda registry: registry.devices)

    assert 4 == journal.saves
