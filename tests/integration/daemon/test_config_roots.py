"""Configured roots on disk: a file is an error, a missing root or none at all is a warning."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli_runner import invoke
from tests.daemon_harness import start_daemon, stdio_client, write_config


def warning_lines(text: str) -> list[str]:
    """The `warning:` lines of some stderr output."""
    return [line for line in text.splitlines() if line.startswith("warning:")]


def doctor_checks() -> tuple[int, dict[str, dict[str, object]]]:
    """The doctor's exit code and its checks by name."""
    code, out, _ = invoke("doctor", "--json")
    return code, {check["name"]: check for check in json.loads(out)["checks"]}


def test_a_root_that_is_a_file_is_an_error_that_says_so(home: Path, tmp_path: Path) -> None:
    """A file as a root exits 4 in every command, saying it is a file; doctor fails its row."""
    notes = tmp_path / "notes.txt"
    notes.write_text("not a directory")
    write_config(home, f"[[tools.roots]]\npath = '{notes}'\n")
    expected = (
        f"error: config {home / 'config.toml'} is invalid: tools.roots[0].path: {notes} is a"
        " file, not a directory"
    )

    for command in (["config", "check"], ["session", "list"], ["tool", "list"]):
        code, out, err = invoke(*command)
        assert (4, "", expected) == (code, out, err.strip())
    code, checks = doctor_checks()
    assert (1, False) == (code, checks["roots"]["ok"])
    assert f"tools.roots[0].path: {notes} is a file, not a directory" == checks["roots"]["detail"]


@pytest.mark.parametrize("kind", ["under-a-file", "named-pipe"])
def test_a_root_that_can_never_be_a_directory_is_an_error(
    home: Path, tmp_path: Path, kind: str
) -> None:
    """A path below a file, or a named pipe, is refused with what it really is."""
    notes = tmp_path / "notes.txt"
    if kind == "under-a-file":
        notes.write_text("")
        root, expected = notes / "sub", f"{notes / 'sub'} cannot be a directory: {notes} is a file"
    else:
        os.mkfifo(notes)
        root, expected = notes, f"{notes} is a named pipe, not a directory"
    write_config(home, f"[[tools.roots]]\npath = '{root}'\n")

    code, _, err = invoke("config", "check")

    assert 4 == code
    assert err.strip().endswith(f"tools.roots[0].path: {expected}")


def test_a_missing_root_is_a_warning_in_config_check_and_doctor(home: Path, tmp_path: Path) -> None:
    """A missing root passes with one warning line; the doctor's roots row warns, not fails."""
    gone, kept = tmp_path / "gone", tmp_path
    write_config(home, f"[[tools.roots]]\npath = '{gone}'\n[[tools.roots]]\npath = '{kept}'\n")
    warning = (
        f"trusted root {gone} (tools.roots[0].path) does not exist; it grants nothing until it"
        " is a directory"
    )

    code, out, err = invoke("config", "check")
    assert 0 == code
    assert f"    {gone} (read)  (does not exist)" in out.splitlines()
    assert [f"warning: {warning}"] == warning_lines(err)
    code, out, _ = invoke("config", "check", "--json")
    assert (0, [warning]) == (code, json.loads(out)["warnings"])
    assert [False, True] == [root["exists"] for root in json.loads(out)["summary"]["roots"]]
    code, checks = doctor_checks()
    assert (0, True, True, warning) == (
        code,
        checks["roots"]["ok"],
        checks["roots"]["warning"],
        checks["roots"]["detail"],
    )


def test_no_root_at_all_is_one_warning_line(home: Path) -> None:
    """Without roots, config check passes and says once that only session storage is open."""
    code, _, err = invoke("config", "check")

    assert 0 == code
    [line] = warning_lines(err)
    assert line.startswith(f"warning: no trusted roots in {home / 'config.toml'}: ")
    assert "outside_roots" in line


def test_daemon_run_warns_once_per_missing_root(home: Path, tmp_path: Path) -> None:
    """At start-up the daemon prints one warning line for each missing root, and no more."""
    first, second = tmp_path / "gone-1", tmp_path / "gone-2"
    write_config(
        home,
        f"[[tools.roots]]\npath = '{first}'\n[[tools.roots]]\npath = '{tmp_path}'\n"
        f"[[tools.roots]]\npath = '{second}'\n",
    )
    daemon = start_daemon(home)
    assert 0 == daemon.stop()

    lines = warning_lines(daemon.output())
    assert [f"trusted root {first} ", f"trusted root {second} "] == [
        line.removeprefix("warning: ")[: len(f"trusted root {first} ")] for line in lines
    ]


def test_daemon_run_warns_once_without_roots(home: Path) -> None:
    """A daemon with no roots configured prints exactly one warning line saying so."""
    daemon = start_daemon(home)
    assert 0 == daemon.stop()

    [line] = warning_lines(daemon.output())
    assert line.startswith("warning: no trusted roots in ")


@pytest.mark.anyio
async def test_mcp_serve_warns_once_without_roots(home: Path, tmp_path: Path) -> None:
    """`mcp serve` with no roots writes one warning line on stderr and still serves."""
    async with stdio_client(home) as client:
        listed = await client.list_tools()
    assert listed.tools

    [errlog] = tmp_path.glob("stdio-*.err")
    [line] = warning_lines(errlog.read_text())
    assert line.startswith("warning: no trusted roots in ")
