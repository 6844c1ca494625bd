"""The top floor: the surfaces put together (docs/architecture.md, "The floors").

No module of `annotate/` imports this one but the entry points (the CLI, `annotate serve`, the
chat host, the bridge and `annotate/web/team.py`'s factory). It joins what the floors below keep
apart, so that none of them imports another surface:

- `build_server`: the MCP tools and prompts (annotate/mcp_server.py) with the review view in the
  chat (annotate/chatview.py), whose REST calls reach `view_app`, the web app of
  annotate/web/app.py, in this process;
- `create_app(…, mcp=verify)`: the web app with those tools over Streamable HTTP at
  `/__annotate/mcp` (annotate/mcp_http.py);
- `team_app` and `app`: team mode's app and its ASGI factory (`uvicorn --factory
  annotate.web.team:app`, docs/team.md);
- `local_app` and `local_factory`: the single-user app of `annotate serve` (the project token) and
  its factory (`uvicorn --factory annotate.web.local:app`, docs/serve.md);
- `run`: `annotate mcp`, the tools over stdio.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.types import ASGIApp

from . import chatview, mcp_server
from .config import site_config
from .errors import AnnotateError, ValidationError
from .mcp_http import McpHttp, Verify, project_token
from .project import find_project
from .store import Store
from .store import open as open_store
from .tokens import TokenFile
from .web import app as web_app
from .web.signin import NO_IDENTITY, Settings, has_identity_source

__all__ = [
    "FORWARDED_WARNING",
    "app",
    "build_server",
    "create_app",
    "forwarded_from_anyone",
    "local_app",
    "local_factory",
    "run",
    "team_app",
    "view_app",
]


# -- the MCP server with the chat view ------------------------------------------------------------


def view_app(store: Store, token: str | None) -> ASGIApp:
    """The web app the chat view's REST calls go to (`chatview.WebApp`): with the project token
    `token`, or in team mode (None), where each caller's bearer token names them."""
    if token is None:
        return web_app.create_app(store, team=Settings(), changes_timeout=chatview.POLL_S)
    return web_app.create_app(store, token=token, changes_timeout=chatview.POLL_S)


def build_server(
    project: str | Path | None = None,
    db: str | Path | None = None,
    *,
    store: Store | None = None,
    pretty: bool = False,
) -> MCPServer:
    """`mcp_server.build_server` with the review view in the chat (`chatview.build_apps`)."""
    return mcp_server.build_server(
        project,
        db,
        store=store,
        pretty=pretty,
        view=lambda get_store: chatview.build_apps(get_store, view_app),
    )


def run(
    project: str | Path | None = None, db: str | Path | None = None, *, pretty: bool = False
) -> None:
    """`annotate mcp`: serve the MCP tools over stdio until the client closes the connection."""
    anyio.run(mcp_server.serve_stdio, build_server(project, db, pretty=pretty))


# -- the web app with the MCP tools over HTTP -----------------------------------------------------


def create_app(store: Store, *, mcp: Verify | None = None, **options: Any) -> Starlette:
    """`annotate.web.create_app(store, **options)`, also serving the MCP tools over Streamable
    HTTP at `/__annotate/mcp` to the callers the bearer-token check `mcp` accepts
    (annotate/mcp_http.py); its server must run the app's lifespan."""
    endpoint = None if mcp is None else McpHttp(build_server(store=store), mcp)
    return web_app.create_app(store, endpoint=endpoint, **options)


# -- the single-user app and its ASGI factory -----------------------------------------------------


def local_app(
    site_dir: str | Path,
    store: Store,
    project: str | Path,
    *,
    read_only: bool = False,
    allowed_hosts: list[str] | tuple[str, ...] = (),
) -> Starlette:
    """The single-user app over `store` (what `annotate serve` runs): the project token guards
    every change and is created (0600) when missing."""
    token = TokenFile(project)
    return create_app(
        store,
        token=token,
        read_only=read_only,
        site_dir=site_dir,
        allowed_hosts=list(allowed_hosts),
        # Agents elsewhere: the MCP tools at /__annotate/mcp, bearer = the project token.
        mcp=None if read_only else project_token(token),
    )


def _flag(env: Mapping[str, Any], name: str) -> bool:
    return str(env.get(name, "")).lower() in ("1", "true", "yes")


def _site(env: Mapping[str, Any]) -> str:
    site = env.get("ANNOTATE_SITE_DIR")
    if not site or not Path(site).is_dir():
        raise ValidationError(
            f"ANNOTATE_SITE_DIR must name the built site's folder, got {site!r}",
            "ANNOTATE_SITE_DIR",
        )
    return str(site)


def local_factory(environ: Mapping[str, str] | None = None) -> Starlette:
    """The single-user ASGI app factory: `uvicorn --factory annotate.web.local:app`.

    Settings from the environment: `ANNOTATE_SITE_DIR` (required), `ANNOTATE_PROJECT`,
    `ANNOTATE_DB`, `ANNOTATE_READ_ONLY`, and `ANNOTATE_ALLOWED_HOSTS` (comma-separated `Host`
    names accepted besides loopback). Exits with a one-line message when one is wrong."""
    env: Mapping[str, Any] = os.environ if environ is None else environ
    try:
        site = _site(env)
        root = find_project(env.get("ANNOTATE_PROJECT") or None)
        site_config(root)
        store = open_store(root, db=env.get("ANNOTATE_DB") or None)
        hosts = [h.strip() for h in str(env.get("ANNOTATE_ALLOWED_HOSTS", "")).split(",")]
        return local_app(
            site,
            store,
            root,
            read_only=_flag(env, "ANNOTATE_READ_ONLY"),
            allowed_hosts=[h for h in hosts if h],
        )
    except AnnotateError as e:
        raise SystemExit(f"Error: {e}") from None


# -- team mode's app and its ASGI factory ---------------------------------------------------------


def team_app(
    site_dir: str | Path,
    store: Store,
    settings: Settings,
    *,
    read_only: bool = False,
    allowed_hosts: list[str] | tuple[str, ...] = (),
) -> Starlette:
    """The team app over `store` (what `annotate serve --team` and `app()` run)."""
    return create_app(
        store,
        read_only=read_only,
        site_dir=site_dir,
        allowed_hosts=list(allowed_hosts),
        team=settings,
        # Agents elsewhere: the MCP tools at /__annotate/mcp, bearer = an agent's own token
        # (annotate/mcp_http.py takes agent and maintainer tokens only).
        mcp=None if read_only else store.person_for_token,
    )


def forwarded_from_anyone(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether the ASGI server was told to take `X-Forwarded-For` from any peer (uvicorn's and
    gunicorn's `--forwarded-allow-ips '*'`, or `FORWARDED_ALLOW_IPS=*`) with proxy headers on."""
    if "--no-proxy-headers" in argv:
        return False
    values = [environ.get("FORWARDED_ALLOW_IPS", "")]
    for i, arg in enumerate(argv):
        if arg == "--forwarded-allow-ips" and i + 1 < len(argv):
            values.append(argv[i + 1])
        elif arg.startswith("--forwarded-allow-ips="):
            values.append(arg.partition("=")[2])
    return any("*" in (v.strip() for v in value.split(",")) for value in values)


FORWARDED_WARNING = (
    "Warning: the server takes X-Forwarded-For from any client (--forwarded-allow-ips '*'): "
    "any client can then claim a trusted proxy's address, and send the identity header as that "
    "proxy would. Run with --no-proxy-headers (docs/team.md)"
)


def app(environ: Mapping[str, str] | None = None, argv: Sequence[str] | None = None) -> Starlette:
    """The ASGI app factory: `uvicorn --factory annotate.web.team:app` (settings: `ENV`).

    Exits with a one-line message when a setting is wrong or no identity source is configured:
    a server other machines reach must know who is asking. Warns on stderr when the server
    would take `X-Forwarded-For` from anyone (`forwarded_from_anyone`; `argv`: the server's
    command line, `sys.argv` by default).
    """
    env: Mapping[str, Any] = os.environ if environ is None else environ
    try:
        site = _site(env)
        settings = Settings.from_env(env)
        root = find_project(env.get("ANNOTATE_PROJECT") or None)
        site_config(root)
        db = env.get("ANNOTATE_DB")
        store = open_store(root, db=db or None)
        if not has_identity_source(settings, store):
            raise ValidationError(NO_IDENTITY, "ANNOTATE_IDENTITY_HEADER")
        if forwarded_from_anyone(sys.argv if argv is None else argv, env):
            print(FORWARDED_WARNING, file=sys.stderr)
        return team_app(
            site,
            store,
            settings,
            read_only=_flag(env, "ANNOTATE_READ_ONLY"),
        )
    except AnnotateError as e:
        raise SystemExit(f"Error: {e}") from None
