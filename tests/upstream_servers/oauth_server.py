"""An OAuth-protected MCP server and its authorization server in one process, for tests.

Run as `python tests/upstream_servers/oauth_server.py --port N [--access-ttl SECONDS]`; it
prints `READY` to stderr once it listens on 127.0.0.1:N. The authorization server lives at the
same origin: metadata at `/.well-known/oauth-authorization-server`, dynamic registration at
`/register`, `/authorize` (it redirects at once, with no person involved; `decision=deny` in its
query answers `error=access_denied` instead, as a person refusing would) and `/token` for the
authorization-code (PKCE S256 only) and refresh-token grants. Access tokens live
`--access-ttl` seconds and refresh tokens are rotated on use. `POST /revoke-all` forgets every
token. The MCP endpoint `/mcp` accepts only its own tokens, bound to its resource URL, and
offers one tool, `whoami`, which answers the token's client id.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import secrets
import socket
import sys
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode

import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

SCOPE = "tools"


@dataclass
class _Grant:
    """What a code or token was issued for."""

    client_id: str
    resource: str
    expires_at: float = 0.0


@dataclass
class _PendingCode:
    """An authorization code waiting for its token request."""

    grant: _Grant
    redirect_uri: str
    challenge: str


@dataclass
class AuthorizationServer:
    """The tokens this server issued, and the clients it registered."""

    issuer: str
    resource: str
    access_ttl: int
    clients: dict[str, list[str]] = field(default_factory=dict)
    codes: dict[str, _PendingCode] = field(default_factory=dict)
    access: dict[str, _Grant] = field(default_factory=dict)
    refresh: dict[str, _Grant] = field(default_factory=dict)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's client and resource, while it is live; None for anything else."""
        grant = self.access.get(token)
        if grant is None or grant.expires_at < time.time():
            return None
        return AccessToken(
            token=token,
            client_id=grant.client_id,
            scopes=[SCOPE],
            expires_at=int(grant.expires_at),
            resource=grant.resource,
        )

    def metadata(self) -> dict[str, object]:
        """RFC 8414 authorization-server metadata."""
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{self.issuer}/authorize",
            "token_endpoint": f"{self.issuer}/token",
            "registration_endpoint": f"{self.issuer}/register",
            "scopes_supported": [SCOPE],
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
        }

    def register(self, body: dict[str, object]) -> Response:
        """Register a public client for the redirect URIs it names."""
        uris = body.get("redirect_uris")
        if not isinstance(uris, list) or not uris:
            return _error("invalid_redirect_uri", 400)
        client_id = "client-" + secrets.token_hex(8)
        self.clients[client_id] = [str(uri) for uri in uris]
        answer = {
            "client_id": client_id,
            "client_id_issued_at": int(time.time()),
            "redirect_uris": self.clients[client_id],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "client_name": body.get("client_name"),
            "scope": body.get("scope"),
        }
        return JSONResponse(answer, status_code=201)

    def authorize(self, query: dict[str, str]) -> Response:
        """Redirect back to the client at once: with a code, or with the refusal asked for."""
        client_id, redirect_uri = query.get("client_id", ""), query.get("redirect_uri", "")
        if redirect_uri not in self.clients.get(client_id, []):
            return _error("invalid_request", 400)
        state = query.get("state", "")
        if query.get("decision") == "deny":
            return _redirect(redirect_uri, error="access_denied", state=state)
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return _redirect(redirect_uri, error="invalid_request", state=state)
        if query.get("resource") != self.resource:
            return _redirect(redirect_uri, error="invalid_target", state=state)
        code = secrets.token_urlsafe(16)
        grant = _Grant(client_id, self.resource, time.time() + 60)
        self.codes[code] = _PendingCode(grant, redirect_uri, query["code_challenge"])
        return _redirect(redirect_uri, code=code, state=state)

    def token(self, form: dict[str, str]) -> Response:
        """Exchange a code (checking PKCE) or a refresh token for a fresh pair."""
        if form.get("grant_type") == "authorization_code":
            pending = self.codes.pop(form.get("code", ""), None)
            if (
                pending is None
                or pending.grant.expires_at < time.time()
                or pending.grant.client_id != form.get("client_id")
                or pending.redirect_uri != form.get("redirect_uri")
                or _challenge(form.get("code_verifier", "")) != pending.challenge
            ):
                return _error("invalid_grant", 400)
            return self._issue(pending.grant.client_id)
        if form.get("grant_type") == "refresh_token":
            grant = self.refresh.pop(form.get("refresh_token", ""), None)
            if grant is None or grant.client_id != form.get("client_id"):
                return _error("invalid_grant", 400)
            return self._issue(grant.client_id)
        return _error("unsupported_grant_type", 400)

    def _issue(self, client_id: str) -> Response:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = _Grant(client_id, self.resource, time.time() + self.access_ttl)
        self.refresh[refresh] = _Grant(client_id, self.resource)
        answer = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_ttl,
            "refresh_token": refresh,
            "scope": SCOPE,
        }
        return JSONResponse(answer, headers={"cache-control": "no-store"})


def _challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _error(code: str, status: int) -> Response:
    return JSONResponse({"error": code}, status_code=status)


def _redirect(uri: str, **params: str) -> Response:
    return RedirectResponse(f"{uri}?{urlencode(params)}", status_code=302)


def build(port: int, access_ttl: int) -> MCPServer:
    """The MCP server at `/mcp`, with the authorization server's routes beside it."""
    issuer = f"http://127.0.0.1:{port}"
    server = AuthorizationServer(issuer, f"{issuer}/mcp", access_ttl)
    settings = AuthSettings(
        issuer_url=issuer,
        resource_server_url=server.resource,
        required_scopes=[SCOPE],
        validate_token_resource=True,
    )
    mcp = MCPServer("oauth-test", auth=settings, token_verifier=server, log_level="WARNING")

    @mcp.tool()
    def whoami() -> str:
        """The client id of the token this call came with."""
        token = get_access_token()
        return "" if token is None else token.client_id

    @mcp.custom_route("/.well-known/oauth-authorization-server", methods=["GET"])
    async def metadata(_: Request) -> Response:
        return JSONResponse(server.metadata())

    @mcp.custom_route("/register", methods=["POST"])
    async def register(request: Request) -> Response:
        return server.register(await request.json())

    @mcp.custom_route("/authorize", methods=["GET"])
    async def authorize(request: Request) -> Response:
        return server.authorize(dict(request.query_params))

    @mcp.custom_route("/token", methods=["POST"])
    async def token(request: Request) -> Response:
        form = await request.form()
        return server.token({key: str(value) for key, value in form.items()})

    @mcp.custom_route("/revoke-all", methods=["POST"])
    async def revoke_all(_: Request) -> Response:
        server.access.clear()
        server.refresh.clear()
        return Response(status_code=204)

    return mcp


class _Server(uvicorn.Server):
    """Uvicorn, saying READY on stderr once it listens."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start listening, then say so."""
        await super().startup(sockets)
        if self.started:
            sys.stderr.write("READY\n")
            sys.stderr.flush()


def serve(port: int, access_ttl: int) -> None:
    """Listen on 127.0.0.1:`port` until stopped (SIGINT or SIGTERM)."""
    app = build(port, access_ttl).streamable_http_app()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    _Server(config).run()


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--access-ttl", type=int, default=2)
    args = parser.parse_args()
    serve(args.port, args.access_ttl)


if __name__ == "__main__":
    main()
