"""The session's raw log: one readable line per step of the agent loop; adapter layer.

The journal is the record; this file is for a person with `tail -f`. Each line starts with
the time in UTC and says, in brief, what the step was: a model asked and what it answered,
a failed attempt and what failover did, each tool call and its outcome, the run's end.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import orjson

from domain.agent import records
from domain.tools.output import redact
from domain.values.conversation import MessageRole

TEXT_BRIEF = 80
"""Characters of a message shown on its line."""


def brief(text: str, limit: int = TEXT_BRIEF) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def log_line(record: records.AgentRecord) -> str | None:  # noqa: C901, PLR0911 - a line per kind
    """The line a record gets in the log, or None for records a person need not see."""
    if isinstance(record, records.TurnBegun):
        return f"turn {record.turn} began"
    if isinstance(record, records.ModelAsked):
        return (
            f"model {record.provider}/{record.model} ({record.profile}) asked:"
            f" about {record.estimated_tokens:,} tokens"
        )
    if isinstance(record, records.ModelAnswered):
        usage = record.usage
        tokens = ""
        if usage is not None and usage.input_tokens is not None:
            tokens = f", {usage.input_tokens:,} in / {usage.output_tokens or 0:,} out"
        return f"model replied: {record.finish} in {record.latency_ms:,} ms{tokens}"
    if isinstance(record, records.ModelAttemptFailed):
        status = f" HTTP {record.status}" if record.status is not None else ""
        return (
            f"model {record.provider}/{record.model} ({record.profile}) failed:"
            f" {record.kind}{status}; {record.action}"
        )
    if isinstance(record, records.MessageQueued):
        return f"user message queued ({record.kind}): {brief(record.text)}"
    if isinstance(record, records.Appended):
        return _message_line(record)
    if isinstance(record, records.CallAnswered):
        if record.not_run is not None:
            return f"call {record.call_id} not run: {record.not_run}"
        return f"call {record.call_id} answered: {record.outcome}"
    if isinstance(record, records.RunClosed):
        detail = f" ({brief(record.detail, 200)})" if record.detail else ""
        return f"run ended: {record.reason}{detail}"
    return None


def _message_line(record: records.Appended) -> str | None:
    message = record.message
    if message.role is MessageRole.USER:
        return f"user: {brief(message.content)}"
    if message.role is MessageRole.ASSISTANT:
        calls = ", ".join(f"{c.name} {brief(_json(c.arguments), 60)}" for c in message.tool_calls)
        text = brief(message.content) if message.content else ""
        parts = [p for p in (text, f"calls {calls}" if calls else "") if p]
        return "assistant: " + ("; ".join(parts) or "(empty)")
    return None


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


class SessionLog:
    """Appends lines to one run's log file; a file that cannot be written is left alone."""

    def __init__(self, path: Path, secrets: Iterable[str] = ()) -> None:
        self.path = path
        self.secrets = tuple(secrets)

    def write(self, when: datetime, entries: list[records.AgentRecord]) -> None:
        """Append one line per record that has one."""
        stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
        lines = [
            f"{stamp} {redact(line, self.secrets)}\n"
            for line in map(log_line, entries)
            if line is not None
        ]
        if not lines:
            return
        try:
            with self.path.open("a", encoding="utf-8") as handle:
                handle.writelines(lines)
        except OSError:
            return
