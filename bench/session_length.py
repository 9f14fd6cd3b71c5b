"""Does a tool call cost the same at any session length? Journal work per call, by block.

Each call is what the dispatcher journals for a successful read: the attempt and its allow
decision in one commit, the receipt in another. The session grows by thousands of calls; the
script prints the cost per call of each block beside the first block (ratio 1.00 means no
growth), and the time to load the session from its latest snapshot in a fresh journal. The
last block's cost beside the first block's goes to `bench/all.py` through `figures.report`.

    .venv/bin/python bench/session_length.py [--calls 6000] [--block 1000] [--quick]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from figures import report
from paths import workdir

from adapters.journal.journal import SqliteJournal
from adapters.settings.journal import Durability, JournalSettings
from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.authorization import FileOperation, PolicyDecision
from domain.values.receipts import FileActivity, OutcomeCategory, ToolReceipt

RECEIPT = ToolReceipt(
    outcome=OutcomeCategory.SUCCESS,
    file_activity=(FileActivity(path="/work/notes.txt", operation=FileOperation.READ),),
)


def one_call(journal: SqliteJournal, session_id: SessionId, run_id: RunId) -> None:
    """Journal one allowed call and its receipt, as the dispatcher does: two commits."""
    attempt_id = AttemptId.new()

    def authorize(session: Session) -> None:
        session.start_attempt(run_id, attempt_id, CallId("call_1"), "read_file")
        session.evaluate_policy(run_id, attempt_id, PolicyDecision.ALLOW, rule="paths allowed")

    journal.update_sessions([(session_id, authorize)])
    journal.update_sessions([(session_id, lambda s: s.record_receipt(run_id, attempt_id, RECEIPT))])


def main() -> None:
    """Grow one session block by block, printing the cost per call of each block."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=6000)
    parser.add_argument("--block", type=int, default=1000)
    parser.add_argument("--quick", action="store_true", help="400 calls in blocks of 200")
    options = parser.parse_args()
    if options.quick:
        options.calls, options.block = 400, 200
    with workdir() as directory:
        path: Path = directory / "ledgerclaw.db"
        settings = JournalSettings(durability=Durability.NORMAL)
        journal = SqliteJournal(path, settings)
        session_id, run_id = SessionId.new(), RunId.new()
        journal.open_session(
            SessionOpening(session_id, "bench", SessionKind.MAIN, Audience.PERSONAL)
        )

        def start_and_claim(session: Session) -> None:
            session.start_run(run_id)
            session.claim_writer(run_id)

        journal.update_session(session_id, start_and_claim)
        first = last = 0.0
        print("calls            µs/call  vs first block")
        for start in range(0, options.calls, options.block):
            began = time.perf_counter()
            for _ in range(options.block):
                one_call(journal, session_id, run_id)
            per_call = (time.perf_counter() - began) / options.block * 1e6
            first, last = first or per_call, per_call
            label = f"{start:,}-{start + options.block - 1:,}"
            print(f"{label:<15}  {per_call:7.0f}  {per_call / first:13.2f}")
        journal.close()
        began = time.perf_counter()
        fresh = SqliteJournal(path, settings)
        fresh.session(session_id)
        loaded = (time.perf_counter() - began) * 1e3
        fresh.close()
        print(f"open the journal and load the session from its snapshot: {loaded:.1f} ms")
        print("(durability normal, so the figures show the journal's own work, not the disk)")
    report(
        f"journal work per call · calls {options.calls - options.block:,}-{options.calls - 1:,}",
        last,
        "µs/call",
        baseline=first,
        baseline_name=f"the first {options.block:,} calls",
        script="session_length.py",
    )
    report(
        f"load a {options.calls:,}-call session from its snapshot",
        loaded,
        "ms",
        script="session_length.py",
    )


if __name__ == "__main__":
    main()
