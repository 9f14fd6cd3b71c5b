"""Payloads and the long session that the journal benchmark measures.

Every figure of `bench/journal.py` is computed on the data built here, in the same form for
each path: `ChatMessage` values for ledgerclaw, JSON-ready dicts for eventsourcing's default
mapper, and stored rows for the raw sqlite3 baseline. The long session of the read
measurements is built here too, through `EventJournal.update_session`, as the runtime
writes it.
"""

from __future__ import annotations

import itertools
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from uuid import uuid4

import orjson

from adapters.journal.journal import SqliteJournal
from adapters.journal.reader import JournalReader
from domain.ids import AttemptId, CallId, RunId, SessionId
from domain.session.aggregate import Session
from domain.session.events import MessageAppended
from domain.values.authorization import FileOperation, PolicyDecision
from domain.values.conversation import ChatMessage, MessageRole, ToolCallRequest
from domain.values.receipts import FileActivity, OutcomeCategory, ToolReceipt

BUILD_BATCH = 500
"""Events per save while the long session is built."""
TURN_CYCLE = 10
"""Every tenth turn is a tool call with a full attempt lifecycle."""
TOOL_TURN_EVENTS = 6
"""Events of a tool turn: call, attempt start, policy, receipt, context change, result."""
TEXT = (
    "the journal keeps every fact of the session in order so a replay can rebuild the "
    "state exactly as it was when the agent read a file wrote a patch or asked before "
    "running a command in the project directory"
)
WORDS = TEXT.split()

T = TypeVar("T")


# -- payloads ---------------------------------------------------------------------------------


def sentence(index: int, length: int = 120) -> str:
    """A deterministic line of text about `length` characters long."""
    words: list[str] = []
    size = 0
    for word in itertools.islice(itertools.cycle(WORDS), index % len(WORDS), None):
        if size + len(word) + 1 > length:
            break
        words.append(word)
        size += len(word) + 1
    return f"{index}: " + " ".join(words)


def chat_messages(count: int) -> list[ChatMessage]:
    """Alternating user and assistant text messages of about 120 characters."""
    roles = (MessageRole.USER, MessageRole.ASSISTANT)
    return [ChatMessage(role=roles[i % 2], content=sentence(i)) for i in range(count)]


def message_json(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The messages as JSON-ready dicts, the payload the default mapper stores."""
    return [m.model_dump(mode="json") for m in messages]


def stored_rows(run_id: RunId, messages: Sequence[ChatMessage]) -> list[tuple[Any, ...]]:
    """Rows as ledgerclaw stores MessageAppended events, for the raw sqlite3 baseline."""
    stream = uuid4().hex
    stamp = datetime.now(UTC).isoformat()
    return [
        (
            stream,
            version,
            MessageAppended.TOPIC,
            orjson.dumps(
                {"timestamp": stamp, "run_id": run_id, "message": m.model_dump(mode="json")}
            ),
        )
        for version, m in enumerate(messages, start=1)
    ]


@dataclass
class Payloads:
    """The same messages in each path's input form."""

    messages: list[ChatMessage]
    payloads: list[dict[str, Any]]
    """JSON-ready dicts for the default mapper."""
    rows: list[tuple[Any, ...]]
    """Stored rows as ledgerclaw writes them, for the raw sqlite3 baseline."""


def payloads(count: int) -> Payloads:
    """`count` messages in every path's input form."""
    messages = chat_messages(count)
    return Payloads(messages, message_json(messages), stored_rows(RunId.new(), messages))


def chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    """`items` in consecutive slices of `size`."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- the long session -------------------------------------------------------------------------


@dataclass
class LongSession:
    """Facts about the long session built for the read measurements."""

    events: int
    messages: int
    attempts: int
    snapshot_version: int
    snapshot_automatic: bool
    build_seconds: float


@dataclass
class Conversation:
    """Realistic turns of one run, continued across saves."""

    run_id: RunId
    turn: int = 0
    attempts: int = 0

    def play(self, session: Session, *, target: int, batch: int) -> int:
        """Trigger turns until `batch` more events or `target` in all; return the version.

        Most turns append one message, user and assistant in turn. Every tenth turn the
        assistant calls a tool: the attempt starts, policy allows it, the receipt reports
        file activity (which also moves the working context), and the tool result joins the
        transcript. A turn is never split, so a batch may run a few events over.
        """
        start = session.version
        while session.version < target and session.version - start < batch:
            remaining = target - session.version
            if self.turn % TURN_CYCLE == TURN_CYCLE - 1 and remaining >= TOOL_TURN_EVENTS:
                self._tool_turn(session)
            else:
                role = MessageRole.USER if self.turn % 2 == 0 else MessageRole.ASSISTANT
                session.append_message(
                    self.run_id, ChatMessage(role=role, content=sentence(self.turn))
                )
            self.turn += 1
        return session.version

    def _tool_turn(self, session: Session) -> None:
        turn, run_id = self.turn, self.run_id
        call_id = CallId(f"call_{turn}")
        path = f"/work/project/src/module_{turn % 37}.py"
        request = ToolCallRequest(call_id=call_id, name="read_file", arguments={"path": path})
        attempt_id = AttemptId.new()
        session.append_message(
            run_id,
            ChatMessage(
                role=MessageRole.ASSISTANT, content=sentence(turn, 60), tool_calls=(request,)
            ),
        )
        session.start_attempt(run_id, attempt_id, call_id, "read_file")
        session.evaluate_policy(run_id, attempt_id, PolicyDecision.ALLOW, rule="read-in-root")
        receipt = ToolReceipt(
            outcome=OutcomeCategory.SUCCESS,
            file_activity=(FileActivity(path=path, operation=FileOperation.READ),),
        )
        session.record_receipt(run_id, attempt_id, receipt)
        session.append_message(
            run_id,
            ChatMessage(role=MessageRole.TOOL, content=sentence(turn, 400), call_id=call_id),
        )
        self.attempts += 1


def build_long_session(
    journal: SqliteJournal, session_id: SessionId, run_id: RunId, target: int
) -> LongSession:
    """Fill the session to `target` events, BUILD_BATCH per `update_session`; check the head.

    Each command goes through `journal.save`, which stores one snapshot, taken from the
    in-memory Session, per save that crosses a multiple of SNAPSHOT_INTERVAL; a batch of
    BUILD_BATCH events always crosses one, so the head normally has its snapshot already.
    If it has none, `journal._snapshot` stores one from the session as loaded. The
    journal's kept copy of the stream ends current, as it is when one process writes it.
    """
    started = time.perf_counter()
    conversation = Conversation(run_id)
    play = partial(conversation.play, target=target, batch=BUILD_BATCH)
    version = 0
    while version < target:
        version = journal.update_session(session_id, play)
    stream = session_id.as_uuid()
    latest = list(journal.app.snapshots.get(stream, desc=True, limit=1))  # type: ignore[union-attr]
    automatic = bool(latest) and latest[0].originator_version == version
    session = journal.session(session_id)
    if not automatic:
        journal._snapshot(session)  # noqa: SLF001 - the journal's own snapshot step
    transcript = JournalReader(journal.path).transcript(session_id)
    if len(transcript) != session.message_count:
        msg = f"{len(transcript)} messages read back, Session counts {session.message_count}"
        raise RuntimeError(msg)
    return LongSession(
        events=session.version,
        messages=session.message_count,
        attempts=conversation.attempts,
        snapshot_version=session.version,
        snapshot_automatic=automatic,
        build_seconds=time.perf_counter() - started,
    )


def copy_without_snapshots(source: Path, target: Path) -> None:
    """A consistent copy of the journal file with its snapshot table emptied."""
    with closing(sqlite3.connect(source)) as src, closing(sqlite3.connect(target)) as dst:
        src.backup(dst)
        dst.execute("DELETE FROM stored_snapshots")
        dst.commit()
