"""Set-based projection batches: any batching of the log gives the rows of event-by-event.

A projection folds the events of one batch together (counts per session, attempts started
and ended in the batch written once, each session's last working context), and falls back
to one statement per event for what earlier batches left open. Whatever the batch sizes,
the tables must hold exactly the rows that applying the log one event at a time gives.
Real SQLite journals in temporary directories; the examples are capped like those of
`test_projection_properties.py`, since each writes a journal and catches it up twice.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.journal.event_log import SqliteEventLog
from adapters.projections.runner import ProjectionRunner
from projections.registry import ALL_PROJECTIONS
from tests.properties.test_projection_properties import (
    EXAMPLES,
    WRITES,
    Script,
    fresh,
    head_of,
    positions,
    rows,
    scripts,
    workspace,
    writer,
)


def caught_up_in(root: Path, source: Path, sizes: list[int], name: str) -> Path:
    """A scratch file with every projection caught up over `source`, batch sizes in turn."""
    scratch = root / f"{name}.db"
    runner = ProjectionRunner(scratch, fresh(ALL_PROJECTIONS), log=SqliteEventLog(source))
    head = head_of(source)
    turn = 0
    while min(status.position for status in runner.status()) < head:
        runner.catch_up(batch_size=sizes[turn % len(sizes)])
        turn += 1
    return scratch


@settings(max_examples=max(EXAMPLES // 3, 1))
@given(
    script=scripts(WRITES, min_size=4, max_size=30),
    sizes=st.lists(st.integers(1, 60), min_size=1, max_size=8),
)
def test_any_batching_gives_the_rows_of_one_event_at_a_time(
    script: Script, sizes: list[int]
) -> None:
    """Batches of random sizes and batches of one event end in the same rows and positions."""
    with workspace() as root:
        database = root / "journal.db"
        with writer(database, script.openings) as journal:
            journal.write_all(script.steps)
        one_by_one = caught_up_in(root, database, [1], "one-by-one")
        batched = caught_up_in(root, database, sizes, "batched")

        assert positions(one_by_one) == positions(batched)
        assert rows(one_by_one, ALL_PROJECTIONS) == rows(batched, ALL_PROJECTIONS)
