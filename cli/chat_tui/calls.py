"""The tool calls of an attached conversation, followed through their journaled events; CLI layer.

A call is asked in an assistant message (run id and call id), authorized and run as an
attempt (attempt id), and answered with `call_answered` and the tool message. Call ids are
the model's and may repeat, so each event goes to the latest call of its run that it can
still belong to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cli.chat_tui.entries import ToolCall


class ToolCalls:
    """Every tool call shown, by run and call id, and by attempt id once it has one."""

    def __init__(self, new_key: Callable[[], str]) -> None:
        self._new_key = new_key
        self._calls: list[ToolCall] = []
        self._attempts: dict[str, ToolCall] = {}

    def asked(self, run_id: str, asked: object) -> ToolCall | None:
        """A call the model asked for in an assistant message; None if it is malformed."""
        if not isinstance(asked, dict):
            return None
        arguments = asked.get("arguments")
        call = ToolCall(
            self._new_key(),
            run_id,
            str(asked.get("call_id", "")),
            str(asked.get("name", "?")),
            arguments if isinstance(arguments, dict) else {},
        )
        self._calls.append(call)
        return call

    def answered_with(self, run_id: str, call_id: str, text: str) -> None:
        """The tool message that answered the model: the call's result."""
        call = self._call(run_id, call_id, lambda c: c.result is None)
        if call is not None:
            call.result = text
            call.touch()

    def by_attempt(self, attempt_id: str) -> ToolCall | None:
        """The call whose attempt this is."""
        return self._attempts.get(attempt_id)

    def note(self, attempt_id: str, note: str) -> None:
        """Note what happened on the attempt's way (an approval, a denial)."""
        call = self._attempts.get(attempt_id)
        if call is not None:
            call.notes.append(note)
            call.touch()

    def journaled(self, name: str, run_id: str, fields: dict[str, Any]) -> bool:
        """Apply an event of a call's attempt; False when `name` is none of them."""
        attempt_id = str(fields.get("attempt_id"))
        if name == "session.attempt_started":
            self._attempt(run_id, str(fields.get("call_id")), attempt_id)
        elif name == "session.policy_evaluated":
            self._policy(attempt_id, fields)
        elif name == "session.receipt_recorded":
            self._status(attempt_id, str(fields.get("outcome", "done")))
        elif name == "session.attempt_outcome_unknown":
            self.note(attempt_id, f"outcome unknown: {fields.get('reason', '')}")
        elif name == "session.call_answered":
            self._answered(run_id, fields)
        else:
            return False
        return True

    def _attempt(self, run_id: str, call_id: str, attempt_id: str) -> None:
        call = self._call(run_id, call_id, lambda c: c.attempt_id is None)
        if call is None:
            return
        call.attempt_id, call.status = attempt_id, "running"
        self._attempts[attempt_id] = call
        call.touch()

    def _policy(self, attempt_id: str, fields: dict[str, Any]) -> None:
        call = self._attempts.get(attempt_id)
        if call is None:
            return
        targets = fields.get("targets") or []
        call.targets = tuple(str(t.get("path")) for t in targets if isinstance(t, dict))
        if fields.get("decision") == "approval_required":
            call.status = "awaiting approval"
        call.touch()

    def _status(self, attempt_id: str, status: str) -> None:
        call = self._attempts.get(attempt_id)
        if call is not None and not call.answered:
            call.status = status
            call.touch()

    def _answered(self, run_id: str, fields: dict[str, Any]) -> None:
        call = self._call(run_id, str(fields.get("call_id")), lambda c: not c.answered)
        if call is None:
            return
        not_run = fields.get("not_run")
        call.status = f"not run: {not_run}" if not_run else str(fields.get("outcome") or "done")
        call.failed = bool(fields.get("failed"))
        call.answered = True
        call.touch()

    def _call(
        self, run_id: str, call_id: str, wanted: Callable[[ToolCall], bool]
    ) -> ToolCall | None:
        """The latest call of `run_id` named `call_id` that `wanted` accepts."""
        for call in reversed(self._calls):
            if call.run_id == run_id and call.call_id == call_id and wanted(call):
                return call
        return None
