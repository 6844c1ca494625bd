"""`annotate serve DIR`: a built static site with the overlay and the API, on uvicorn."""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from ..compose import local_app, team_app
from ..config import site_config
from ..errors import ValidationError
from ..store import Store
from ..store import open as open_store
from .security import is_loopback
from .signin import NO_IDENTITY, Settings, has_identity_source

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from .feed import ChangeFeed
    from .workers import Spec

__all__ = [
    "bind",
    "build_app",
    "exposed",
    "extra_hosts",
    "feed_server",
    "serve",
    "url_host",
    "uvicorn_options",
]

WILDCARDS = ("0.0.0.0", "::", "")


def url_host(host: str) -> str:
    """How `host` appears in a URL: IPv6 in brackets, a wildcard as the loopback address."""
    if host in WILDCARDS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def extra_hosts(host: str) -> list[str]:
    """`Host` names to accept besides loopback: the one the user chose; for a wildcard, this
    machine's names and addresses (best effort)."""
    if is_loopback(host.strip("[]").lower()):
        return []
    if host not in WILDCARDS:
        return [host]
    names = {socket.gethostname(), socket.getfqdn()}
    for name in list(names):
        with contextlib.suppress(OSError):
            names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
    return sorted(n for n in names if n)


def exposed(host: str) -> bool:
    """Whether listening on `host` lets other machines in (a wildcard or a non-loopback address)."""
    return host in WILDCARDS or not is_loopback(url_host(host).strip("[]").lower())


def feed_server(config: uvicorn.Config, feed: ChangeFeed) -> uvicorn.Server:
    """A uvicorn server that closes the change feed when told to stop: pending long-polls answer
    now instead of holding the shutdown for up to 25 s (`annotate serve`, `annotate proxy`)."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            feed.close()
            super().handle_exit(sig, frame)

    return Server(config)


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, or a one-line error naming the port (the CLI exits 1)."""
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as e:
        raise ValidationError(f"Cannot listen on {host!r}: {e.strerror}", "host") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        if hasattr(socket, "SO_REUSEADDR"):
            # Lets a restart reuse a port in TIME_WAIT; a port someone listens on stays refused.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # uvicorn's own default: a burst of new connections (a team's first minute) waits in
        # the queue instead of being refused and retried a second later (SYN backoff).
        sock.listen(2048)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise ValidationError(
                f"Port {port} on {host} is already in use; stop the other server or choose "
                "another with --port",
                "port",
            ) from None
        raise ValidationError(
            f"Cannot listen on {host}:{port}: {e.strerror or e}", "host"
        ) from None
    sock.setblocking(False)
    return sock


def uvicorn_options(read_only: bool, team: Settings | None) -> dict[str, Any]:
    """`uvicorn.Config`'s options for `annotate serve` (each worker's the same)."""
    return {
        "log_level": "warning",
        "access_log": False,
        "lifespan": "off" if read_only else "on",
        "server_header": False,
        "timeout_graceful_shutdown": 2,
        # Team mode trusts the identity header by the direct peer's address: uvicorn must not
        # replace it with one a proxy's X-Forwarded-For names.
        "proxy_headers": team is None,
    }


def build_app(spec: Spec, store: Store) -> Starlette:
    """The app `annotate serve` runs over `store`, in its process or in each worker."""
    if spec.team is not None:
        return team_app(
            spec.site,
            store,
            spec.team,
            read_only=spec.read_only,
            allowed_hosts=spec.allowed_hosts,
        )
    return local_app(
        spec.site,
        store,
        spec.project,
        read_only=spec.read_only,
        allowed_hosts=spec.allowed_hosts,
    )


def serve(
    site_dir: str | Path,
    *,
    project: str | Path = ".",
    host: str = "127.0.0.1",
    port: int = 8000,
    read_only: bool = False,
    echo: Callable[[str], None] = print,
    db: str | None = None,
    team: Settings | None = None,
    workers: int = 1,
) -> None:
    """Serve `site_dir` until interrupted. Everything that can fail does so before the first
    request: the folder, the store, the token (created 0600 here), the port. `db`: another
    store than the project's file (an SQLite file or a `postgresql://` URL).

    `team`: team mode (docs/team.md): people instead of the project token; refused on an address
    other machines reach until an identity source is configured. `workers`: that many server
    processes on the one socket (annotate/web/workers.py)."""
    import uvicorn

    from .workers import Spec, supervise

    if workers < 1:
        raise ValidationError(f"--workers must be 1 or more, got {workers}", "workers")
    if workers > 1 and os.name != "posix":
        raise ValidationError("--workers needs a POSIX system (Linux, macOS)", "workers")

    # Unexpected errors are logged by the app (never sent to the browser): show them.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    site = Path(site_dir)
    if not site.is_dir():
        raise ValidationError(
            f"{str(site)!r} is not a folder: give the built site, e.g. `annotate serve site/`",
            "DIR",
        )
    site_config(project)  # a broken config is reported now, not on the first page's note
    store = open_store(project, db=db)
    store.keep_open()
    if team is not None and exposed(host) and not has_identity_source(team, store):
        store.close()
        raise ValidationError(f"{NO_IDENTITY}; or listen on 127.0.0.1", "identity-header")
    spec = Spec(str(site), str(project), db, read_only, team, tuple(extra_hosts(host)))
    # The app is built here with one worker; with more, the workers build theirs, and this
    # process only checks (the token file is created now) and waits.
    app = build_app(spec, store)
    sock = bind(host, port)
    actual_port = sock.getsockname()[1]
    server = feed_server(uvicorn.Config(app, **uvicorn_options(read_only, team)), app.state.feed)
    base = f"http://{url_host(host)}:{actual_port}/"
    mode = (", read-only" if read_only else "") + (", team mode" if team else "")
    mode += f", {workers} workers" if workers > 1 else ""
    echo(f"Serving {site} at {base} (review page: {base}__annotate/{mode}). Press Ctrl+C to stop.")
    if exposed(host) and team is None:
        echo(
            f"Warning: listening on {host or 'every interface'}: other machines can reach this "
            "server; the token still guards every change."
        )
    if team is not None and not has_identity_source(team, store):
        echo("No one can sign in yet: add a personal token with `annotate token add NAME`.")
    if workers > 1:
        store.close()
        try:
            status = supervise(spec, sock, workers)
        finally:
            sock.close()
        if status:
            raise SystemExit(status)
        return
    # What is loaded by now (modules, the app) lives as long as the server: frozen, the
    # collector's full passes no longer walk it, and every request waits while one runs.
    gc.collect()
    gc.freeze()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn re-raises the Ctrl+C it handled; stopping is what the user asked for.
        pass
    finally:
        sock.close()
        store.close()
