"""The daemon's logging setup on a real home: private rotating files, stderr, quiet libraries."""

from __future__ import annotations

import logging
import re
import stat
from collections.abc import Iterator
from logging.handlers import RotatingFileHandler
from pathlib import Path

import pytest

from adapters.daemon.logs import configure_logging
from adapters.home import Home

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO ledgerclaw\.test: hello$")
QUIETED = ("uvicorn.access", "httpx2", "httpcore2", "mcp", "uvicorn.error")


@pytest.fixture(autouse=True)
def root_logger() -> Iterator[logging.Logger]:
    """The root logger, put back as it was after each test (handlers, levels)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logging.getLogger(name).level for name in QUIETED}
    yield root
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    for name, saved in levels.items():
        logging.getLogger(name).setLevel(saved)


def ours(root: logging.Logger) -> list[logging.Handler]:
    """The handlers configure_logging installed on the root logger."""
    return [h for h in root.handlers if (h.name or "").startswith("ledgerclaw.daemon.")]


def mode(path: Path) -> int:
    """The permission bits of `path`."""
    return stat.S_IMODE(path.stat().st_mode)


def test_records_go_to_a_private_file_with_utc_iso_times(tmp_path: Path) -> None:
    """A record lands in logs/daemon.log as `<UTC time>Z LEVEL logger: message`; 0700/0600."""
    path = configure_logging(Home(tmp_path / "home"), "info", to_terminal=False)

    logging.getLogger("ledgerclaw.test").info("hello")

    assert tmp_path / "home" / "logs" / "daemon.log" == path
    assert (0o700, 0o600) == (mode(path.parent), mode(path))
    [line] = path.read_text().splitlines()
    assert LINE.match(line), line


def test_the_terminal_gets_the_same_concise_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With to_terminal, each record is also one plain line on stderr."""
    configure_logging(Home(tmp_path), "info")

    logging.getLogger("ledgerclaw.test").info("hello")

    [line] = capsys.readouterr().err.splitlines()
    assert LINE.match(line), line


def test_configuring_twice_does_not_duplicate_handlers(
    tmp_path: Path, root_logger: logging.Logger
) -> None:
    """A second call replaces the handlers of the first; each record is written once."""
    configure_logging(Home(tmp_path), "info")
    path = configure_logging(Home(tmp_path), "info", to_terminal=False)

    logging.getLogger("ledgerclaw.test").info("hello")

    assert ["ledgerclaw.daemon.file"] == [h.name for h in ours(root_logger)]
    assert 1 == len(path.read_text().splitlines())


def test_the_level_filters_records(tmp_path: Path) -> None:
    """At warning, info records are dropped."""
    path = configure_logging(Home(tmp_path), "warning", to_terminal=False)

    logging.getLogger("ledgerclaw.test").info("hidden")
    logging.getLogger("ledgerclaw.test").warning("shown")

    assert ["shown"] == [line.rsplit(": ", 1)[1] for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    ("level", "mcp"), [("info", logging.WARNING), ("debug", logging.DEBUG)], ids=["info", "debug"]
)
def test_noisy_libraries_are_quieted(tmp_path: Path, level: str, mcp: int) -> None:
    """Access logs and HTTP clients log warnings only; the MCP SDK and uvicorn unless debugging."""
    configure_logging(Home(tmp_path), level, to_terminal=False)

    quieted = [logging.getLogger(name).getEffectiveLevel() for name in QUIETED]
    assert [logging.WARNING, logging.WARNING, logging.WARNING, mcp, mcp] == quieted


def test_the_file_rotates_at_ten_mib_keeping_five_private_files(
    tmp_path: Path, root_logger: logging.Logger
) -> None:
    """The file handler rotates at 10 MiB into five backups, each owner-only."""
    path = configure_logging(Home(tmp_path), "info", to_terminal=False)
    [handler] = ours(root_logger)
    assert isinstance(handler, RotatingFileHandler)
    assert (10 * 1024 * 1024, 5) == (handler.maxBytes, handler.backupCount)

    logging.getLogger("ledgerclaw.test").info("hello")
    handler.doRollover()
    logging.getLogger("ledgerclaw.test").info("hello")

    backup = path.with_name("daemon.log.1")
    assert (0o600, 0o600) == (mode(path), mode(backup))
    assert (1, 1) == (len(path.read_text().splitlines()), len(backup.read_text().splitlines()))


def test_an_existing_log_file_is_made_private(tmp_path: Path) -> None:
    """A daemon.log left readable by others becomes 0600 (and its directory 0700)."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o755)
    (logs / "daemon.log").write_text("")
    (logs / "daemon.log").chmod(0o644)

    path = configure_logging(Home(tmp_path), "info", to_terminal=False)

    assert (0o700, 0o600) == (mode(logs), mode(path))


def test_an_unknown_level_is_refused(tmp_path: Path) -> None:
    """A level outside debug, info, warning, error raises ValueError and installs nothing."""
    with pytest.raises(ValueError, match="unknown log level 'trace'"):
        configure_logging(Home(tmp_path), "trace")

    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("adapters.runtime.session_host", "ledgerclaw.adapters.runtime.session_host"),
        ("ledgerclaw.test", "ledgerclaw.test"),
        ("uvicorn.error", "ledgerclaw.http"),
        ("mcp.server.streamable_http", "ledgerclaw.mcp.server.streamable_http"),
        ("asyncio", "ledgerclaw.asyncio"),
    ],
)
def test_every_line_carries_a_ledgerclaw_name(tmp_path: Path, name: str, shown: str) -> None:
    """Our modules' records and every library's are written under a `ledgerclaw` name."""
    path = configure_logging(Home(tmp_path), "warning", to_terminal=False)

    logging.getLogger(name).warning("hello")

    [line] = path.read_text().splitlines()
    assert f" WARNING {shown}: hello" == line[line.index(" ") :]


def test_a_quiet_terminal_gets_only_warnings_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With quiet_terminal at info, stderr gets warnings only; the file gets everything."""
    path = configure_logging(Home(tmp_path), "info", quiet_terminal=True)

    logging.getLogger("adapters.stdio.serve").info("started")
    logging.getLogger("adapters.stdio.serve").warning("no root is configured")

    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith(" WARNING ledgerclaw.adapters.stdio.serve: no root is configured")
    assert 2 == len(path.read_text().splitlines())
