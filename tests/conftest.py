"""Shared fixtures and Hypothesis profiles for the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from adapters.journal.journal import SqliteJournal

settings.register_profile(
    "dev",
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=100,
    stateful_step_count=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty ledgerclaw home in a temporary directory, selected through the environment."""
    root = tmp_path / "home"
    monkeypatch.setenv("LEDGERCLAW_HOME", str(root))
    return root


@pytest.fixture
def sqlite_journal(tmp_path: Path) -> Iterator[SqliteJournal]:
    """A real journal in a temporary SQLite file."""
    journal = SqliteJournal(tmp_path / "ledgerclaw.db")
    yield journal
    journal.close()
