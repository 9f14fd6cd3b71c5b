"""The HTTP server a hosting process runs in its own event loop; adapter layer.

The daemon serves `/mcp`, `/control` and `/pair` on it; `mcp serve` serves only its control
plane, on a port of its own. Both listen on loopback alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import uvicorn

HOST = "127.0.0.1"


class EmbeddedServer(uvicorn.Server):
    """uvicorn without its own signal handlers: the hosting process owns SIGINT and SIGTERM."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Leave signals alone."""
        yield
