"""The ledgerclaw home directory and the fixed paths inside it; adapter layer."""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path

from adapters.errors import HomeError

HOME_ENV = "LEDGERCLAW_HOME"
DATABASE_NAME = "ledgerclaw.db"
CONFIG_NAME = "config.toml"
SECRETS_NAME = "secrets.toml"
DAEMON_FILES = ("daemon.lock", "daemon.pid")
PROTECTED_DIRS = ("keys", "credentials", "claims", "hosts", "backups")


@dataclass(frozen=True)
class Home:
    """One ledgerclaw home: its journal, configuration and daemon files."""

    root: Path

    @property
    def database(self) -> Path:
        """The journal: the single source of truth. Its location is not configurable."""
        return self.root / DATABASE_NAME

    @property
    def config(self) -> Path:
        """The ordinary (non-secret) configuration file."""
        return self.root / CONFIG_NAME

    @property
    def secrets(self) -> Path:
        """Secret configuration: exact values redacted from every tool result."""
        return self.root / SECRETS_NAME

    @property
    def claims(self) -> Path:
        """Where each hosted session's claim file lives; see adapters/hosting/claims.py."""
        return self.root / "claims"

    @property
    def logs(self) -> Path:
        """The daemon's log files."""
        return self.root / "logs"

    @property
    def protected_files(self) -> tuple[Path, ...]:
        """Files no tool may touch: the journal and its companions, configuration, daemon files."""
        db = self.database
        companions = tuple(
            db.with_name(db.name + suffix) for suffix in ("-wal", "-shm", "-journal")
        )
        daemon = tuple(self.root / name for name in DAEMON_FILES)
        return (db, *companions, self.config, self.secrets, *daemon)

    @property
    def protected_trees(self) -> tuple[Path, ...]:
        """Directories no tool may touch with all they contain: key storage and credentials."""
        return tuple(self.root / name for name in PROTECTED_DIRS)


DEFAULT_HOME = "~/.ledgerclaw"


def resolve_home(environ: Mapping[str, str] | None = None) -> Home:
    """The home named by `LEDGERCLAW_HOME`, else `~/.ledgerclaw`; nothing is created.

    A relative `LEDGERCLAW_HOME` is refused: a process started by another program (an MCP
    client, say) inherits a working directory nobody chose, and the same setting would then
    name a different home in every such process.
    """
    env = os.environ if environ is None else environ
    raw = env.get(HOME_ENV) or DEFAULT_HOME
    path = Path(raw).expanduser()
    if not path.is_absolute():
        msg = (
            f"{HOME_ENV}={raw} is a relative path; set it to an absolute path, or pass --home PATH"
        )
        raise HomeError(msg)
    return Home(path.absolute())


def select_home(path: str, environ: MutableMapping[str, str] | None = None) -> Home:
    """Make `path` the home of this process and of every process it starts.

    `path` was typed by a person (`--home`), so a relative one is taken from the working
    directory. It is exported as `LEDGERCLAW_HOME`, absolute, and wins over any value there.
    """
    if not path.strip():
        msg = "--home needs a path; it was given an empty one"
        raise HomeError(msg)
    env = os.environ if environ is None else environ
    root = Path(path).expanduser().absolute()
    env[HOME_ENV] = str(root)
    return Home(root)


def check_home(home: Home) -> Home:
    """Check, without creating anything, that an existing home is a directory."""
    if home.root.exists() and not home.root.is_dir():
        msg = f"home {home.root} exists but is not a directory"
        raise HomeError(msg)
    return home


def ensure_home(home: Home) -> Home:
    """Create the home if it is missing and check it can be read and written."""
    root = check_home(home).root
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        msg = f"cannot create home {root}: {error.strerror or error}"
        raise HomeError(msg) from None
    if not os.access(root, os.R_OK | os.W_OK | os.X_OK):
        msg = f"home {root} is not readable and writable by this user"
        raise HomeError(msg)
    return home
