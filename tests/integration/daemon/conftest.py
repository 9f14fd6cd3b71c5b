"""Fixtures every daemon end-to-end test shares."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """The daemon, the stdio server and the SDK run on asyncio."""
    return "asyncio"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The trusted work directory, holding one file."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root.resolve()
