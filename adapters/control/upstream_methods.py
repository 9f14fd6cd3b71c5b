"""What the command line and gateway clients may ask of a daemon's upstream servers; adapters.

`mcp.status` lists each server's live state (state, reason, tool count, next retry), and
`mcp.reload` reconnects one server, or all, at once with the back-off reset.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from adapters.control.frames import Scope
from adapters.control.methods import BadControlRequestError
from adapters.control.plane import ControlMethod
from adapters.upstream.manager import UnknownServerError, UpstreamManager
from domain.upstream.catalog import SERVER_NAME

UPSTREAM_METHOD_SCOPES = {"mcp.status": Scope.READ, "mcp.reload": Scope.WRITE}


class UnknownUpstreamError(BadControlRequestError):
    """A request named a server the daemon does not have."""

    exit_code = 6


class _Reload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    server: str | None = Field(default=None, pattern=SERVER_NAME)


def upstream_methods(upstream: UpstreamManager | None) -> dict[str, ControlMethod]:
    """The upstream methods; a daemon without servers answers them with none."""

    async def status(_params: dict[str, Any]) -> dict[str, Any]:
        return {"servers": [] if upstream is None else upstream.status()}

    async def reload(params: dict[str, Any]) -> dict[str, Any]:
        try:
            wanted = _Reload.model_validate(params)
        except ValidationError as error:
            msg = f"bad request: server: {error.errors()[0]['msg']}"
            raise BadControlRequestError(msg) from None
        if upstream is None:
            if wanted.server is not None:
                msg = f"no upstream server named {wanted.server} is configured"
                raise UnknownUpstreamError(msg)
            return {"reloaded": []}
        try:
            return {"reloaded": upstream.reload(wanted.server)}
        except UnknownServerError:
            msg = f"no upstream server named {wanted.server} is configured"
            raise UnknownUpstreamError(msg) from None

    return {"mcp.status": status, "mcp.reload": reload}
