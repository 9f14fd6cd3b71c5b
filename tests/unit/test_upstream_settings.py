"""`[mcp.servers.NAME]` is validated as strictly as the rest of the configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from adapters.config.loading import load_config
from adapters.errors import ConfigError
from adapters.settings.config_file import Config
from adapters.settings.secrets_file import SecretsFile


def servers(**entries: dict[str, Any]) -> Config:
    """A configuration with these upstream servers."""
    return Config.model_validate({"mcp": {"servers": entries}})


def test_a_stdio_server_needs_a_command_and_an_http_server_a_url() -> None:
    """Each transport names what it needs; the defaults are deferred and asking."""
    config = servers(
        time={"transport": "stdio", "command": "mcp-server-time"},
        web={"transport": "http", "url": "https://example.com/mcp"},
    )
    time = config.mcp.servers["time"]

    assert ("deferred", "request", 10.0) == (
        str(time.loading),
        str(time.approval),
        time.startup_timeout_seconds,
    )
    assert not config.mcp.proxy


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"transport": "stdio"}, 'a stdio server needs command = "..."'),
        ({"transport": "http"}, 'an http server needs url = "http://..." or "https://..."'),
        ({"transport": "http", "url": "ftp://x"}, "String should match pattern"),
        (
            {"transport": "http", "url": "http://x/mcp", "command": "y"},
            "command applies to stdio servers only",
        ),
        (
            {"transport": "stdio", "command": "y", "url": "http://x/mcp"},
            "url and headers are for http servers",
        ),
        (
            {"transport": "stdio", "command": "y", "sandbox_paths": [{"path": "/srv"}]},
            "sandbox_paths applies only with sandbox = true",
        ),
        ({"transport": "stdio", "command": "y", "colour": 1}, "Extra inputs are not permitted"),
        ({"transport": "stdio", "command": "y", "startup_timeout_seconds": 0}, "greater than 0"),
    ],
)
def test_a_server_entry_that_cannot_work_is_refused(entry: dict[str, Any], message: str) -> None:
    """Each mistake is refused with what is wrong."""
    with pytest.raises(ValidationError, match=message):
        servers(s=entry)


def test_a_server_name_is_the_first_half_of_a_tool_name() -> None:
    """Upper case, a slash or a long name cannot name a server."""
    with pytest.raises(ValidationError, match="String should match pattern"):
        servers(**{"Bad/Name": {"transport": "stdio", "command": "y"}})


def test_upstream_credentials_in_secrets_are_redacted_values() -> None:
    """A bearer token and secret headers are redacted from every result."""
    secrets = SecretsFile.model_validate(
        {"mcp": {"web": {"bearer_token": "tok-12345", "headers": {"X-Api-Key": "key-67890"}}}}
    )

    assert {"tok-12345", "key-67890"} <= set(secrets.redacted_values())


def test_tool_rules_may_name_a_configured_servers_tools(tmp_path: Path) -> None:
    """`SERVER/TOOL` and `SERVER/*` are known names once SERVER is configured, not before."""
    path = tmp_path / "config.toml"
    rules = '[tools.approval]\n"time/get_current_time" = "deny"\n'
    rules += '[tools.audiences.public]\ndeny = ["time/*"]\n'
    server = '[mcp.servers.time]\ntransport = "stdio"\ncommand = "mcp-server-time"\n'
    path.write_text(rules + server)
    loaded = load_config(path)
    path.write_text(rules)

    assert "deny" == str(loaded.tools.approval["time/get_current_time"])
    with pytest.raises(
        ConfigError, match=r"tools\.approval\.\"time/get_current_time\": unknown tool"
    ):
        load_config(path)
