"""A provider that plays a JSONL script of replies, failures and delays; adapter layer.

For tests and offline demonstrations: no network, the same replies every time. Each line is
one step: `{"reply": {...}}` answers a request, `{"error": {"status": 429, ...}}` fails it,
`{"delay": 0.5}` waits before the next step. A script is checked whole when it is loaded, so
a bad line is refused with its number before anything is asked.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import anyio
import orjson
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from adapters.errors import ConfigError
from domain.agent.failover import Candidate, FailureKind, classify
from domain.agent.finish import normalise_finish
from domain.agent.replies import ModelFailure, ModelReply, ModelRequest, Usage
from domain.ids import CallId
from domain.values.conversation import ToolCallRequest


class ScriptError(ConfigError):
    """A script that cannot be played: unreadable, or a line that is not a step."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Call(_Strict):
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: dict[str, JsonValue] = Field(default_factory=dict)


class _Reply(_Strict):
    text: str = ""
    tool_calls: tuple[_Call, ...] = ()
    finish: str | None = "default"
    """The raw finish reason; `default` means `tool_calls` with calls, else `stop`."""
    usage: Usage | None = None


class _Error(_Strict):
    status: int | None = None
    message: str = "scripted failure"
    retry_after: float | None = Field(default=None, ge=0)
    kind: FailureKind | None = None
    """Forces a class; otherwise the status and message are classified as a server's are."""


class _ReplyStep(_Strict):
    reply: _Reply


class _ErrorStep(_Strict):
    error: _Error


class _DelayStep(_Strict):
    delay: Annotated[float, Field(ge=0, le=60)]


Step = _ReplyStep | _ErrorStep | _DelayStep


class _Line(_Strict):
    step: Step


def load_script(path: Path) -> list[Step]:
    """Every step of the script at `path`; a ScriptError names the first bad line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        msg = f"cannot read the script {path}: {getattr(error, 'strerror', None) or error}"
        raise ScriptError(msg) from None
    steps: list[Step] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            steps.append(_Line.model_validate({"step": orjson.loads(line)}).step)
        except orjson.JSONDecodeError:
            msg = f"script {path} line {number} is not JSON"
            raise ScriptError(msg) from None
        except ValidationError:
            msg = (
                f"script {path} line {number} is not a step: expected one of"
                ' {"reply": {...}}, {"error": {...}}, {"delay": SECONDS}'
            )
            raise ScriptError(msg) from None
    return steps


class ScriptedProvider:
    """Plays its steps in order, one reply or failure per request."""

    def __init__(self, steps: list[Step]) -> None:
        self._steps = list(steps)
        self._next = 0
        self.requests: list[ModelRequest] = []
        """Every request asked, in order: what a test checks the loop sent."""

    @classmethod
    def from_file(cls, path: Path) -> ScriptedProvider:
        """A provider playing the script at `path`."""
        return cls(load_script(path))

    async def reply(
        self,
        candidate: Candidate,
        request: ModelRequest,
        on_text: Callable[[str], None] | None = None,
    ) -> ModelReply:
        """The script's next reply, or its next failure raised as a ModelFailure."""
        self.requests.append(request)
        while True:
            if self._next >= len(self._steps):
                msg = f"the script has no reply left for request {len(self.requests)}"
                raise ModelFailure(candidate, FailureKind.BAD_REQUEST, msg)
            step = self._steps[self._next]
            self._next += 1
            if isinstance(step, _DelayStep):
                await anyio.sleep(step.delay)
                continue
            if isinstance(step, _ErrorStep):
                error = step.error
                kind = error.kind or classify(error.status, error.message)
                raise ModelFailure(
                    candidate,
                    kind,
                    error.message,
                    status=error.status,
                    retry_after=error.retry_after,
                )
            return _played(step.reply, on_text)


def _played(reply: _Reply, on_text: Callable[[str], None] | None) -> ModelReply:
    if on_text is not None:
        # Streamed a word at a time, as a server sends deltas; the pieces join to the text.
        for piece in re.findall(r"\S*\s*", reply.text):
            if piece:
                on_text(piece)
    calls = tuple(
        ToolCallRequest(call_id=CallId(call.id), name=call.name, arguments=call.arguments)
        for call in reply.tool_calls
    )
    raw = reply.finish
    if raw == "default":
        raw = "tool_calls" if calls else "stop"
    return ModelReply(
        text=reply.text,
        tool_calls=calls,
        raw_finish=raw,
        finish=normalise_finish(raw, has_tool_calls=bool(calls)),
        usage=reply.usage,
    )
