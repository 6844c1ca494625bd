"""`annotate serve --workers N`: N server processes on one listening socket (docs/cli.md).

One Python process answers on one core at a time (the GIL); a team server under load needs more.
The parent checks everything that can fail (the folder, the store, the token, the port), binds the
socket and prints the address, then starts N workers: `python -m annotate.web.worker FD` with the
socket passed down (`pass_fds`) and the settings in `ANNOTATE_WORKER` (JSON). Each opens its own
store and app and accepts on the shared socket; the kernel hands each connection to one of them.

Nothing a worker answers from is its own: the database is the only state (the anchor route's
answers are keyed by the selectors read per request, tokens are read per request, the change
feed polls the database and, on PostgreSQL, is woken by NOTIFY), so a write through one worker
is seen by the next request to any other (tests/test_workers.py).

Stopping: SIGINT or SIGTERM to the parent sends SIGTERM to every worker (in their own process
group, so Ctrl+C reaches the parent only) and waits for them; a worker that does not stop within
`STOP_S` is killed. On Linux a worker also gets SIGTERM when the parent dies without a word
(`PR_SET_PDEATHSIG`): no orphan keeps the port. A worker that dies while serving is started
again; one that dies at start stops them all (its error is on stderr).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from .signin import Settings

__all__ = ["ENV", "Spec", "WorkerPid", "supervise"]

ENV = "ANNOTATE_WORKER"
HEALTH = "/__annotate/health"
PID_HEADER = b"x-annotate-worker"
STOP_S = 10.0  # uvicorn's graceful shutdown (2 s) and the store's close, with room to spare
STARTUP_S = 5.0  # a worker that dies sooner failed at start: starting it again would too


@dataclass(frozen=True)
class Spec:
    """What a worker serves: `annotate serve`'s options, checked by the parent already."""

    site: str
    project: str
    db: str | None = None
    read_only: bool = False
    team: Settings | None = None
    allowed_hosts: tuple[str, ...] = ()

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Spec:
        data: dict[str, Any] = json.loads(text)
        team = data.pop("team")
        return cls(
            **{**data, "allowed_hosts": tuple(data["allowed_hosts"])},
            team=None
            if team is None
            else Settings(
                identity_header=team["identity_header"],
                trusted_proxies=tuple(team["trusted_proxies"]),
                maintainers=tuple(team["maintainers"]),
                public_url=team["public_url"],
            ),
        )


class WorkerPid:
    """Adds `X-Annotate-Worker: PID` to the health check's answer, so that a client (the tests, an
    operator) can tell which worker answered on a connection. Other paths pass untouched."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.pid = str(os.getpid()).encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != HEALTH:
            await self.app(scope, receive, send)
            return

        async def with_pid(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), (PID_HEADER, self.pid)]
            await send(message)

        await self.app(scope, receive, with_pid)


def supervise(spec: Spec, sock: socket.socket, count: int) -> int:
    """Run `count` workers on `sock` until SIGINT or SIGTERM; return the exit status (0, or 1
    when a worker failed at start). Called by `annotate serve` after it printed the address."""
    stop = threading.Event()
    old = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    env = {**os.environ, ENV: spec.to_json()}
    workers: list[tuple[subprocess.Popen[bytes], float]] = []

    def start() -> tuple[subprocess.Popen[bytes], float]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "annotate.web.worker", str(sock.fileno()), str(os.getpid())],
            pass_fds=[sock.fileno()],
            env=env,
            stdin=subprocess.DEVNULL,
            # Their own session: Ctrl+C in the terminal reaches the parent, which stops them.
            start_new_session=True,
        )
        return proc, time.monotonic()

    status = 0
    try:
        workers = [start() for _ in range(count)]
        while not stop.wait(0.25):
            for i, (proc, started) in enumerate(workers):
                if proc.poll() is None:
                    continue
                if time.monotonic() - started < STARTUP_S:
                    print(
                        f"Error: worker {proc.pid} stopped at start (exit {proc.returncode})",
                        file=sys.stderr,
                    )
                    status = 1
                    stop.set()
                    break
                print(
                    f"Warning: worker {proc.pid} exited ({proc.returncode}); starting another",
                    file=sys.stderr,
                )
                workers[i] = start()
    finally:
        _stop_all([proc for proc, _ in workers])
        for s, handler in old.items():
            signal.signal(s, handler)
    return status


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_S
    for proc in procs:
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
