"""The MCP tools over Streamable HTTP at `/__annotate/mcp` on `annotate serve` (docs/remote-agents.md).

The same server as `annotate mcp` (`compose.build_server`, on the web app's store), behind the
`mcp` SDK's Streamable HTTP transport, mounted in the Starlette app (annotate/web/app.py) by
annotate/compose.py; the app's lifespan runs the SDK's session manager. Stateless: every request stands alone, so several workers
or instances behind a load balancer answer an agent alike, and a `wait_for_review` streams its
progress on the response of its own POST.

Who may call: a bearer token (`Authorization: Bearer …`) that `verify(token)` maps to a caller;
none, or one it refuses → 401 `{error, code: "unauthorized"}`; a caller whose role is not `agent`
or `maintainer` (a reviewer's token) → 403 `{error, code: "forbidden"}`. In single-user mode
`verify` accepts the project token (`project_token`); a team server passes its personal tokens'
lookup (`Store.person_for_token`).
`Host` and `Origin` are checked by the app's `Guard` (annotate/web/security.py) for this path as for
every other, with the `--host` the server was started with; the SDK's own DNS-rebinding check
(loopback names only) is turned off here rather than left to refuse the public host a team server
is reached by. Bodies are limited to the API's 1 MB (413 as JSON), and parsed as strictly as the
API parses its own (issue #32): a key twice in one object, `NaN`, over-long numbers or non-UTF-8
are refused with a JSON-RPC parse error, where the SDK's parser would take the last key's value.
"""

from __future__ import annotations

import contextlib
import hmac
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from . import strictjson
from .identity import Person
from .web.responses import TOO_LARGE, UNAUTHORIZED, JsonResponse, error_response
from .web.security import BODY_LIMIT, read_body, replay

__all__ = ["MCP_PATH", "ROLES", "Caller", "McpHttp", "Verify", "bearer", "person", "project_token"]

MCP_PATH = "/__annotate/mcp"
PARSE_ERROR = -32700  # JSON-RPC 2.0
# The roles whose tokens may use the tools: a reviewer works in the browser.
ROLES = ("agent", "maintainer")
FORBIDDEN = "forbidden"


class Caller(Protocol):
    """Who called: what `annotate.identity.Person` provides (a name and a role)."""

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...


Verify = Callable[[str], Caller | None]


@dataclass(frozen=True, slots=True)
class ProjectOwner:
    """The caller holding the single-user project token: the project's owner."""

    name: str = "owner"
    role: str = "maintainer"


def project_token(current: Callable[[], str]) -> Verify:
    """`verify` for single-user mode: the project token (annotate/tokens.py), compared in
    constant time, re-read on each call so `annotate token --rotate` takes effect at once."""
    owner = ProjectOwner()

    def verify(token: str) -> Caller | None:
        expected = current().encode("latin-1")
        return owner if hmac.compare_digest(token.encode("latin-1"), expected) else None

    return verify


def person(ctx: Context[Any]) -> Person | None:
    """Who calls a tool, in team mode: the person whose bearer token `McpHttp` verified (it puts
    them on the request's state), so the store records them as author and applies their role's
    checks (annotate/identity.py). None over stdio and for single-user mode's project token (its
    owner is no `Person`): nothing is recorded or checked, as before."""
    found = getattr(getattr(ctx.request_context.request, "state", None), "person", None)
    return found if isinstance(found, Person) else None


def bearer(ctx: Context[Any]) -> str | None:
    """The bearer token of a team-mode caller (`person`), to pass on in their name; else None."""
    if person(ctx) is None:
        return None
    headers = getattr(ctx.request_context.request, "headers", None)
    return _bearer(headers) if isinstance(headers, Headers) else None


def _bearer(headers: Headers) -> str | None:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class McpHttp:
    """The ASGI endpoint at `MCP_PATH`: the bearer check, then the SDK's transport.

    `lifespan()` runs the SDK's session manager; a manager runs once, so each lifespan (a test
    client entered twice, a restarted server) gets a new one.
    """

    path = MCP_PATH
    methods = ("GET", "POST", "DELETE")

    def __init__(self, server: MCPServer, verify: Verify) -> None:
        self.server = server
        self.verify = verify
        self._manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(
            app=self.server._lowlevel_server,
            stateless=True,
            # Host and Origin: checked by the app's Guard (module docstring).
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=BODY_LIMIT,
        )
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        token = _bearer(headers)
        caller = None if token is None else self._check(token)
        if caller is None:
            message = (
                "Missing bearer token: send Authorization: Bearer <token>"
                if token is None
                else "Wrong or revoked bearer token"
            )
            response = error_response(
                401, UNAUTHORIZED, message, {"WWW-Authenticate": 'Bearer realm="annotate"'}
            )
            await response(scope, receive, send)
            return
        if caller.role not in ROLES:
            response = error_response(
                403,
                FORBIDDEN,
                f"{caller.name} is a {caller.role}: only agent and maintainer tokens may use "
                "the MCP tools",
            )
            await response(scope, receive, send)
            return
        if self._manager is None:
            response = error_response(
                503, "unavailable", "The MCP endpoint is not running (the app's lifespan is off)"
            )
            await response(scope, receive, send)
            return
        if scope["method"] == "POST":
            # Read with the API's limit as it streams in (annotate/web/security.py): a refusal
            # is the API's JSON, not the SDK's plain-text 413.
            body = await read_body(receive, headers, BODY_LIMIT)
            if body is None:
                response = error_response(
                    413,
                    TOO_LARGE,
                    f"Request body is larger than the limit of {BODY_LIMIT // (1024 * 1024)} MB",
                    {"Connection": "close"},
                )
                await response(scope, receive, send)
                return
            problem = strict_problem(body)
            if problem is not None:
                error = {"code": PARSE_ERROR, "message": f"Parse error: {problem}"}
                response = JsonResponse({"jsonrpc": "2.0", "id": None, "error": error}, 400)
                await response(scope, receive, send)
                return
            receive = replay(body, receive)
        # As the web app does for its routes: the caller on `request.state.person`.
        scope.setdefault("state", {})["person"] = caller
        await self._manager.handle_request(scope, receive, send)

    def _check(self, token: str) -> Caller | None:
        try:
            token.encode("latin-1")
        except UnicodeEncodeError:
            return None
        return self.verify(token)


def strict_problem(body: bytes) -> str | None:
    """Why the REST API's parser (annotate/strictjson.py) refuses `body`, or None: one reading of
    a message for us and for any proxy or log in between, never the last of two keys."""
    try:
        strictjson.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        return "the body is not UTF-8"
    except strictjson.TooDeep:
        return "the body is nested too deeply"
    except ValueError as e:
        return str(e)
    return None
