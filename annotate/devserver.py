"""`annotate proxy [-- CMD…]`: start a dev server on a free loopback port, the proxy in front of it
on the user's port, and stop both on Ctrl+C (or when the dev server stops)."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shutil
import signal
import socket
import subprocess
import sysconfig
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

from . import __version__
from .config import config_file
from .errors import ProjectNotFound, ValidationError
from .project import find_project
from .proxy import Proxy, TargetCheckProtocol, Upstream, parse_upstream
from .store import Store
from .store import open as open_store
from .tokens import TokenFile
from .web.app import create_app
from .web.server import bind, exposed, extra_hosts, feed_server, url_host
from .web.static import overlay_snippet

if TYPE_CHECKING:
    import uvicorn

__all__ = ["dev_command", "free_port", "program", "project_for", "run", "wait_until_listening"]

# Generators whose `serve` takes the address as `-a HOST:PORT` (`--dev-addr`).
DEV_ADDR_TOOLS = ("zensical", "mkdocs", "properdocs")
ADDRESS_OPTIONS = ("-a", "--dev-addr")
STOP_WAIT = 5.0


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (the dev server binds it a moment later)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _tool(args: Sequence[str]) -> tuple[str, int] | None:
    """The generator `args` runs and the index of its `serve` argument, if it is one we know:
    `zensical serve`, `mkdocs serve`, `python -m mkdocs serve`, `uv run properdocs serve`…"""
    for i, arg in enumerate(args):
        name = Path(arg).name.lower().removesuffix(".exe")
        if name in DEV_ADDR_TOOLS and i + 1 < len(args) and args[i + 1] == "serve":
            return name, i + 1
    return None


def dev_command(args: Sequence[str], port: int, host: str = "127.0.0.1") -> tuple[list[str], str]:
    """The command to run and the address it will listen on.

    `{port}` (and `{host}`) in any argument are replaced; Zensical, MkDocs and ProperDocs get
    `-a HOST:PORT` after `serve`, unless the command already names an address, which is then used.
    """
    if not args:
        raise ValidationError(
            "Give the dev server's command after --, e.g. -- zensical serve", "CMD"
        )
    address = f"{url_host(host)}:{port}"
    if any("{port}" in a or "{host}" in a for a in args):
        return [a.replace("{port}", str(port)).replace("{host}", host) for a in args], address
    found = _tool(args)
    if found is None:
        raise ValidationError(
            f"Cannot tell how to give {args[0]!r} a port: put {{port}} where the port goes, e.g. "
            "-- hugo server --port {port}",
            "CMD",
        )
    _, at = found
    for i, arg in enumerate(args):
        if arg in ADDRESS_OPTIONS and i + 1 < len(args):
            return list(args), args[i + 1]
        for option in ADDRESS_OPTIONS:
            if arg.startswith(option + "="):
                return list(args), arg.split("=", 1)[1]
    return [*args[: at + 1], "-a", address, *args[at + 1 :]], address


def program(name: str) -> str:
    """`name` as the command will be started: found on PATH, else beside the running annotate
    (`.venv/bin/annotate proxy -- mkdocs serve` without the venv activated finds its mkdocs)."""
    if os.sep in name or (os.altsep and os.altsep in name) or shutil.which(name):
        return name
    return shutil.which(name, path=sysconfig.get_path("scripts")) or name


def project_for(project: str | os.PathLike[str] | None) -> Path:
    """The project the proxy works on: `--project`, else the one found upwards from the current
    folder, else the current folder itself, as `annotate serve DIR --project .` takes it: a
    static site with no docs config is reviewed too, its notes without source lines."""
    if project is not None:
        return find_project(project)
    try:
        return find_project()
    except ProjectNotFound:
        return Path.cwd()


def wait_until_listening(
    upstream: Upstream, process: subprocess.Popen[bytes] | None, timeout: float
) -> None:
    """Return once `upstream` accepts connections; raise if the process ends or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        if process is not None and process.poll() is not None:
            raise ValidationError(
                f"The dev server stopped (exit code {process.returncode}) before listening on "
                f"{upstream.netloc}",
                "CMD",
            )
        with (
            contextlib.suppress(OSError),
            socket.create_connection((upstream.host, upstream.port), timeout=1),
        ):
            return
        if time.monotonic() > deadline:
            raise ValidationError(
                f"Nothing listens on {upstream.netloc} after {timeout:g} s: is that the dev "
                "server's address? (--timeout waits longer)",
                "upstream",
            )
        time.sleep(0.1)


def _signal(process: subprocess.Popen[bytes], sig: int) -> None:
    """`sig` to the dev server's whole process group (what it started stops with it)."""
    if process.poll() is not None:
        return
    killpg = getattr(os, "killpg", None)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if killpg is None:  # Windows: no process groups to signal
            process.terminate()
        else:
            killpg(process.pid, sig)


def _stop(process: subprocess.Popen[bytes], *, interrupted: bool = False) -> None:
    """Ctrl+C to the dev server (unless `interrupted`: sent already), then harder if it does
    not stop."""
    signals = [signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)]
    if not interrupted:
        signals.insert(0, signal.SIGINT)
    try:
        process.wait(0 if not interrupted else STOP_WAIT)
        return
    except subprocess.TimeoutExpired:
        pass
    for sig in signals:
        _signal(process, sig)
        try:
            process.wait(STOP_WAIT)
            return
        except subprocess.TimeoutExpired:
            continue


def _stop_on_signals(server: uvicorn.Server) -> None:
    """SIGTERM and SIGHUP stop the proxy as Ctrl+C does, so the dev server is stopped too.

    uvicorn re-raises the SIGTERM it handled once it has stopped; with the default handler that
    would end the process before it stops the dev server (which, in its own process group, would
    live on). SIGHUP (the terminal closed) is not uvicorn's at all.
    """

    def interrupt(sig: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    if hasattr(signal, "SIGHUP"):
        signal.signal(
            signal.SIGHUP,
            lambda sig, frame: server.handle_exit(signal.SIGINT, frame),
        )


def run(
    command: Sequence[str] = (),
    *,
    upstream_url: str | None = None,
    project: str | os.PathLike[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 8000,
    read_only: bool = False,
    allow_remote_upstream: bool = False,
    timeout: float = 60.0,
    echo: Callable[[str], None] = print,
    db: str | None = None,
) -> int:
    """Proxy a dev server until interrupted; the exit code (the dev server's when it stopped).
    `project`: as `project_for` takes it. `db`: another store than the project's file (an SQLite
    file or a `postgresql://` URL)."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")
    if not command and not upstream_url:
        raise ValidationError(
            "Give the dev server's command after -- (annotate proxy -- zensical serve) or the "
            "address of a running one (--upstream http://127.0.0.1:8001)",
            "upstream",
        )
    project = project_for(project)
    store = open_store(project, db=db)
    token = TokenFile(project)
    sock = bind(host, port)
    process: subprocess.Popen[bytes] | None = None
    interrupted = threading.Event()
    try:
        if command:
            if upstream_url:
                # The user says where CMD listens: only its placeholders are filled in.
                upstream = parse_upstream(upstream_url, allow_remote=allow_remote_upstream)
                args = [
                    a.replace("{port}", str(upstream.port)).replace("{host}", upstream.host)
                    for a in command
                ]
            else:
                args, address = dev_command(command, free_port(), "127.0.0.1")
                upstream = parse_upstream(address, allow_remote=allow_remote_upstream)
            args = [program(args[0]), *args[1:]]
            try:
                # Its own process group: Ctrl+C reaches it once, from us, when the proxy stops
                # taking requests, and nothing it starts outlives it.
                process = subprocess.Popen(args, start_new_session=os.name == "posix")
            except OSError as e:
                raise ValidationError(
                    f"Cannot start {args[0]!r}: {e.strerror or e}", "CMD"
                ) from None
        else:
            assert upstream_url is not None
            upstream = parse_upstream(upstream_url, allow_remote=allow_remote_upstream)
        wait_until_listening(upstream, process, timeout)
        if db is None and config_file(Path(project)) is None:
            echo(
                f"No site config (zensical.toml, mkdocs.yml…) in {project}: notes are kept in "
                f"{store.path} without source lines."
            )
        code = _serve(
            upstream, sock, store, token, host=host, read_only=read_only, echo=echo,
            process=process, interrupted=interrupted,
        )  # fmt: skip
    finally:
        if process is not None:
            _stop(process, interrupted=interrupted.is_set())
        sock.close()
        store.close()
        gc.freeze()  # what serving made: not walked again at exit either
    return code


def _serve(
    upstream: Upstream,
    sock: socket.socket,
    store: Store,
    token: TokenFile,
    *,
    host: str,
    read_only: bool,
    echo: Callable[[str], None],
    process: subprocess.Popen[bytes] | None,
    interrupted: threading.Event,
) -> int:
    import uvicorn

    app = create_app(store, token=token, read_only=read_only, allowed_hosts=extra_hosts(host))
    proxy = Proxy(
        upstream,
        app,
        lambda: overlay_snippet(token(), read_only=read_only, version=__version__, pinned=True),
        token=token,
        allowed_hosts=extra_hosts(host),
    )
    config = uvicorn.Config(
        proxy,
        http=TargetCheckProtocol,
        ws="websockets-sansio",
        ws_per_message_deflate=False,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        date_header=False,
        timeout_graceful_shutdown=2,
    )
    server = feed_server(config, app.state.feed)
    stop_server = server.handle_exit

    def handle_exit(sig: int, frame: FrameType | None) -> None:
        # Everything stops at once (issue #27): the proxy ends its forwarded long polls and
        # WebSockets, which would otherwise hold uvicorn's shutdown, and the dev server gets its
        # Ctrl+C now, not after the proxy is done.
        if not interrupted.is_set():
            interrupted.set()
            proxy.stop()
            if process is not None:
                _signal(process, signal.SIGINT)
        stop_server(sig, frame)

    # uvicorn installs `server.handle_exit` as its signal handler when it starts.
    server.handle_exit = handle_exit  # type: ignore[method-assign]
    stopped_by: list[int] = []
    if process is not None:

        def watch() -> None:
            code = process.wait()
            if not interrupted.is_set():
                # The dev server stopped on its own (a crash, a config error): so does the proxy.
                stopped_by.append(code)
                proxy.stop()
                server.should_exit = True

        threading.Thread(target=watch, daemon=True).start()
    base = f"http://{url_host(host)}:{sock.getsockname()[1]}/"
    what = f"the dev server at {upstream.netloc}"
    mode = ", read-only" if read_only else ""
    echo(f"Reviewing {base} ({what}; review page: {base}__annotate/{mode}). Press Ctrl+C to stop.")
    if exposed(host):
        echo(
            f"Warning: listening on {host or 'every interface'}: other machines can reach this "
            "proxy and the dev server's pages through it; the token still guards every change."
        )
    _stop_on_signals(server)
    # What is loaded by now lives until the end: out of the collector's way, it is not walked
    # at every full collection while serving, nor once more when the process exits (about 1 s
    # of a 2 s Ctrl+C with the MCP SDK loaded).
    gc.freeze()
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    if stopped_by:
        echo(f"The dev server stopped (exit code {stopped_by[0]}).")
        return stopped_by[0] or 1
    return 0
