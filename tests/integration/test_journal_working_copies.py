"""The journal's in-memory working copies: refreshed after other writers, dropped on failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.journal.journal import WORKING_COPIES, SqliteJournal
from domain.ids import RunId, SessionId
from domain.session.aggregate import Session
from domain.session.errors import StaleWriterError
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from tests.builders import start_and_claim, user_message


def open_shared(tmp_path: Path) -> tuple[SqliteJournal, SqliteJournal, SessionId, RunId]:
    """Two journals on one file and a session with a writer run."""
    first, second = SqliteJournal(tmp_path / "j.db"), SqliteJournal(tmp_path / "j.db")
    session_id, run_id = SessionId.new(), RunId.new()
    first.open_session(SessionOpening(session_id, "k", SessionKind.MAIN, Audience.PERSONAL))
    first.update_session(session_id, lambda s: start_and_claim(s, run_id))
    return first, second, session_id, run_id


def test_a_kept_copy_catches_up_with_another_writers_events(tmp_path: Path) -> None:
    """A command after another journal appended sees that append and lands after it."""
    first, second, session_id, run_id = open_shared(tmp_path)
    second.update_session(
        session_id, lambda s: s.append_message(run_id, user_message("from second"))
    )

    def append_and_count(session: Session) -> int:
        session.append_message(run_id, user_message("from first"))
        return session.message_count

    count = first.update_session(session_id, append_and_count)

    assert 2 == count
    assert 5 == first.session(session_id).version
    assert first.session(session_id).state() == second.session(session_id).state()
    first.close()
    second.close()


def test_a_refused_command_leaves_no_trace_in_the_kept_copy(tmp_path: Path) -> None:
    """Events triggered by a command that then fails are neither stored nor remembered."""
    first, second, session_id, run_id = open_shared(tmp_path)

    def append_then_fail(session: Session) -> None:
        session.append_message(run_id, user_message("half done"))
        session.claim_writer(RunId.new())

    with pytest.raises(Exception, match="never started"):
        first.update_session(session_id, append_then_fail)
    first.update_session(session_id, lambda s: s.append_message(run_id, user_message("whole")))

    assert 4 == first.session(session_id).version
    assert 1 == first.session(session_id).message_count
    second.close()
    first.close()


def test_a_writer_superseded_elsewhere_is_stale_in_the_kept_copy(tmp_path: Path) -> None:
    """A run superseded through another journal cannot append through this one's copy."""
    first, second, session_id, run_id = open_shared(tmp_path)
    newer = RunId.new()
    second.update_session(session_id, lambda s: start_and_claim(s, newer))

    with pytest.raises(StaleWriterError):
        first.update_session(session_id, lambda s: s.append_message(run_id, user_message("late")))
    assert 0 == first.session(session_id).message_count
    first.close()
    second.close()


def test_a_long_running_journal_keeps_bounded_bookkeeping(tmp_path: Path) -> None:
    """Sessions beyond the kept copies leave neither a copy nor a lock behind."""
    journal = SqliteJournal(tmp_path / "j.db")
    sessions = [SessionId.new() for _ in range(WORKING_COPIES + 40)]
    for session_id in sessions:
        journal.open_session(SessionOpening(session_id, "k", SessionKind.MAIN, Audience.PERSONAL))
        journal.update_session(session_id, lambda s: s.bind_storage(1, "/srv/s"))
    assert len(journal._working) == WORKING_COPIES
    assert len(journal._locks) <= WORKING_COPIES
    oldest = sessions[0]
    assert journal.read_session(oldest, lambda s: s.storage) is not None
    journal.close()
