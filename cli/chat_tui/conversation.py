"""The state of one attached conversation, built from what the gateway delivers; CLI layer.

Pure: it is fed journaled session events (`session.event` rows, each with its stream
position), the daemon's pushed events (`chat.delta`, `chat.run_ended`, `approval.requested`,
`approval.resolved`) and what the person did, and it keeps the entries to show. A row at or
below the last position shown is a repeat and is dropped, so a subscription resumed after
`position` shows nothing twice. Streamed pieces are shown until the run's journaled message
replaces them; a message the person sent shows as pending until its journaled copy arrives.
"""

from __future__ import annotations

import itertools
from typing import Any

from cli.chat_tui.calls import ToolCalls
from cli.chat_tui.entries import (
    ASSISTANT,
    USER,
    ApprovalPrompt,
    Attachment,
    Entry,
    Notice,
    Said,
    Streaming,
    ToolCall,
)

ATTACHMENT_PREFIX = "session.attachment"
VERDICT_WORDS = {"approved": "approved", "rejected": "denied", "expired": "expired"}


class Conversation:
    """One session's conversation as the terminal shows it."""

    def __init__(self, session: str) -> None:
        self.session = session
        self.position = 0
        """The last stream position shown: a resumed subscription starts after it."""
        self.running: str | None = None
        """The run working now, if any."""
        self.link = "connecting"
        """The state of the connection, in words."""
        self.durable: list[Entry] = []
        self._streams: dict[str, Streaming] = {}
        self._streamed: dict[str, str] = {}
        self._committed: dict[str, int] = {}
        self._prompts: dict[str, ApprovalPrompt] = {}
        self._settled: set[str] = set()
        self._echoes: list[Said] = []
        self._keys = itertools.count(1)
        self._tools = ToolCalls(lambda: self._key("call"))
        self._client_runs: dict[str, str] = {}
        self._ended: set[str] = set()

    @property
    def entries(self) -> list[Entry]:
        """Everything to show, in order: the journaled, then streaming, prompts and pending."""
        return [*self.durable, *self._streams.values(), *self._prompts.values(), *self._echoes]

    def prompt(self, approval_id: str) -> ApprovalPrompt | None:
        """The open prompt of an approval, if it is still open."""
        return self._prompts.get(approval_id)

    def entry(self, key: str) -> Entry | None:
        """The entry shown under `key`."""
        return next((e for e in self.entries if e.key == key), None)

    # -- what the gateway delivers ---------------------------------------------------------

    def apply_row(self, row: dict[str, Any]) -> bool:
        """Apply one journaled event; False when it is another session's or already shown."""
        position, name, fields = row.get("position"), row.get("event"), row.get("fields")
        if row.get("session", self.session) != self.session or not isinstance(position, int):
            return False
        if position <= self.position or not isinstance(name, str):
            return False
        self.position = position
        self._journaled(name, fields if isinstance(fields, dict) else {})
        return True

    def apply_pushed(self, event: str, payload: dict[str, Any]) -> bool:
        """Apply one pushed event; False when it is not about this session."""
        if event == "session.event":
            return self.apply_row(payload)
        if event.startswith("approval."):
            if payload.get("session_id") != self.session:
                return False
            if event == "approval.requested":
                self._asked(payload)
            elif event == "approval.resolved":
                self._settle(str(payload.get("id")))
            return True
        if payload.get("session") != self.session:
            return False
        run_id = str(payload.get("run_id", ""))
        if event == "chat.delta":
            self._delta(run_id, str(payload.get("text", "")))
        elif event == "chat.run_ended":
            # The journaled answer may still be on its way: the stream stays until it comes.
            self._ended.add(run_id)
            if self.running == run_id:
                self.running = None
        return True

    def linked(self, *, again: bool) -> None:
        """The link is up; after a reconnection, pieces streamed before are not coming back."""
        self.link = "connected"
        if again:
            self._notice("reconnected; resumed after what was shown", "info")
            for run_id in list(self._streams):
                self._drop_stream(run_id)
            self._committed = {run: len(text) for run, text in self._streamed.items()}
        for echo in self._echoes:
            if echo.state == "waiting for the daemon":
                echo.state = "sending"
                echo.touch()

    def unlinked(self, why: str, attempt: int, retry_in: float) -> None:
        """The connection is lost; say so, and when the next attempt comes."""
        self.link = f"reconnecting (attempt {attempt}, in {retry_in:.1f} s): {why}"
        for echo in self._echoes:
            if echo.state == "sending":
                echo.state = "waiting for the daemon"
                echo.touch()

    # -- what the person did ---------------------------------------------------------------

    def sending(self, client_run_id: str, text: str) -> None:
        """A message is being sent to start a run."""
        state = "sending" if self.link == "connected" else "waiting for the daemon"
        self._echoes.append(Said(f"echo:{client_run_id}", USER, text, state, client_run_id))

    def steering(self, key: str, text: str) -> None:
        """A message is being sent to the run at work, as steering."""
        self._echoes.append(Said(f"echo:{key}", USER, text, "steering"))

    def sent(self, key: str, answer: dict[str, Any]) -> None:
        """The daemon took a message: note its run, or that it was taken as steering."""
        echo = self._echo(key)
        status = answer.get("status")
        run_id = answer.get("run_id")
        # The run's rows may have come first, its end included.
        started = status in {"started", "in_flight"} and isinstance(run_id, str)
        if started and run_id not in self._ended:
            self.running = run_id
        if echo is not None:
            echo.state = "queued for the run" if status == "steered" else "sent"
            echo.touch()

    def not_sent(self, key: str, why: str) -> None:
        """A message could not be sent; it stays shown with why."""
        echo = self._echo(key)
        if echo is not None:
            echo.state = f"not sent: {why}"
            echo.touch()

    def answering(self, approval_id: str, choice: str) -> None:
        """An answer to an approval is on its way."""
        prompt = self._prompts.get(approval_id)
        if prompt is not None:
            prompt.answering, prompt.problem = choice, ""
            prompt.touch()

    def answer_refused(self, approval_id: str, code: str, message: str) -> None:
        """The daemon refused an answer: gone (answered elsewhere) or a problem to show."""
        if code == "unknown_approval":
            self._settle(approval_id)
            return
        prompt = self._prompts.get(approval_id)
        if prompt is not None:
            prompt.answering, prompt.problem = None, message
            prompt.touch()

    def answered(self, approval_id: str, answer: dict[str, Any]) -> None:
        """The daemon took an answer to an approval."""
        del answer  # the journaled decision follows, and says how it was answered
        self._settle(approval_id)

    def toggle(self, key: str) -> None:
        """Expand a tool call to its arguments and result, or fold it back."""
        found = self.entry(key)
        if isinstance(found, ToolCall):
            found.expanded = not found.expanded
            found.touch()

    def note(self, text: str, tone: str = "info") -> None:
        """Show a line about the conversation."""
        self._notice(text, tone)

    # -- journaled events ------------------------------------------------------------------

    def _journaled(self, name: str, fields: dict[str, Any]) -> None:  # noqa: C901 - one branch per event
        run_id = str(fields.get("run_id", ""))
        if self._tools.journaled(name, run_id, fields):
            return
        if name == "session.run_started":
            self.running = run_id
            client_run_id = fields.get("client_run_id")
            if isinstance(client_run_id, str):
                self._client_runs[run_id] = client_run_id
        elif name == "session.message_appended":
            self._message(run_id, fields.get("message"))
        elif name == "session.approval_requested":
            self._journaled_ask(fields)
        elif name == "session.approval_decided":
            self._decided(fields)
        elif name in {"session.attempt_denied", "session.correction_issued"}:
            self._stopped(name, fields)
        elif name == "session.run_ended":
            self._run_ended(run_id, fields)
        elif name == "session.model_attempt_failed":
            self._model_failed(fields)
        elif name == "session.closed":
            self._notice("the session is closed: it takes no more messages", "warning")
        elif name.startswith(ATTACHMENT_PREFIX):
            self._attachment(name, fields)

    def _message(self, run_id: str, message: object) -> None:
        if not isinstance(message, dict):
            return
        role, text = message.get("role"), str(message.get("content") or "")
        if role == USER:
            self._confirm_echo(run_id, text)
            self._add(Said(self._key("said"), USER, text))
        elif role == ASSISTANT:
            self._commit(run_id)
            if text:
                self._add(Said(self._key("said"), ASSISTANT, text))
            for asked in message.get("tool_calls") or []:
                call = self._tools.asked(run_id, asked)
                if call is not None:
                    self._add(call)
        elif role == "tool":
            self._tools.answered_with(run_id, str(message.get("call_id")), text)

    def _journaled_ask(self, fields: dict[str, Any]) -> None:
        attempt_id = str(fields.get("attempt_id"))
        call = self._tools.by_attempt(attempt_id)
        self._asked(
            {
                "id": attempt_id,
                "tool": call.name if call is not None else "?",
                "summary": fields.get("summary", ""),
                "targets": list(call.targets) if call is not None else [],
                "can_widen": bool(fields.get("grant_key")),
                "run_id": fields.get("run_id"),
            }
        )

    def _asked(self, row: dict[str, Any]) -> None:
        """Open (or fill in) the prompt of an approval not settled yet."""
        approval_id = str(row.get("id"))
        if approval_id in self._settled:
            return
        prompt = self._prompts.get(approval_id)
        if prompt is None:
            prompt = ApprovalPrompt(f"approval:{approval_id}", approval_id, "?", "")
            self._prompts[approval_id] = prompt
        prompt.tool = str(row.get("tool") or prompt.tool)
        prompt.summary = str(row.get("summary") or prompt.summary)
        targets = row.get("targets")
        if isinstance(targets, list) and targets:
            prompt.targets = tuple(str(t) for t in targets)
        prompt.can_widen = bool(row.get("can_widen", prompt.can_widen))
        covers = row.get("session_scope_covers")
        prompt.covers = str(covers) if covers else prompt.covers
        who = row.get("client") or row.get("device")
        prompt.asked_by = str(who) if who else prompt.asked_by
        run_id = row.get("run_id")
        prompt.run_id = str(run_id) if run_id else prompt.run_id
        prompt.touch()

    def _settle(self, approval_id: str) -> None:
        """Close an approval's prompt for good (answered here, elsewhere, or expired)."""
        self._prompts.pop(approval_id, None)
        self._settled.add(approval_id)

    def _decided(self, fields: dict[str, Any]) -> None:
        """The journaled decision: close the prompt, and note on the call how it was answered.

        Only the journal's word is noted, so a call reads the same however the chat learnt of
        the answer (its own, another client's, a reconnect's replay).
        """
        self._settle(str(fields.get("attempt_id")))
        verdict = VERDICT_WORDS.get(str(fields.get("verdict")), "answered")
        scope = fields.get("scope")
        reach = f" ({scope})" if verdict == "approved" and scope else ""
        who = fields.get("decided_by")
        by = f" by {who}" if who and verdict != "expired" else ""
        self._tools.note(str(fields.get("attempt_id")), f"{verdict}{reach}{by}")

    def _stopped(self, name: str, fields: dict[str, Any]) -> None:
        attempt_id = str(fields.get("attempt_id"))
        self._prompts.pop(attempt_id, None)
        self._settled.add(attempt_id)
        what = fields.get("category") or fields.get("remediation") or ""
        detail = fields.get("detail") or ""
        kind = "denied" if name == "session.attempt_denied" else "corrected"
        self._tools.note(attempt_id, f"{kind} ({what}){': ' + detail if detail else ''}")

    def _run_ended(self, run_id: str, fields: dict[str, Any]) -> None:
        self._run_over(run_id)
        for approval_id, prompt in list(self._prompts.items()):
            call = self._tools.by_attempt(approval_id)
            if prompt.run_id == run_id or (call is not None and call.run_id == run_id):
                self._prompts.pop(approval_id)
        reason, detail = str(fields.get("reason", "")), str(fields.get("detail") or "")
        if reason != "natural":
            self._notice(f"run ended: {reason}{': ' + detail if detail else ''}", "warning")

    def _model_failed(self, fields: dict[str, Any]) -> None:
        who = f"{fields.get('provider', '?')}/{fields.get('model', '?')}"
        status = f" HTTP {fields['status']}" if fields.get("status") is not None else ""
        action = fields.get("action")
        self._notice(f"{who} failed: {fields.get('kind', '?')}{status}; {action}", "warning")

    def _attachment(self, name: str, fields: dict[str, Any]) -> None:
        size, kind = fields.get("size"), fields.get("media_type") or fields.get("sniffed_type")
        refused = None
        if fields.get("accepted") is False:
            refused = " ".join(str(fields.get(k) or "") for k in ("reason", "detail")).strip()
        self._add(
            Attachment(
                self._key("file"),
                name,
                str(fields.get("name") or "(unnamed)"),
                str(kind) if kind else None,
                size if isinstance(size, int) else None,
                str(fields["sha256"]) if fields.get("sha256") else None,
                refused or ("refused" if fields.get("accepted") is False else None),
            )
        )

    # -- streaming and pending messages ----------------------------------------------------

    def _delta(self, run_id: str, text: str) -> None:
        streamed = self._streamed[run_id] = self._streamed.get(run_id, "") + text
        shown = streamed[self._committed.get(run_id, 0) :]
        if not shown:
            return
        stream = self._streams.get(run_id)
        if stream is None:
            stream = self._streams[run_id] = Streaming(self._key("stream"), run_id)
        stream.text = shown
        stream.touch()

    def _commit(self, run_id: str) -> None:
        """The run's journaled answer arrived: what streamed so far is shown through it."""
        self._committed[run_id] = len(self._streamed.get(run_id, ""))
        self._drop_stream(run_id)

    def _run_over(self, run_id: str) -> None:
        self._ended.add(run_id)
        self._drop_stream(run_id)
        self._streamed.pop(run_id, None)
        self._committed.pop(run_id, None)
        if self.running == run_id:
            self.running = None

    def _drop_stream(self, run_id: str) -> None:
        self._streams.pop(run_id, None)

    def _confirm_echo(self, run_id: str, text: str) -> None:
        """Drop the pending copy of a message now journaled: its run's, else a steering one."""
        client_run_id = self._client_runs.get(run_id)
        for echo in self._echoes:
            if echo.text == text and echo.client_run_id in {client_run_id, None}:
                self._echoes.remove(echo)
                return

    def _echo(self, key: str) -> Said | None:
        return next((e for e in self._echoes if e.key == f"echo:{key}"), None)

    # -- helpers ---------------------------------------------------------------------------

    def _notice(self, text: str, tone: str) -> None:
        self._add(Notice(self._key("note"), text, tone))

    def _add(self, entry: Entry) -> None:
        self.durable.append(entry)

    def _key(self, kind: str) -> str:
        return f"{kind}-{next(self._keys)}"
