"""A throwaway PostgreSQL server in a temporary folder on a free loopback port: the tests'
session cluster (tests/conftest.py) and the team benchmark's (benchmarks/team.py)."""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

__all__ = ["PgCluster", "free_port"]


def _pg_bindir() -> Path:
    found = shutil.which("pg_config")
    if found:
        out = subprocess.run([found, "--bindir"], capture_output=True, text=True, check=False)
        bindir = Path(out.stdout.strip())
        if (bindir / "initdb").exists():
            return bindir
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not candidates:
        raise RuntimeError(
            "PostgreSQL is not installed (no initdb): scripts/test installs Debian's postgresql"
        )
    return Path(candidates[-1]).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """A PostgreSQL server in a temporary folder on a free loopback port (trust auth; no fsync
    unless `durable`, which a benchmark comparing it with an SQLite file asks for)."""

    def __init__(self, *, durable: bool = False) -> None:
        bindir = _pg_bindir()
        root = os.geteuid() == 0
        # initdb refuses root: run the server as `postgres`, in a folder it owns under /tmp.
        self.as_user = ["runuser", "-u", "postgres", "--"] if root else []
        self.user = "postgres" if root else os.environ.get("USER", "postgres")
        self.folder = Path(tempfile.mkdtemp(prefix="annotate-pg-", dir="/tmp"))
        if root:
            shutil.chown(self.folder, "postgres", "postgres")
        self.folder.chmod(0o700)
        self.data = self.folder / "data"
        self.port = free_port()
        self.pg_ctl = str(bindir / "pg_ctl")
        self._run([str(bindir / "initdb"), "-A", "trust", "--no-sync", "-U", self.user, "-D",
                   str(self.data)])  # fmt: skip
        fsync = "" if durable else "-c fsync=off "
        options = f"{fsync}-c max_connections=300 -p {self.port} -k {self.folder} -h 127.0.0.1"
        self._run([self.pg_ctl, "-w", "-D", str(self.data), "-l", str(self.folder / "log"),
                   "-o", options, "start"])  # fmt: skip
        self.url = f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"

    def _run(self, args: list[str]) -> None:
        done = subprocess.run([*self.as_user, *args], capture_output=True, text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stdout}{done.stderr}")

    def new_schema(self) -> str:
        """A URL whose tables land in a new, empty schema (tests stay independent)."""
        import psycopg

        name = f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")
        return f"{self.url}?options=-csearch_path%3D{name}"

    def restart(self) -> None:
        """Stop the server (fast: every session is ended) and start it again, same port."""
        self._run([self.pg_ctl, "-w", "-D", str(self.data), "-l", str(self.folder / "log"), "-m", "fast",
                   "restart"])  # fmt: skip

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._run([self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"])
        shutil.rmtree(self.folder, ignore_errors=True)
