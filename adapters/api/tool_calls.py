"""Native tool calls and tool listings for the command line, through the same pipeline.

A native call is journaled like any model-authored one: it runs in a run of its own in the
named session (or a new one), and that run ends when the call returns. Adapter layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import anyio
import orjson
from pydantic import ValidationError

from adapters.errors import InvalidToolCallError
from adapters.home import Home
from adapters.hosting.claims import SessionClaims
from adapters.pipeline.context import PipelinePolicy
from adapters.pipeline.requests import TOO_DEEP, call_request
from adapters.runtime.runs import begin_run, end_run
from adapters.wiring.home import home_config, open_journal, open_reader
from adapters.wiring.tools import command_line_approver, first_party_tools, pipeline_policy
from adapters.wiring.tools import dispatcher as build_dispatcher
from domain.ids import CallId, SessionId
from domain.tools.definition import ToolDefinition
from domain.tools.exposure import Visibility, exposure
from domain.tools.result import ToolResult
from domain.values.audience import Audience
from domain.values.receipts import CancelReason
from domain.values.runs import RunEndReason


@dataclass(frozen=True)
class NativeCall:
    """A finished native call: where it ran and its one result."""

    session_id: SessionId
    run_id: str
    result: ToolResult


@dataclass(frozen=True)
class ToolListing:
    """Each registered tool with its definition facts and its visibility."""

    audience: Audience
    session_id: SessionId | None
    rows: list[dict[str, Any]]


def list_tools(home: Home, session: str | None, audience: Audience | None) -> ToolListing:
    """What is exposed, and why not, for a session or for an audience (default personal)."""
    config = home_config(home)
    tools = first_party_tools(config)
    policy = pipeline_policy(home, config)
    loaded: frozenset[str] = frozenset()
    session_id: SessionId | None = None
    if session is not None:
        session_id = open_reader(home).resolve_session(session)
        journal = open_journal(home)
        try:
            found = journal.session(session_id)
        finally:
            journal.close()
        audience, loaded = found.audience, found.loaded_tools
    audience = audience or Audience.PERSONAL
    views = {v.name: v for v in exposure(tools.registry, policy.exposure, audience, loaded)}
    rows = [_row(definition, views[definition.name], policy) for definition in tools.registry]
    return ToolListing(audience=audience, session_id=session_id, rows=rows)


def _row(definition: ToolDefinition, view: Visibility, policy: PipelinePolicy) -> dict[str, Any]:
    mode = policy.exposure.approval_mode(definition)
    return {
        "name": definition.name,
        "loading": str(definition.loading),
        "concurrency": str(definition.concurrency),
        "approval": "none" if mode is None else str(mode),
        "policy_visible": view.policy_visible,
        "in_request": view.in_request,
        "reason": view.reason,
    }


def arguments_from_json(text: str) -> dict[str, Any]:
    """A call's arguments from the JSON object `--args` gave; InvalidToolCallError if not one."""
    try:
        arguments = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        msg = f"--args is not valid JSON: {error}"
        if str(error).startswith("depth limit exceeded"):
            msg = f"--args: arguments {TOO_DEEP}"
        raise InvalidToolCallError(msg) from None
    if not isinstance(arguments, dict):
        msg = "--args must be a JSON object"
        raise InvalidToolCallError(msg)
    return arguments


def call_tool(
    home: Home,
    tool: str,
    arguments: dict[str, Any],
    session: str | None,
    *,
    approve: bool,
) -> NativeCall:
    """Run one native call through the pipeline and end its run."""
    config = home_config(home)
    # Built before the journal is opened: a bad secrets file stops the call with nothing made.
    tools, policy = first_party_tools(config, home), pipeline_policy(home, config)
    try:
        request, refused = call_request(CallId("cli_pending"), tool, arguments)
    except ValidationError as error:
        msg = f"cannot call {tool!r}: {error.errors()[0]['msg']}"
        raise InvalidToolCallError(msg) from None
    if refused:  # nothing is journaled for a call the command line can refuse itself
        msg = f"cannot call {tool!r}: {refused}"
        raise InvalidToolCallError(msg)
    session_id = None if session is None else open_reader(home).resolve_session(session)
    journal = open_journal(home)
    # The session is claimed for the call, before anything is written to it: no daemon
    # recovers it as orphaned meanwhile, and no other host writes it.
    new = session_id is None
    session_id = session_id or SessionId.new()
    claim = None
    try:
        claim = SessionClaims(home).claim(session_id)
        run = begin_run(journal, home.root, session_id, new=new)
        dispatcher = build_dispatcher(
            journal, tools, policy, command_line_approver(approve=approve)
        )
        request = request.model_copy(update={"call_id": CallId(f"cli_{run.run_id.hex[:12]}")})
        reason = RunEndReason.ABORT
        try:
            # Ctrl-C is the person at the terminal, the client of this call, giving up on it.
            result = anyio.run(
                partial(dispatcher.call, cancel_reason=lambda: CancelReason.CLIENT_CANCELLED),
                run,
                request,
            )
            reason = RunEndReason.NATURAL
        finally:
            end_run(journal, run, reason)
    finally:
        if claim is not None:
            claim.release()
        journal.close()
    return NativeCall(session_id=run.session_id, run_id=str(run.run_id), result=result)
