"""The `[mcp]` section of config.toml: upstream servers and the governed proxy; adapter layer.

Each `[mcp.servers.NAME]` is one upstream MCP server, reached over stdio (a command) or
Streamable HTTP (a URL). Its credentials are not here: headers and a bearer token come from
`[mcp.NAME]` in secrets.toml, and OAuth tokens from `ledgerclaw mcp auth NAME`.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from domain.authorization.facts import canonical
from domain.upstream.catalog import SERVER_NAME
from domain.values.audience import Audience
from domain.values.authorization import ApprovalMode, FileOperation

ServerName = Annotated[str, Field(pattern=SERVER_NAME)]
"""A server's name: lower-case letters, digits, `_` and `-`; its tools are `NAME/TOOL`."""
HeaderName = Annotated[str, Field(pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")]
ToolPattern = Annotated[str, Field(min_length=1, max_length=200)]
"""A glob over the upstream's own tool names (`*`, `?`, `[...]`)."""
DEFAULT_STARTUP_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 120.0


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Era(StrEnum):
    """Which protocol era to speak: probe and fall back (auto), or the handshake only."""

    AUTO = "auto"
    LEGACY = "legacy"


class Loading(StrEnum):
    """Whether a server's tools wait for `load_tool` (deferred) or are offered at once."""

    DEFERRED = "deferred"
    CORE = "core"


class SandboxPath(_Section):
    """A path a sandboxed stdio server may reach, and with which operations."""

    path: str
    operations: tuple[FileOperation, ...] = (FileOperation.READ,)

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        expanded = str(Path(value).expanduser())
        if not expanded.startswith("/"):
            msg = f"sandbox path {value!r} must be an absolute path (or start with ~)"
            raise ValueError(msg)
        return canonical(expanded)


class ServerSettings(_Section):
    """One upstream MCP server."""

    transport: Literal["stdio", "http"]
    command: str | None = Field(default=None, min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    """Variables the child gets beyond the SDK's few (HOME, PATH, USER and the like)."""
    cwd: str | None = None
    url: str | None = Field(default=None, pattern=r"^https?://[^\s/]+(/\S*)?$")
    headers: dict[HeaderName, str] = Field(default_factory=dict)
    """Headers that are not secret; secret ones belong in `[mcp.NAME] headers` of secrets.toml."""
    enabled: bool = True
    allow: tuple[ToolPattern, ...] | None = None
    """The upstream tools offered (all when unset), by glob over their own names."""
    deny: tuple[ToolPattern, ...] = ()
    audiences: tuple[Audience, ...] = (Audience.PERSONAL, Audience.TEAM)
    """The audiences whose sessions may see this server's tools."""
    loading: Loading = Loading.DEFERRED
    approval: ApprovalMode = ApprovalMode.REQUEST
    """How a call that needs consent is handled; every call needs it unless read-only below."""
    trust_read_only: bool = False
    """Let a tool the server marks read-only run without approval."""
    startup_timeout_seconds: float = Field(default=DEFAULT_STARTUP_TIMEOUT, gt=0, le=600)
    call_timeout_seconds: float = Field(default=DEFAULT_CALL_TIMEOUT, gt=0, le=3600)
    era: Era = Era.AUTO
    sandbox: bool = False
    """Run a stdio server under the shell's Landlock launcher, reaching only `sandbox_paths`."""
    sandbox_paths: tuple[SandboxPath, ...] = ()
    sandbox_network: bool = False

    @model_validator(mode="after")
    def _transport_fits(self) -> Self:
        stdio_only: dict[str, object] = {"command": self.command, "args": self.args}
        stdio_only |= {"env": self.env}
        stdio_only |= {"cwd": self.cwd, "sandbox_paths": self.sandbox_paths}
        if self.transport == "stdio":
            if self.command is None:
                msg = 'a stdio server needs command = "..."'
                raise ValueError(msg)
            if self.url is not None or self.headers:
                msg = "url and headers are for http servers; this one is stdio"
                raise ValueError(msg)
        else:
            if self.url is None:
                msg = 'an http server needs url = "http://..." or "https://..."'
                raise ValueError(msg)
            given = sorted(name for name, value in stdio_only.items() if value)
            if given or self.sandbox:
                msg = f"{', '.join(given) or 'sandbox'} applies to stdio servers only"
                raise ValueError(msg)
        if self.sandbox_paths and not self.sandbox:
            msg = "sandbox_paths applies only with sandbox = true"
            raise ValueError(msg)
        return self


class McpSettings(_Section):
    """Upstream servers, and whether the daemon's own MCP face offers their tools too."""

    servers: dict[ServerName, ServerSettings] = Field(default_factory=dict)
    proxy: bool = False
    """Offer upstream tools to the daemon's MCP clients as well, behind the same governance."""
