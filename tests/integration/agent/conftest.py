"""Every session an agent test leaves behind must replay identically through the decider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.api.agent_verify import verify_session
from adapters.home import resolve_home
from adapters.wiring.home import open_reader


@pytest.fixture(autouse=True)
def every_session_replays_identically(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[None]:
    """After the test, `session replay --verify` of each of its sessions says identical."""
    yield
    if request.node.get_closest_marker("tampered") is not None:
        return
    for database in sorted(tmp_path.rglob("ledgerclaw.db")):
        home = resolve_home({"LEDGERCLAW_HOME": str(database.parent)})
        for summary in open_reader(home).sessions():
            check = verify_session(home, summary.session_id)
            diverged = [run for run in check.runs if not run.verdict.identical]
            assert [] == diverged, f"{summary.session_id} does not replay identically"
