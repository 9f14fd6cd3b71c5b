"""Fixtures every integration test shares."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Run the async tests on asyncio: the daemon, the stdio server and the SDK all run on it."""
    return "asyncio"
