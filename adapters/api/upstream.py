"""What `ledgerclaw mcp list|status|tools|reload|auth` do; adapter layer.

States and catalogs are read from the journal, where every change is recorded, so the
commands answer whether a daemon runs or not; a running daemon adds what only it knows (the
seconds to the next retry). `reload` asks the daemon; `auth` runs the OAuth flow here, stores
the tokens owner-only, then asks a running daemon to reconnect the server.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from eventsourcing.persistence import StoredEvent

from adapters.control.client import DaemonNotRunningError, call_daemon
from adapters.errors import ConfigError
from adapters.home import Home
from adapters.hosting.daemon_lock import is_daemon_running
from adapters.hosting.daemon_state import read_daemon_state
from adapters.journal.mapper import CatalogMapper, OrjsonTranscoder
from adapters.settings.config_file import Config
from adapters.settings.mcp import ServerSettings
from adapters.wiring.home import home_config, open_event_log
from domain.upstream.aggregate import UpstreamServer, server_stream
from domain.upstream.catalog import qualified
from domain.upstream.events import UpstreamStateChanged
from domain.upstream.states import ServerState

HISTORY = 20
"""State changes `mcp status` shows, newest last."""


class UnknownUpstreamServerError(ConfigError):
    """The command named a server the configuration does not define."""

    exit_code = 6


def _settings(config: Config, name: str) -> ServerSettings:
    found = config.mcp.servers.get(name)
    if found is None:
        known = ", ".join(sorted(config.mcp.servers)) or "none is configured"
        msg = f"no upstream server named {name} in [mcp.servers] ({known})"
        raise UnknownUpstreamServerError(msg)
    return found


def _live(home: Home) -> dict[str, dict[str, Any]] | None:
    """The daemon's own view of its servers, None when no daemon answers."""
    if not (is_daemon_running(home) and read_daemon_state(home) is not None):
        return None
    try:
        answer = call_daemon(home, "mcp.status", {})
    except DaemonNotRunningError:
        return None
    return {row["name"]: row for row in answer.get("servers", [])}


def _stream(home: Home, name: str) -> list[Any]:
    """The server's events, decoded, oldest first (none when the journal has no stream)."""
    if not home.database.exists():
        return []
    mapper = CatalogMapper(transcoder=OrjsonTranscoder())
    log = open_event_log(home)
    rows = log.stream(server_stream(name).hex)
    return [
        mapper.to_domain_event(
            StoredEvent(
                originator_id=server_stream(name),
                originator_version=row.version,
                topic=row.topic,
                state=row.state,
            )
        )
        for row in rows
    ]


def _replayed(home: Home, name: str) -> UpstreamServer | None:
    events = _stream(home, name)
    if not events:
        return None
    server: UpstreamServer = events[0].mutate(None)
    for event in events[1:]:
        event.mutate(server)
    return server


def _row(
    home: Home, name: str, settings: ServerSettings, live: dict[str, Any] | None
) -> dict[str, Any]:
    stored = _replayed(home, name)
    state = str(stored.state) if stored is not None else "never started"
    if not settings.enabled:
        state = str(ServerState.DISABLED)
    row: dict[str, Any] = {
        "name": name,
        "transport": settings.transport,
        "target": settings.url if settings.transport == "http" else settings.command,
        "enabled": settings.enabled,
        "state": state,
        "reason": stored.reason if stored is not None else "",
        "since": _iso(stored.changed_at) if stored is not None else None,
        "tools": len(stored.tools) if stored is not None else 0,
        "last_error": stored.last_error if stored is not None else "",
        "next_retry_at": _iso(stored.next_retry_at) if stored is not None else None,
        "next_retry_seconds": None,
        "oauth_tokens": (home.root / "credentials" / "mcp" / f"{name}.json").is_file(),
        "daemon": live is not None,
    }
    if live is not None and name in live:
        now = live[name]
        row |= {"state": now["state"], "reason": now["reason"], "tools": now["tools"]}
        row["next_retry_seconds"] = now["next_retry_seconds"]
    elif row["next_retry_at"] is not None and stored is not None and stored.next_retry_at:
        wait = (stored.next_retry_at - datetime.now(UTC)).total_seconds()
        row["next_retry_seconds"] = max(0.0, round(wait, 1))
    return row


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def list_servers(home: Home) -> list[dict[str, Any]]:
    """Every configured server: state, tool count, last error, next retry."""
    config = home_config(home)
    live = _live(home)
    return [_row(home, name, s, live) for name, s in config.mcp.servers.items()]


def server_status(home: Home, name: str) -> dict[str, Any]:
    """One server's row, its recent state changes and the tail of its error log."""
    config = home_config(home)
    settings = _settings(config, name)
    row = _row(home, name, settings, _live(home))
    changes = [e for e in _stream(home, name) if isinstance(e, UpstreamStateChanged)]
    row["history"] = [
        {
            "at": _iso(change.changed_at),
            "state": str(change.state),
            "reason": change.reason,
            "failure": None if change.failure is None else str(change.failure),
            "next_retry_at": _iso(change.next_retry_at),
        }
        for change in changes[-HISTORY:]
    ]
    log = home.logs / "upstream" / f"{name}.log"
    row["stderr_tail"] = _tail(log) if log.is_file() else []
    return row


def _tail(path: Path, lines: int = 10) -> list[str]:
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - 8192))
        text = handle.read().decode("utf-8", "replace")
    return text.splitlines()[-lines:]


def server_tools(home: Home, name: str) -> list[dict[str, Any]]:
    """The server's last good catalog, as ledgerclaw offers it."""
    config = home_config(home)
    settings = _settings(config, name)
    stored = _replayed(home, name)
    if stored is None:
        return []
    return [
        {
            "name": qualified(name, tool.name),
            "title": tool.title,
            "read_only": tool.read_only,
            "approval": "none"
            if tool.read_only and settings.trust_read_only
            else str(settings.approval),
            "loading": str(settings.loading),
            "description": (tool.description.strip().splitlines() or [""])[0][:200],
            "digest": tool.digest()[:12],
        }
        for tool in stored.tools
    ]


def reload_servers(home: Home, name: str | None) -> list[str]:
    """Ask the running daemon to reconnect `name` (or every server) now."""
    config = home_config(home)
    if name is not None:
        _settings(config, name)
    if not (is_daemon_running(home) and read_daemon_state(home) is not None):
        msg = (
            f"no daemon is running for home {home.root}; the servers connect when one starts"
            " (`ledgerclaw daemon run`)"
        )
        raise DaemonNotRunningError(msg)
    answer = call_daemon(home, "mcp.reload", {} if name is None else {"server": name})
    return [str(name) for name in answer.get("reloaded", [])]


def authorize_server(
    home: Home, name: str, show_url: Callable[[str], None], timeout_seconds: float = 300
) -> dict[str, Any]:
    """Run the OAuth flow for an http server, store its tokens, and reload it if served."""
    config = home_config(home)
    settings = _settings(config, name)
    if settings.transport != "http" or settings.url is None:
        msg = f"{name} is a stdio server: OAuth applies to http servers only"
        raise UnknownUpstreamServerError(msg)
    url = settings.url
    from adapters.upstream.oauth import authorize, token_directory  # noqa: PLC0415 - the SDK

    async def flow() -> None:
        await authorize(
            token_directory(home.root),
            name,
            url,
            show_url=show_url,
            timeout_seconds=timeout_seconds,
        )

    anyio.run(flow)
    reloaded = False
    if is_daemon_running(home) and read_daemon_state(home) is not None:
        reloaded = bool(call_daemon(home, "mcp.reload", {"server": name}).get("reloaded"))
    return {"server": name, "stored": True, "reloaded": reloaded}
