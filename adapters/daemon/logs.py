"""The daemon's logging: a private rotating file in the home, and stderr; adapter layer."""

from __future__ import annotations

import logging
import os
import sys
from datetime import UTC, datetime
from io import TextIOWrapper
from logging.handlers import RotatingFileHandler
from pathlib import Path

from adapters.errors import HomeError
from adapters.home import Home, ensure_home

LOG_DIR = "logs"
LOG_NAME = "daemon.log"
MAX_BYTES = 10 * 1024 * 1024
BACKUPS = 5
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
NOISY = ("uvicorn.access", "httpx2", "httpcore2")
"""Loggers that report every request; only their warnings reach the log."""
_FILE_HANDLER = "ledgerclaw.daemon.file"
_TERMINAL_HANDLER = "ledgerclaw.daemon.terminal"


class UtcFormatter(logging.Formatter):
    """Every record stamped with its UTC time in ISO 8601, to the millisecond."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - overrides logging's name
        """The record's creation time, e.g. `2026-11-30T08:45:39.123Z`."""
        del datefmt
        moment = datetime.fromtimestamp(record.created, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class PrivateRotatingFileHandler(RotatingFileHandler):
    """A rotating log whose files only their owner can read (logs name paths and tools)."""

    def _open(self) -> TextIOWrapper:
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.baseFilename, flags, 0o600)
        os.fchmod(fd, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)  # noqa: PTH123 - wraps a descriptor


def configure_logging(home: Home, level: str, *, to_terminal: bool = True) -> Path:
    """Send every log record to `logs/daemon.log` in the home, and to stderr if `to_terminal`.

    Calling it again replaces the handlers it installed, never adds to them.

    Args:
        home: The home whose `logs/` directory (created owner-only) receives the log.
        level: One of `debug`, `info`, `warning`, `error`.
        to_terminal: Also write concise lines to stderr.

    Returns:
        The path of the log file.
    """
    threshold = LEVELS.get(level.lower())
    if threshold is None:
        msg = f"unknown log level {level!r}; expected one of {', '.join(LEVELS)}"
        raise ValueError(msg)
    directory = ensure_home(home).root / LOG_DIR
    path = directory / LOG_NAME
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
        directory.chmod(0o700)
        file_handler = PrivateRotatingFileHandler(
            path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8"
        )
    except OSError as error:
        msg = f"cannot open the log file {path}: {error.strerror or error}"
        raise HomeError(msg) from None
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h.name in {_FILE_HANDLER, _TERMINAL_HANDLER}]:
        root.removeHandler(handler)
        handler.close()
    formatter = UtcFormatter(FORMAT)
    handlers: list[logging.Handler] = [file_handler]
    handlers[0].name = _FILE_HANDLER
    if to_terminal:
        handlers.append(logging.StreamHandler(sys.stderr))
        handlers[1].name = _TERMINAL_HANDLER
    for handler in handlers:
        handler.setFormatter(formatter)
        root.addHandler(handler)
    root.setLevel(threshold)
    for name in NOISY:
        logging.getLogger(name).setLevel(logging.WARNING)
    # The MCP SDK logs each message at debug and info; it is wanted only when debugging.
    logging.getLogger("mcp").setLevel(
        logging.NOTSET if threshold <= logging.DEBUG else logging.WARNING
    )
    return path
