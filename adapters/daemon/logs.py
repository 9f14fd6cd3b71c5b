"""The daemon's logging: a private rotating file in the home, and stderr; adapter layer.

Every line carries a `ledgerclaw` logger name, whoever logged it: our modules' records as
`ledgerclaw.<module>`, the HTTP server's (uvicorn, starlette) as `ledgerclaw.http`, and other
libraries' as `ledgerclaw.<library>`. A client that hangs up mid-request is one debug line,
not a library's ERROR with a traceback.
"""

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
CHATTY = ("mcp", "uvicorn.error")
"""Libraries that log their own start-up and each message: wanted only when debugging."""
OUR_PACKAGES = frozenset({"adapters", "cli", "domain", "projections"})
LIBRARY_NAMES = {"uvicorn": "http", "starlette": "http"}
"""Libraries whose records are labelled by what they do here rather than by their name."""
_GONE = frozenset({"ClientDisconnect"})
"""Exceptions that mean only that the client went away (starlette's, while reading a body)."""
_FILE_HANDLER = "ledgerclaw.daemon.file"
_TERMINAL_HANDLER = "ledgerclaw.daemon.terminal"


def ledgerclaw_name(name: str) -> str:
    """The name a record is shown under: always `ledgerclaw` or below it."""
    first = name.split(".", 1)[0]
    if first == "ledgerclaw":
        return name
    if first in OUR_PACKAGES:
        return f"ledgerclaw.{name}"
    return f"ledgerclaw.{LIBRARY_NAMES.get(first, name)}"


class ClientGoneFilter(logging.Filter):
    """Turns a record of a client that hung up into one debug line, and applies `threshold`.

    The MCP SDK logs an ERROR with a traceback when the client disconnects before its request
    body is read; that is not the daemon's error. Set on each handler, whose own level is
    `threshold`, so the rewritten record is judged at its new level by every handler.
    """

    def __init__(self, threshold: int) -> None:
        super().__init__()
        self.threshold = threshold

    def filter(self, record: logging.LogRecord) -> bool:
        """False for a record below the threshold once rewritten; True otherwise."""
        error = record.exc_info[1] if record.exc_info else None
        if error is not None and type(error).__name__ in _GONE:
            said = record.getMessage()
            record.msg, record.args = (
                "%s: the client disconnected before its request was read",
                (said,),
            )
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            record.exc_info, record.exc_text = None, None
        return record.levelno >= self.threshold


class UtcFormatter(logging.Formatter):
    """Every record stamped with its UTC time in ISO 8601, to the millisecond."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (plus a traceback), under its ledgerclaw name."""
        shown = logging.makeLogRecord(record.__dict__)
        shown.name = ledgerclaw_name(record.name)
        return super().format(shown)

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


def configure_logging(
    home: Home, level: str, *, to_terminal: bool = True, quiet_terminal: bool = False
) -> Path:
    """Send every log record to `logs/daemon.log` in the home, and to stderr if `to_terminal`.

    Calling it again replaces the handlers it installed, never adds to them.

    Args:
        home: The home whose `logs/` directory (created owner-only) receives the log.
        level: One of `debug`, `info`, `warning`, `error`.
        to_terminal: Also write concise lines to stderr.
        quiet_terminal: Below `debug`, write only warnings and errors to stderr (a stdio
            server's client shows its stderr to the user).

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
    file_handler.name = _FILE_HANDLER
    handlers: list[tuple[logging.Handler, int]] = [(file_handler, threshold)]
    if to_terminal:
        terminal = logging.StreamHandler(sys.stderr)
        terminal.name = _TERMINAL_HANDLER
        quiet = quiet_terminal and threshold > logging.DEBUG
        handlers.append((terminal, max(threshold, logging.WARNING) if quiet else threshold))
    formatter = UtcFormatter(FORMAT)
    for handler, handler_level in handlers:
        handler.setFormatter(formatter)
        handler.setLevel(handler_level)
        handler.addFilter(ClientGoneFilter(handler_level))
        root.addHandler(handler)
    root.setLevel(threshold)
    for name in NOISY:
        logging.getLogger(name).setLevel(logging.WARNING)
    for name in CHATTY:
        logging.getLogger(name).setLevel(
            logging.NOTSET if threshold <= logging.DEBUG else logging.WARNING
        )
    return path
