"""Agent sessions hosted by the daemon: one run at a time per session, driven over the gateway.

A gateway client creates a session and sends messages to it. A message to an idle session
starts a run; one to a session whose run works is steering, taken at the run's next safe
point (the documented rule). `client_run_id` makes a send idempotent: the same id names the
run it started, in flight or done, across daemon restarts since the id is journaled with the
run; the same id with another text is refused. The host holds each session's claim while it
hosts it, so no other process writes it, and on stop lets runs finish within the grace
period before ending the rest `shutdown`. Adapter layer.
"""

from __future__ import annotations

import contextlib
import logging
import math
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from adapters.hosting.claims import Claim, SessionClaims
from adapters.journal.events import decoded, decoded_stream, event_mapper
from adapters.pipeline.context import RunScope
from adapters.pipeline.dispatcher import Dispatcher
from adapters.runtime.agent_driver import AgentDriver, AgentHooks
from adapters.runtime.agent_prompt import PromptReader
from adapters.runtime.attachments import (
    Upload,
    received_with,
    same_message,
    start_run_with_attachments,
)
from adapters.runtime.budget import Budget
from adapters.runtime.runs import end_run_if_live, open_session, start_run
from adapters.runtime.session_log import SessionLog
from domain.agent import records
from domain.agent.decider import LoopSettings
from domain.agent.failover import Candidate
from domain.attachments.admission import AttachmentLimits
from domain.errors import LedgerclawError
from domain.ids import RunId, SessionId
from domain.ports import Clock, EventLog, Journal, ModelProvider
from domain.session.events import MessageAppended, SessionClosed, SessionOpened
from domain.session.opening import SessionOpening
from domain.values.audience import Audience, SessionKind
from domain.values.conversation import MessageRole
from domain.values.runs import RunEndReason, SessionCloseReason

log = logging.getLogger(__name__)
GATEWAY_PREFIX = "gateway:"
"""The session-key prefix of sessions opened over the gateway."""

Publish = Callable[[str, dict[str, Any]], Coroutine[Any, Any, None]]


class ClientRunConflictError(LedgerclawError):
    """A client run id was sent again with another text: it names another message's run."""

    exit_code = 2


class SessionNotHostedError(LedgerclawError):
    """The session is not an agent session this daemon hosts (or may host)."""

    exit_code = 6


@dataclass
class _Hosted:
    session_id: SessionId
    claim: Claim
    driver: AgentDriver | None = None
    done: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class AgentHost:
    """The daemon's agent sessions, their runs, and what they tell gateway clients."""

    journal: Journal
    log: EventLog
    dispatcher: Dispatcher
    home_root: Path
    claims: SessionClaims
    settings: LoopSettings
    providers: Callable[[Candidate], ModelProvider]
    clock: Clock
    publish: Publish
    secrets: frozenset[str] = frozenset()
    audience: Audience = Audience.PERSONAL
    attachments: AttachmentLimits = field(default_factory=AttachmentLimits)
    budget: Budget = field(default_factory=Budget)
    """Model-request and tool-call slots every hosted run shares."""
    _hosted: dict[SessionId, _Hosted] = field(default_factory=dict)
    _changed: dict[SessionId, anyio.Event] = field(default_factory=dict)
    _tasks: TaskGroup | None = None
    _outbox: MemoryObjectSendStream[tuple[str, dict[str, Any]]] | None = None

    async def serve(self, ready: Callable[[], None] = lambda: None) -> None:
        """Hold the task group runs go in, and publish what they tell, until cancelled."""
        send, receive = anyio.create_memory_object_stream[tuple[str, dict[str, Any]]](math.inf)
        self._outbox = send
        async with anyio.create_task_group() as tasks, send, receive:
            self._tasks = tasks
            tasks.start_soon(self._publish_in_order, receive)
            ready()
            await anyio.sleep_forever()

    async def _publish_in_order(
        self, receive: MemoryObjectReceiveStream[tuple[str, dict[str, Any]]]
    ) -> None:
        """One task publishes every event, so clients hear them in the order they happened."""
        async for event, payload in receive:
            try:
                await self.publish(event, payload)
            except Exception:
                log.exception("publishing %s failed", event)

    # -- methods ---------------------------------------------------------------------------

    def create(self) -> SessionId:
        """Open a new agent session, claimed by this daemon."""
        session_id = SessionId.new()
        claim = self.claims.claim(session_id)
        try:
            key = f"{GATEWAY_PREFIX}{session_id.hex[:8]}"
            opening = SessionOpening(session_id, key, SessionKind.MAIN, self.audience)
            open_session(self.journal, self.home_root, opening)
        except BaseException:
            claim.release()
            raise
        self._hosted[session_id] = _Hosted(session_id, claim)
        return session_id

    async def send(
        self,
        session_id: SessionId,
        text: str,
        client_run_id: str | None,
        attachments: Sequence[Upload] = (),
    ) -> dict[str, Any]:
        """Start a run on `text`, steer the one in progress, or name the run a retry belongs to.

        A message with attachments is never steering: it waits for the run in progress and
        starts its own, journaled with the decision about each file (docs/attachments.md).
        """
        hosted = self._host(session_id)
        if client_run_id is not None:
            known = self._known_run(session_id, client_run_id, text, attachments)
            if known is not None:
                return known
        steering = client_run_id is None and not attachments
        if hosted.driver is not None and steering and hosted.driver.steer(text):
            return {"status": "steered", "run_id": str(hosted.driver.scope.run_id)}
        if hosted.driver is not None:
            await hosted.done.wait()
        answer: dict[str, Any] = {}
        if attachments:
            # Staged, checked, journaled and moved before the next await, so no run of this
            # session works while its files are in staging.
            admitted = start_run_with_attachments(
                self.journal,
                self.home_root,
                session_id,
                client_run_id=client_run_id,
                text=text,
                uploads=attachments,
                limits=self.attachments,
            )
            scope, prompt = admitted.scope, admitted.prompt
            answer["attachments"] = admitted.answer()
        else:
            scope, prompt = start_run(self.journal, self.home_root, session_id, client_run_id), text
        driver = self._driver(scope)
        hosted.driver, hosted.done = driver, anyio.Event()
        assert self._tasks is not None  # noqa: S101 - serve() runs for the daemon's life
        self._tasks.start_soon(self._run, hosted, driver, prompt)
        return {"status": "started", "run_id": str(scope.run_id), **answer}

    def abort(self, session_id: SessionId) -> bool:
        """Abort the session's run in progress; False when none is."""
        hosted = self._host(session_id)
        return hosted.driver is not None and hosted.driver.abort()

    def steer(self, session_id: SessionId, text: str) -> bool:
        """Queue `text` for the session's run in progress; False when none is."""
        hosted = self._host(session_id)
        return hosted.driver is not None and hosted.driver.steer(text)

    def describe(self, session_id: SessionId) -> dict[str, Any]:
        """One hosted session: its runs, transcript size, whether one works, how it closed."""
        hosted = self._host(session_id)
        session = self.journal.session(session_id)
        ended = [run.ended for run in session.runs.values() if run.ended is not None]
        return {
            "session_id": str(session_id),
            "running": hosted.driver is not None,
            "run_id": None if hosted.driver is None else str(hosted.driver.scope.run_id),
            "runs": len(session.runs),
            "messages": session.message_count,
            "last_run_end": str(ended[-1]) if ended else None,
            "closed": None if session.closed is None else str(session.closed),
        }

    async def close(self, session_id: SessionId) -> dict[str, Any]:
        """Close the session for good: a run still working is aborted first."""
        hosted = self._host(session_id)
        if hosted.driver is not None:
            hosted.driver.abort()
            await hosted.done.wait()
        self.journal.update_session(session_id, lambda s: s.close(SessionCloseReason.CLIENT_CLOSED))
        hosted.claim.release()
        self._hosted.pop(session_id, None)
        return {"session_id": str(session_id), "closed": str(SessionCloseReason.CLIENT_CLOSED)}

    def tools(self, session_id: SessionId) -> list[dict[str, Any]]:
        """The tools the session's model is offered now: its policy-visible and loaded ones."""
        self._host(session_id)
        session = self.journal.session(session_id)
        specs, parallel = PromptReader(self.dispatcher).offered(
            session.audience, session.loaded_tools
        )
        return [
            {"name": t.name, "description": t.description, "parallel_safe": t.name in parallel}
            for t in specs
        ]

    def sessions(self) -> list[dict[str, Any]]:
        """Every open agent session of this daemon, oldest first, and whether a run works.

        Read from the journal, so a session opened before the daemon restarted is listed
        too (it is taken up again by the first request that names it).
        """
        listed, mapper = [], event_mapper()
        for span in self.log.opened(SessionOpened.TOPIC):
            opened = decoded(span.first, mapper)
            key = getattr(opened, "session_key", "")
            if not key.startswith(GATEWAY_PREFIX) or span.last.topic == SessionClosed.TOPIC:
                continue
            session_id = SessionId.from_uuid(uuid.UUID(hex=span.first.stream_id))
            hosted = self._hosted.get(session_id)
            driver = None if hosted is None else hosted.driver
            listed.append(
                {
                    "session_id": str(session_id),
                    "running": driver is not None,
                    "run_id": None if driver is None else str(driver.scope.run_id),
                }
            )
        return listed

    async def stop(self, grace: float) -> int:
        """Let runs finish within `grace` seconds, then end the rest `shutdown`; how many."""
        with anyio.move_on_after(grace):
            for hosted in list(self._hosted.values()):
                if hosted.driver is not None:
                    await hosted.done.wait()
        ended = 0
        for hosted in list(self._hosted.values()):
            if hosted.driver is not None:
                ended += 1
                hosted.driver.abort(RunEndReason.SHUTDOWN)
                with anyio.move_on_after(5):
                    await hosted.done.wait()
            hosted.claim.release()
        self._hosted.clear()
        return ended

    def changed(self, session_id: SessionId) -> anyio.Event:
        """An event set the next time this host journals something of the session."""
        found = self._changed.get(session_id)
        if found is None or found.is_set():
            found = self._changed[session_id] = anyio.Event()
        return found

    def _notify(self, session_id: SessionId) -> None:
        found = self._changed.pop(session_id, None)
        if found is not None:
            found.set()

    # -- runs ------------------------------------------------------------------------------

    async def _run(self, hosted: _Hosted, driver: AgentDriver, text: str) -> None:
        try:
            finished = await driver.run(text)
            self._fire(
                "chat.run_ended",
                {
                    "session": str(hosted.session_id),
                    "run_id": str(driver.scope.run_id),
                    "reason": str(finished.reason),
                    "detail": finished.detail,
                },
            )
        except Exception:
            log.exception("agent run %s failed", driver.scope.run_id)
            end_run_if_live(self.journal, driver.scope, RunEndReason.CRASHED)
        finally:
            hosted.driver = None
            hosted.done.set()
            with anyio.CancelScope(shield=True):
                close = getattr(self.providers, "aclose", None)
                if close is not None:
                    await close()

    def _driver(self, scope: RunScope) -> AgentDriver:
        session = str(scope.session_id)
        run_id = str(scope.run_id)

        def on_text(piece: str) -> None:
            self._fire("chat.delta", {"session": session, "run_id": run_id, "text": piece})

        def on_records(entries: Sequence[records.AgentRecord]) -> None:
            self._notify(scope.session_id)
            for entry in entries:
                record = {"kind": type(entry).__name__, **entry.model_dump(mode="json")}
                self._fire("chat.record", {"session": session, "run_id": run_id, "record": record})

        return AgentDriver(
            journal=self.journal,
            dispatcher=self.dispatcher,
            scope=scope,
            settings=self.settings,
            providers=self.providers,
            clock=self.clock,
            hooks=AgentHooks(on_text=on_text, on_records=on_records),
            log=SessionLog(scope.envelope.log, self.secrets),
            budget=self.budget,
        )

    def _fire(self, event: str, payload: dict[str, Any]) -> None:
        """Queue an event for the publisher; nothing is told before `serve` runs."""
        if self._outbox is None:
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._outbox.send_nowait((event, payload))

    def _known_run(
        self, session_id: SessionId, client_run_id: str, text: str, uploads: Sequence[Upload]
    ) -> dict[str, Any] | None:
        session = self.journal.session(session_id)
        run_id = session.run_for_client(client_run_id)
        if run_id is None:
            return None
        asked = self._first_message(session_id, run_id)
        received = received_with(self.log, session_id, run_id)
        if not same_message(received, asked, text, uploads):
            msg = (
                f"client run {client_run_id!r} was sent with another text or other files;"
                " use a new id"
            )
            raise ClientRunConflictError(msg)
        ended = session.runs[run_id].ended
        if ended is None:
            return {"status": "in_flight", "run_id": str(run_id)}
        return {"status": "done", "run_id": str(run_id), "reason": str(ended)}

    def _first_message(self, session_id: SessionId, run_id: RunId) -> str | None:
        """The user's message that started `run_id` (the transcript does not say whose)."""
        for event in decoded_stream(self.log, session_id):
            if not isinstance(event, MessageAppended) or event.run_id != run_id:
                continue
            if event.message.role is MessageRole.USER:
                return event.message.content
        return None

    def _host(self, session_id: SessionId) -> _Hosted:
        hosted = self._hosted.get(session_id)
        if hosted is not None:
            return hosted
        try:
            session = self.journal.session(session_id)
        except LedgerclawError:
            session = None
        if session is None or not session.session_key.startswith(GATEWAY_PREFIX):
            msg = f"{session_id} is not an agent session of this daemon"
            raise SessionNotHostedError(msg) from None
        claim = self.claims.claim(session_id)
        hosted = self._hosted[session_id] = _Hosted(session_id, claim)
        return hosted
