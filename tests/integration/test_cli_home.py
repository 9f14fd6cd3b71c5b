"""Choosing the home: `--home`, `LEDGERCLAW_HOME` and the default, and `--version`."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from adapters.errors import HomeError
from adapters.home import HOME_ENV, resolve_home, select_home
from adapters.journal.journal import SqliteJournal
from cli.app import app
from cli.global_options import hoisted
from tests.builders import write_sample_session
from tests.cli_runner import invoke, runner


def sample_home(root: Path, key: str) -> Path:
    """A home holding one session whose key is `key`."""
    root.mkdir(parents=True)
    journal = SqliteJournal(root / "ledgerclaw.db")
    write_sample_session(journal, session_key=key)
    journal.close()
    return root


def listed_keys(*args: str) -> list[str]:
    """The session keys `session list --json` prints, after the given global options."""
    code, out, err = invoke(*args, "session", "list", "--json")
    assert 0 == code, err
    return [row["session_key"] for row in json.loads(out)]


def test_home_option_wins_over_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With both set, the command works on the home --home names."""
    monkeypatch.setenv(HOME_ENV, str(sample_home(tmp_path / "from-env", "env:home")))
    chosen = sample_home(tmp_path / "from-option", "option:home")

    assert ["env:home"] == listed_keys()
    assert ["option:home"] == listed_keys("--home", str(chosen))


@pytest.mark.parametrize(
    "args",
    [
        ("--home", "{home}", "session", "list", "--json"),
        ("session", "list", "--home", "{home}", "--json"),
        ("session", "list", "--json", "--home={home}"),
    ],
)
def test_home_option_works_before_or_after_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    """`--home PATH` may stand before the command or among its own options."""
    monkeypatch.setenv(HOME_ENV, str(sample_home(tmp_path / "from-env", "env:home")))
    chosen = sample_home(tmp_path / "from-option", "option:home")

    code, out, err = invoke(*(arg.format(home=chosen) for arg in args))

    assert 0 == code, err
    assert ["option:home"] == [row["session_key"] for row in json.loads(out)]


def test_only_global_options_before_a_double_dash_are_moved() -> None:
    """Arguments after `--` stay where they are, even one spelled `--home`."""
    assert ["--home", "h", "tool", "call", "x", "--", "--home", "y"] == hoisted(
        ["tool", "call", "x", "--home", "h", "--", "--home", "y"]
    )


def test_a_relative_home_option_is_taken_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--home rel` names `rel` under the current directory, as a typed path does."""
    monkeypatch.delenv(HOME_ENV, raising=False)
    monkeypatch.chdir(tmp_path)

    code, out, _ = invoke("--home", "rel", "doctor", "--json")

    assert 0 == code
    assert str(tmp_path / "rel") == json.loads(out)["home"]
    assert (tmp_path / "rel" / "ledgerclaw.db").is_file()


def test_the_home_option_reaches_the_processes_a_command_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A shell command run by `tool call` sees the --home home as LEDGERCLAW_HOME."""
    monkeypatch.setenv(HOME_ENV, str(tmp_path / "other"))
    chosen = tmp_path / "chosen"
    command = json.dumps({"command": f"echo home=${HOME_ENV}"})

    code, out, err = invoke(
        "--home", str(chosen), "tool", "call", "shell_execute", "--approve", "--args", command
    )

    assert 0 == code, err
    assert f"home={chosen}" in out
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize(
    "command",
    [
        ("session", "list"),
        ("doctor",),
        ("config", "check"),
        ("devices", "list"),
        ("mcp", "serve"),
        ("daemon", "run"),
    ],
)
def test_a_relative_ledgerclaw_home_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: tuple[str, ...]
) -> None:
    """A relative LEDGERCLAW_HOME is a one-line home error naming it; nothing is created."""
    monkeypatch.setenv(HOME_ENV, "relative/home")
    monkeypatch.chdir(tmp_path)

    result = runner.invoke(app, list(command))
    code, out, err = result.exit_code, result.stdout, result.stderr

    assert 3 == code, (out, err, repr(result.exception))
    assert "" == out
    expected = (
        f"error: {HOME_ENV}=relative/home is a relative path; set it to an absolute path,"
        " or pass --home PATH"
    )
    assert [expected] == err.splitlines()
    assert [] == list(tmp_path.iterdir())


def test_an_absolute_home_option_overrides_a_relative_ledgerclaw_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An explicit --home makes a bad LEDGERCLAW_HOME irrelevant."""
    monkeypatch.setenv(HOME_ENV, "relative/home")
    chosen = sample_home(tmp_path / "chosen", "chosen:home")

    assert ["chosen:home"] == listed_keys("--home", str(chosen))


def test_an_empty_home_option_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--home ''` names no directory and is a home error, not the default home."""
    monkeypatch.delenv(HOME_ENV, raising=False)

    code, _, err = invoke("--home", "", "session", "list")

    assert 3 == code
    assert ["error: --home needs a path; it was given an empty one"] == err.splitlines()


def test_without_either_the_home_is_under_the_user_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no --home and no LEDGERCLAW_HOME the home is ~/.ledgerclaw."""
    monkeypatch.setenv("HOME", str(tmp_path))

    assert tmp_path / ".ledgerclaw" == resolve_home({}).root
    assert tmp_path / ".ledgerclaw" == resolve_home({HOME_ENV: ""}).root
    assert tmp_path / "h" == resolve_home({HOME_ENV: "~/h"}).root


def test_resolving_a_relative_ledgerclaw_home_raises_a_home_error() -> None:
    """The adapters refuse a relative LEDGERCLAW_HOME wherever they resolve the home."""
    with pytest.raises(HomeError, match="LEDGERCLAW_HOME=here is a relative path"):
        resolve_home({HOME_ENV: "here"})


def test_selecting_a_home_exports_it_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """select_home sets LEDGERCLAW_HOME to the absolute path, so child processes agree."""
    monkeypatch.chdir(tmp_path)
    environ = {HOME_ENV: "/elsewhere"}

    home = select_home("mine", environ)

    assert tmp_path / "mine" == home.root
    assert {HOME_ENV: str(tmp_path / "mine")} == environ
    assert home == resolve_home(environ)


def test_version_prints_the_installed_distribution_version() -> None:
    """`ledgerclaw --version` prints the version the package metadata records, and exits 0."""
    code, out, _ = invoke("--version")

    assert 0 == code
    assert f"ledgerclaw {metadata.version('ledgerclaw')}\n" == out
