"""Fixtures every daemon end-to-end test shares."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_harness import RunningDaemon, start_daemon, write_governed_config


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The trusted work directory, holding one file."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root.resolve()


@pytest.fixture
def daemon(tmp_path: Path, work: Path) -> Iterator[RunningDaemon]:
    """A running daemon on a governed home, with one paired device."""
    home = tmp_path / "home"
    write_governed_config(home, work)
    running = start_daemon(home)
    running.pair()
    yield running
    running.stop(signal.SIGKILL if running.process.poll() is None else signal.SIGTERM)
