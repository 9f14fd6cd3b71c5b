"""The home directory and the configuration file; integration tests on real directories."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from adapters.config.loading import load_config
from adapters.errors import (
    ConfigError,
    HomeError,
    PersistenceNotConfigurableError,
)
from adapters.home import Home, ensure_home, resolve_home
from adapters.settings.config_file import Config
from adapters.settings.journal import Durability, JournalSettings

# -- configuration -----------------------------------------------------------------------------


def test_a_missing_config_file_means_the_defaults(tmp_path: Path) -> None:
    """load_config on a path with no file returns the default configuration."""
    config = load_config(tmp_path / "config.toml")

    assert Config() == config
    assert Durability.FULL == config.journal.durability
    assert not (tmp_path / "config.toml").exists()


def test_durability_normal_parses(tmp_path: Path) -> None:
    """`durability = "normal"` in the [journal] section reads as Durability.NORMAL."""
    path = tmp_path / "config.toml"
    path.write_text('[journal]\ndurability = "normal"\nbusy_timeout_seconds = 30\n')

    settings = load_config(path).journal

    assert JournalSettings(durability=Durability.NORMAL, busy_timeout_seconds=30) == settings


@pytest.mark.parametrize(
    "text",
    [
        '[persistence]\nmodule = "eventsourcing.popo"\n',
        '[persistence]\nsqlite_dbname = ":memory:"\n',
        "[persistence]\n",
    ],
    ids=["module", "dbname", "empty"],
)
def test_a_persistence_section_is_refused(tmp_path: Path, text: str) -> None:
    """Any [persistence] section raises PersistenceNotConfigurableError naming the file."""
    path = tmp_path / "config.toml"
    path.write_text(text)

    with pytest.raises(PersistenceNotConfigurableError) as caught:
        load_config(path)

    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"[journal\ndurability = 'full'\n", "is not valid TOML"),
        (b"journal = \n", "is not valid TOML"),
        (b"colour = 'blue'\n", "is invalid: colour: unknown key"),
        (b"[journal]\ncolour = 'blue'\n", "is invalid: journal.colour: unknown key"),
        (
            b"[journal]\ndurability = 'sometimes'\n",
            'is invalid: journal.durability: expected one of "full" or "normal", got "sometimes"',
        ),
        (
            b"[journal]\nbusy_timeout_seconds = 0\n",
            "is invalid: journal.busy_timeout_seconds: expected an integer from 1 to 120, got 0",
        ),
        (
            b"[journal]\nbusy_timeout_seconds = '30'\n",
            'is invalid: journal.busy_timeout_seconds: expected an integer from 1 to 120, got "30"',
        ),
        (b"[journal]\ndurability = '\xff'\n", "is not valid TOML"),
    ],
    ids=[
        "bad-table",
        "missing-value",
        "unknown-top-level-key",
        "unknown-journal-key",
        "unknown-durability",
        "timeout-too-small",
        "timeout-as-text",
        "not-utf8",
    ],
)
def test_an_invalid_config_raises_config_error_naming_the_file(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    """Invalid TOML, unknown keys and bad values raise ConfigError naming the file and key."""
    path = tmp_path / "config.toml"
    path.write_bytes(content)

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(caught.value).startswith(f"config {path} {expected}")


def test_a_config_path_that_is_a_directory_raises_config_error(tmp_path: Path) -> None:
    """A directory where config.toml should be raises ConfigError naming it."""
    path = tmp_path / "config.toml"
    path.mkdir()

    with pytest.raises(ConfigError) as caught:
        load_config(path)

    assert str(path) in str(caught.value)


# -- home --------------------------------------------------------------------------------------


def test_ensure_home_creates_a_missing_home_private_to_its_user(home: Path) -> None:
    """A missing home is created as a directory with mode 0o700."""
    ensured = ensure_home(resolve_home())

    assert home == ensured.root
    assert home.is_dir()
    assert 0o700 == stat.S_IMODE(home.stat().st_mode)


def test_ensure_home_keeps_an_existing_home_and_its_files(home: Path) -> None:
    """An existing home is accepted as it is, with its files in place."""
    home.mkdir()
    (home / "config.toml").write_text("")

    ensure_home(resolve_home())

    assert ["config.toml"] == [p.name for p in home.iterdir()]


def test_a_home_that_is_a_regular_file_raises_home_error(home: Path) -> None:
    """A home path naming a regular file raises HomeError and leaves the file."""
    home.write_text("not a directory")

    with pytest.raises(HomeError, match="not a directory"):
        ensure_home(resolve_home())

    assert "not a directory" == home.read_text()


def test_a_home_whose_parent_is_a_regular_file_raises_home_error(tmp_path: Path) -> None:
    """A home below a regular file cannot be created and raises HomeError."""
    parent = tmp_path / "plain-file"
    parent.write_text("")

    with pytest.raises(HomeError, match="cannot create home"):
        ensure_home(Home(parent / "home"))


def test_the_home_fixes_the_journal_and_config_names(home: Path) -> None:
    """The journal and the configuration always live at fixed names inside the home."""
    resolved = resolve_home()

    assert (home / "ledgerclaw.db", home / "config.toml") == (resolved.database, resolved.config)
