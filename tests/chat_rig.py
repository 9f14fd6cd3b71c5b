"""Helpers for tests of the asyncio gateway client and the terminal chat against a real daemon."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from adapters.control.home_gateway import HomeGateway
from adapters.home import Home
from tests.daemon_harness import RunningDaemon, write_governed_config

WAIT = 20.0
"""The most any test waits for something the daemon does (a bound, not a measurement)."""


def chat_home(
    tmp_path: Path,
    work: Path,
    steps: list[dict[str, Any]],
    *,
    approval_timeout: int = 20,
    attach: bool = False,
) -> Path:
    """A governed home (writes need approval) whose daemon hosts an agent playing `steps`.

    With `attach`, the work root also lets the agent attach its files to a reply.
    """
    home = tmp_path / "home"
    write_governed_config(home, work, approval_timeout=approval_timeout)
    (home / "script.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    config = home / "config.toml"
    text = config.read_text()
    if attach:
        operations = '"declare_project_scope"]'
        assert operations in text, "the governed config's root lists its operations"
        text = text.replace(operations, '"declare_project_scope", "attach"]')
    config.write_text(
        text + '\n[agent]\nmodel = "demo"\n\n[models.demo]\nprovider = "scripted"\nmodel = "demo"\n'
        'script = "script.jsonl"\n'
    )
    return home


def home_gateway(daemon: RunningDaemon) -> HomeGateway:
    """The gateway of `daemon`, found as `ledgerclaw chat` finds it."""
    return HomeGateway(Home(daemon.home))


def read_step(path: Path, text: str = "") -> dict[str, Any]:
    """A reply asking to read `path`."""
    call = {"id": "c1", "name": "read_file", "arguments": {"path": str(path)}}
    return {"reply": {"text": text, "tool_calls": [call]}}


def write_step(path: Path, content: str = "x") -> dict[str, Any]:
    """A reply asking to write `path` (which needs approval in a governed home)."""
    call = {"id": "w1", "name": "write_file", "arguments": {"path": str(path), "content": content}}
    return {"reply": {"text": "", "tool_calls": [call]}}


def attach_step(path: Path) -> dict[str, Any]:
    """A reply attaching `path` to the answer."""
    call = {"id": "a1", "name": "attach_file", "arguments": {"path": str(path)}}
    return {"reply": {"text": "", "tool_calls": [call]}}


def answer_step(text: str) -> dict[str, Any]:
    """A reply with text only."""
    return {"reply": {"text": text}}


async def until(
    check: Callable[[], bool],
    what: str,
    pause: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    within: float = WAIT,
) -> None:
    """Wait, pausing with `pause`, until `check` holds; fail naming `what` after `within` s."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            msg = f"timed out waiting for {what}"
            raise AssertionError(msg)
        await pause(0.05)
