"""`ledgerclaw config check` and the configuration messages a daemon start fails with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.config.loading import check_config, check_secrets, load_config
from adapters.errors import ConfigError, PersistenceNotConfigurableError
from adapters.settings.daemon import DaemonSettings
from domain.values.audience import Audience
from tests.cli_runner import invoke


def write_config(home: Path, text: str) -> Path:
    """Write config.toml into `home` (created if missing) and return its path."""
    home.mkdir(exist_ok=True)
    path = home / "config.toml"
    path.write_text(text)
    return path


def write_secrets(home: Path, text: str, mode: int = 0o600) -> Path:
    """Write secrets.toml into `home` with `mode` and return its path."""
    home.mkdir(exist_ok=True)
    path = home / "secrets.toml"
    path.write_text(text)
    path.chmod(mode)
    return path


def problem(path: Path) -> str:
    """The message load_config raises for the config at `path`."""
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    return str(caught.value)


# -- the [daemon] section ----------------------------------------------------------------------


def test_the_daemon_section_defaults_without_a_file(tmp_path: Path) -> None:
    """No config file means the daemon's documented defaults."""
    daemon = load_config(tmp_path / "config.toml").daemon

    assert DaemonSettings() == daemon
    assert (7431, Audience.PERSONAL, 10, 1800, 16, 0.5, "info") == (
        daemon.port,
        daemon.audience,
        daemon.grace_seconds,
        daemon.idle_timeout_seconds,
        daemon.max_concurrent_calls,
        daemon.projection_interval_seconds,
        daemon.log_level,
    )


def test_every_daemon_setting_reads_from_toml(tmp_path: Path) -> None:
    """Each [daemon] key takes its TOML value; an integer is a valid number of seconds."""
    path = write_config(
        tmp_path,
        "[daemon]\nport = 8100\naudience = 'team'\ngrace_seconds = 3\n"
        "idle_timeout_seconds = 60\nmax_concurrent_calls = 4\n"
        "projection_interval_seconds = 0.05\nlog_level = 'debug'\n",
    )

    expected = DaemonSettings(
        port=8100,
        audience=Audience.TEAM,
        grace_seconds=3.0,
        idle_timeout_seconds=60,
        max_concurrent_calls=4,
        projection_interval_seconds=0.05,
        log_level="debug",
    )
    assert expected == load_config(path).daemon


# -- messages ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[daemon]\nprot = 1\n", "daemon.prot: unknown key (did you mean daemon.port?)"),
        ("[deamon]\nport = 1\n", "deamon: unknown key (did you mean daemon?)"),
        (
            "[tools]\napprovals = {}\n",
            "tools.approvals: unknown key (did you mean tools.approval?)",
        ),
        (
            "[[tools.roots]]\npath = '/srv'\noperation = ['read']\n",
            "tools.roots[0].operation: unknown key (did you mean tools.roots[0].operations?)",
        ),
        (
            "colour = 'blue'\n",
            (
                "colour: unknown key"
                " (known keys: journal, tools, daemon, agent, models, attachments, mcp)"
            ),
        ),
    ],
    ids=["daemon-key", "section", "tools-key", "root-key", "no-close-match"],
)
def test_an_unknown_key_is_named_with_a_close_match(
    tmp_path: Path, text: str, expected: str
) -> None:
    """An unknown key is named in dotted form, with the nearest known key when one is close."""
    path = write_config(tmp_path, text)

    assert f"config {path} is invalid: {expected}" == problem(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("port = 'high'", 'daemon.port: expected an integer from 1 to 65535, got "high"'),
        ("port = '7431'", 'daemon.port: expected an integer from 1 to 65535, got "7431"'),
        ("port = true", "daemon.port: expected an integer from 1 to 65535, got true"),
        ("port = 0", "daemon.port: expected an integer from 1 to 65535, got 0"),
        ("port = 70000", "daemon.port: expected an integer from 1 to 65535, got 70000"),
        ("grace_seconds = 601", "daemon.grace_seconds: expected a number from 0 to 600, got 601"),
        (
            "projection_interval_seconds = 0.01",
            "daemon.projection_interval_seconds: expected a number from 0.05 to 60, got 0.01",
        ),
        (
            "audience = 'everyone'",
            'daemon.audience: expected one of "personal", "team" or "public", got "everyone"',
        ),
        (
            "log_level = 'trace'",
            'daemon.log_level: expected one of "debug", "info", "warning" or "error", got "trace"',
        ),
        ("max_concurrent_calls = []", "daemon.max_concurrent_calls: expected an integer from 1"),
        (
            "projection_interval_seconds = nan",
            "daemon.projection_interval_seconds: expected a number from 0.05 to 60, got nan",
        ),
        ("grace_seconds = -inf", "daemon.grace_seconds: expected a number from 0 to 600, got -inf"),
        ("port = +inf", "daemon.port: expected an integer from 1 to 65535, got inf"),
    ],
    ids=[
        "word",
        "quoted-number",
        "boolean",
        "port-zero",
        "port-too-big",
        "grace-too-long",
        "interval-too-short",
        "audience",
        "log-level",
        "array",
        "nan",
        "minus-inf",
        "inf-for-an-integer",
    ],
)
def test_a_bad_daemon_value_says_what_was_expected_and_given(
    tmp_path: Path, text: str, expected: str
) -> None:
    """A wrong type or an out-of-range value names the key, the expectation and the value."""
    path = write_config(tmp_path, f"[daemon]\n{text}\n")

    message = problem(path)

    assert message.startswith(f"config {path} is invalid: {expected}")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[tools.approval]\nshell_execute = 'sometimes'\n",
            (
                'tools.approval.shell_execute: expected one of "request", "defer", "report" or'
                ' "deny", got "sometimes"'
            ),
        ),
        (
            "[tools.approval]\n'srv/x.y' = 'maybe'\n",
            'tools.approval."srv/x.y": expected one of',
        ),
        (
            "[tools.audiences.everyone]\n",
            (
                'tools.audiences.everyone: expected the key to be one of "personal", "team" or'
                ' "public", got "everyone"'
            ),
        ),
        (
            "[[tools.roots]]\npath = 'relative'\n",
            "tools.roots[0].path: root 'relative' must be an absolute path",
        ),
        ("[tools]\nroots = '/srv'\n", 'tools.roots: expected an array, got "/srv"'),
        ("tools = 5\n", "tools: expected a table, got 5"),
        (
            "[journal]\nbusy_timeout_seconds = 0\n",
            "journal.busy_timeout_seconds: expected an integer from 1 to 120, got 0",
        ),
        (
            "[journal]\nbusy_timeout_seconds = 1979-05-27\n",
            "journal.busy_timeout_seconds: expected an integer from 1 to 120, got 1979-05-27",
        ),
        (
            "[journal]\nbusy_timeout_seconds = 99999999999999999999\n",
            (
                "journal.busy_timeout_seconds: expected an integer from 1 to 120,"
                " got 99999999999999999999"
            ),
        ),
        (
            "[journal]\nbusy_timeut_seconds = 07:32:00\n",
            (
                "journal.busy_timeut_seconds: unknown key (did you mean"
                " journal.busy_timeout_seconds?)"
            ),
        ),
    ],
    ids=[
        "approval",
        "quoted-key",
        "audience-key",
        "root",
        "array",
        "table",
        "journal",
        "date",
        "huge-integer",
        "time-under-unknown-key",
    ],
)
def test_other_sections_name_the_offending_key(tmp_path: Path, text: str, expected: str) -> None:
    """Bad values in [tools] and [journal] name the dotted key, arrays by their index."""
    path = write_config(tmp_path, text)

    assert problem(path).startswith(f"config {path} is invalid: {expected}")


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    """Several bad keys are listed together, separated by semicolons."""
    path = write_config(tmp_path, "[daemon]\nport = 0\nlog_levle = 'info'\n")

    message = problem(path)

    assert "daemon.port: expected an integer from 1 to 65535, got 0; " in message
    assert "daemon.log_levle: unknown key (did you mean daemon.log_level?)" in message


def test_a_long_value_is_cut_in_the_message(tmp_path: Path) -> None:
    """A huge given value does not flood the message."""
    path = write_config(tmp_path, f"[daemon]\nport = '{'9' * 500}'\n")

    message = problem(path)

    assert len(message) < len(str(path)) + 150
    assert message.endswith('..."')


def test_a_persistence_section_names_the_key_and_the_file(tmp_path: Path) -> None:
    """[persistence] is refused by name, with the file's path, as its own error class."""
    path = write_config(tmp_path, "[persistence]\nsqlite_dbname = ':memory:'\n")

    with pytest.raises(PersistenceNotConfigurableError) as caught:
        load_config(path)

    assert str(caught.value).startswith(f"config {path} is invalid: persistence: not allowed")
    assert 4 == caught.value.exit_code


# -- secrets.toml ------------------------------------------------------------------------------


def test_secrets_readable_by_others_are_refused(tmp_path: Path) -> None:
    """A secrets.toml with any group or world permission fails, telling how to fix it."""
    path = write_secrets(tmp_path, "[redact]\nvalues = ['hunter22']\n", mode=0o640)

    with pytest.raises(ConfigError) as caught:
        check_secrets(path)

    expected = (
        f"secrets {path} is open to its group or others (mode 0640);"
        f" make it owner-only: chmod 600 {path}"
    )
    assert expected == str(caught.value)


@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_owner_only_secrets_are_counted(tmp_path: Path, mode: int) -> None:
    """An owner-only secrets.toml passes and its values are counted."""
    path = write_secrets(tmp_path, "[redact]\nvalues = ['hunter22', 'correct horse']\n", mode)

    assert 2 == check_secrets(path)


def test_a_missing_secrets_file_is_fine(tmp_path: Path) -> None:
    """No secrets.toml is no secrets, not an error."""
    assert check_secrets(tmp_path / "secrets.toml") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[redact]\nvalues = ['hunter22', 'abc']\n",
            (
                "redact.values[1]: expected a string of at least 4 characters,"
                " got a string of 3 characters"
            ),
        ),
        ("[redcat]\nvalues = ['hunter22']\n", "redcat: unknown key (did you mean redact?)"),
        ("redact = 'hunter22'\n", "redact: expected a table, got a string of 8 characters"),
    ],
    ids=["too-short", "unknown-section", "not-a-table"],
)
def test_a_bad_secrets_file_never_echoes_a_secret(tmp_path: Path, text: str, expected: str) -> None:
    """Secrets messages name the key and the kind of value given, never the value itself."""
    path = write_secrets(tmp_path, text)

    with pytest.raises(ConfigError) as caught:
        check_secrets(path)

    assert f"secrets {path} is invalid: {expected}" == str(caught.value)
    assert "hunter22" not in str(caught.value)
    assert "abc" not in str(caught.value)


def test_check_config_checks_both_files(tmp_path: Path) -> None:
    """check_config passes the config through and counts the secrets."""
    config = write_config(tmp_path, "[daemon]\nport = 9000\n")
    secrets = write_secrets(tmp_path, "[redact]\nvalues = ['hunter22']\n")

    checked = check_config(config, secrets)

    assert (9000, True, 1) == (
        checked.config.daemon.port,
        checked.config_found,
        checked.secret_values,
    )


# -- the command -------------------------------------------------------------------------------


def test_config_check_on_a_fresh_home_reports_the_defaults(home: Path) -> None:
    """Without files the check passes on the defaults and creates nothing."""
    code, out, _ = invoke("config", "check")

    assert 0 == code
    assert f"config ok: {home / 'config.toml'} (no file: defaults)" in out
    assert "daemon: port 7431, audience personal" in out
    assert not home.exists()


def test_config_check_summarises_a_valid_config(home: Path) -> None:
    """A valid home prints `config ok` and its port, audience, roots, approvals and limits."""
    write_config(
        home,
        "[daemon]\nport = 8100\naudience = 'team'\n"
        "[tools]\napproval = { write_file = 'request' }\napproval_timeout_seconds = 60\n"
        "inline_limit = 2000\n[[tools.roots]]\npath = '/srv'\n",
    )
    write_secrets(home, "[redact]\nvalues = ['hunter22']\n")

    code, out, _ = invoke("config", "check")

    assert 0 == code
    expected = [
        f"config ok: {home / 'config.toml'}",
        "  daemon: port 8100, audience team",
        "  roots: 1",
        "    /srv (read)" + ("" if Path("/srv").is_dir() else "  (does not exist)"),
        "  approvals: write_file=request",
        "  approval timeout: 60s",
        "  inline limit: 2000 characters",
        f"  secrets: {home / 'secrets.toml'}, 1 values",
        "  agent: no model chosen",
        "  models: none",
    ]
    assert expected == out.splitlines()


def test_config_check_json_on_success(home: Path) -> None:
    """--json prints ok, the path, no error and the summary."""
    write_config(home, "[daemon]\nport = 8100\n")

    code, out, _ = invoke("config", "check", "--json")

    assert 0 == code
    expected = {
        "ok": True,
        "path": str(home / "config.toml"),
        "error": None,
        "warnings": [
            (
                f"no trusted roots in {home / 'config.toml'}: tools can use only each session's"
                " own storage, and every other path is denied as outside_roots. Add"
                " [[tools.roots]] (see docs/tools.md)."
            )
        ],
        "summary": {
            "config_found": True,
            "port": 8100,
            "audience": "personal",
            "roots": [],
            "approval": {},
            "approval_timeout_seconds": 300,
            "inline_limit": 16000,
            "secret_values": None,
            "agent": {"model": None, "fallbacks": [], "turn_limit": 50},
            "models": {},
        },
    }
    assert expected == json.loads(out)


def test_config_check_fails_with_the_daemon_message_and_exit_code(home: Path) -> None:
    """An invalid config prints the one-line error on stderr and exits 4."""
    path = write_config(home, "[daemon]\nprot = 8100\n")

    code, out, err = invoke("config", "check")

    assert 4 == code
    assert "" == out
    expected = f"error: config {path} is invalid: daemon.prot: unknown key (did you mean"
    assert expected in " ".join(err.split())


def test_config_check_json_on_failure(home: Path) -> None:
    """--json on an invalid config prints ok false and the error, and still exits 4."""
    path = write_config(home, "[daemon]\nport = 0\n")

    code, out, _ = invoke("config", "check", "--json")

    assert 4 == code
    expected = {
        "ok": False,
        "path": str(path),
        "error": f"config {path} is invalid: daemon.port: expected an integer from 1 to 65535,"
        " got 0",
        "warnings": [],
        "summary": None,
    }
    assert expected == json.loads(out)


def test_config_check_refuses_exposed_secrets(home: Path) -> None:
    """A world-readable secrets.toml fails the check even when config.toml is fine."""
    write_secrets(home, "[redact]\nvalues = ['hunter22']\n", mode=0o644)

    code, out, _ = invoke("config", "check", "--json")

    assert (4, False) == (code, json.loads(out)["ok"])
    assert "chmod 600" in json.loads(out)["error"]


def test_config_check_refuses_a_persistence_section_as_a_real_process(home: Path) -> None:
    """Through the console entry point, [persistence] exits 4 naming the key and the file."""
    path = write_config(home, "[persistence]\nmodule = 'eventsourcing.popo'\n")
    done = subprocess.run(
        [sys.executable, "-c", "from cli.app import main; main()", "config", "check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "LEDGERCLAW_HOME": str(home)},
    )

    assert 4 == done.returncode
    assert f"error: config {path} is invalid: persistence: not allowed" in " ".join(
        done.stderr.split()
    )
