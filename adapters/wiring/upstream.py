"""The upstream servers of a home, wired from its configuration; adapter layer.

Each server's link gets its credentials from secrets.toml, its OAuth tokens from the home's
credentials tree, a log file for a stdio server's standard error, and, with `sandbox = true`,
the shell's Landlock launcher confining the server to the paths its entry allows.
"""

from __future__ import annotations

import os
import shutil
from functools import partial
from pathlib import Path

import httpx2

from adapters.config.loading import secrets_file
from adapters.home import Home
from adapters.sandbox.sandbox import Sandbox
from adapters.settings.config_file import Config
from adapters.settings.mcp import ServerSettings
from adapters.upstream.link import LinkOptions
from adapters.upstream.manager import UpstreamManager
from adapters.upstream.oauth import connection_auth, has_tokens, token_directory
from adapters.wiring.tools import protected_paths
from domain.authorization.facts import canonical
from domain.authorization.roots import RootKind, TrustedRoot
from domain.ports import Journal
from domain.shell.confinement import SandboxMode
from domain.values.audience import Audience


def upstream_manager(home: Home, config: Config, journal: Journal) -> UpstreamManager | None:
    """The manager of every configured upstream server, None when there is none."""
    servers = config.mcp.servers
    if not servers:
        return None
    secrets = secrets_file(home.secrets)
    tokens = token_directory(home.root)
    options = {
        name: LinkOptions(
            secrets=None if secrets is None else secrets.mcp.get(name),
            errlog=home.logs / "upstream" / f"{name}.log",
            confine=partial(_confine, home, name, settings) if settings.sandbox else None,
            has_tokens=partial(has_tokens, tokens, name),
            auth=partial(_auth, tokens, name, settings),
        )
        for name, settings in servers.items()
    }
    return UpstreamManager(journal, servers, options)


def _auth(tokens: Path, name: str, settings: ServerSettings) -> httpx2.Auth | None:
    """OAuth for an http server once `ledgerclaw mcp auth` stored tokens for it."""
    if settings.transport != "http" or settings.url is None or not has_tokens(tokens, name):
        return None
    return connection_auth(tokens, name, settings.url)


def _confine(home: Home, name: str, settings: ServerSettings, argv: list[str]) -> list[str]:
    """`argv` under the Landlock launcher, reaching only the entry's paths (and its tmp)."""
    tmp = home.root / "upstream-tmp" / name
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
    roots = [
        TrustedRoot(
            path=canonical(entry.path),
            real=canonical(os.path.realpath(entry.path)),
            kind=RootKind.CONFIGURED,
            operations=frozenset(entry.operations),
        )
        for entry in settings.sandbox_paths
    ]
    protected = protected_paths(home)
    sandbox = Sandbox(mode=SandboxMode.REQUIRED, home=home.root, network=settings.sandbox_network)
    confined = sandbox.confine(
        argv,
        roots=roots,
        protected=sorted(protected.files | protected.trees),
        tmp_dir=tmp,
        audience=Audience.PERSONAL,
        search_path=os.pathsep.join((*_installation(argv[0]), os.environ.get("PATH", os.defpath))),
    )
    return confined.argv


def _installation(command: str) -> tuple[str, ...]:
    """Where the command's program is installed: its directory, as named and as it really is.

    Each is a toolchain to the sandbox (its `bin` parent is allowed too), so a server installed
    in a virtualenv or under a version manager can start without listing its prefix.
    """
    found = shutil.which(command)
    if found is None:
        return ()
    program = Path(found)
    return tuple(dict.fromkeys((str(program.parent), str(program.resolve().parent))))
