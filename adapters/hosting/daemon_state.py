"""The running daemon's state file, as the CLI reads it to find the daemon; adapter layer.

The daemon writes `daemon.lock` in the home while it runs: JSON naming its process id, the
port of its control plane and when it started. Only the daemon writes it; this module reads.
"""

from __future__ import annotations

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.errors import HomeError
from adapters.home import Home

DAEMON_STATE_NAME = "daemon.lock"
MAX_STATE_BYTES = 64 * 1024
"""A state file is a few dozen bytes; anything much larger is not one."""


class DaemonState(BaseModel):
    """What the running daemon tells other processes about itself."""

    model_config = ConfigDict(frozen=True)

    pid: int = Field(gt=0)
    port: int = Field(gt=0, le=65535)
    started_at: str


def read_daemon_state(home: Home) -> DaemonState | None:
    """The state the daemon wrote, or None when the file is missing, empty or unreadable as JSON."""
    path = home.root / DAEMON_STATE_NAME
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_STATE_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as error:
        msg = f"cannot read the daemon state file {path}: {error.strerror or error}"
        raise HomeError(msg) from None
    if not raw.strip() or len(raw) > MAX_STATE_BYTES:
        return None
    try:
        return DaemonState.model_validate(orjson.loads(raw))
    except (orjson.JSONDecodeError, ValidationError):
        return None
