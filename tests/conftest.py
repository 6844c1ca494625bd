from __future__ import annotations

import contextlib
import glob
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import annotate

_skipped: list[str] = []

# A shell without job control starts background commands with SIGINT ignored, and children
# inherit an ignored signal: the dev servers the tests start would then ignore the Ctrl+C (SIGINT)
# they are stopped with. A handler, unlike SIG_IGN, is reset to the default in a child.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Playwright's sync API keeps an event loop running in the main thread from the first
    # browser test to the end of the session: the anyio tests (MCP) must run before it starts.
    items.sort(key=lambda item: "browser" in item.path.parts)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped:
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    # Every test runs, in CI too: a skipped or xfailed test fails the run.
    if _skipped and exitstatus == 0:
        print(f"\n{len(_skipped)} test(s) skipped, which this suite does not allow: {_skipped}")
        session.exitstatus = 1


def write_project(root: Path, install_md: str) -> Path:
    """A project folder: `mkdocs.yml` and `docs/guide/install.md` (the page `/guide/install/`)."""
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "docs" / "guide" / "install.md").write_text(install_md)
    return root


# -- PostgreSQL: one throwaway cluster per session, a fresh schema per test --------------------


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    """A PostgreSQL server in a temporary folder on a free loopback port (trust auth, no fsync)."""

    def __init__(self) -> None:
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
        self.port = _free_port()
        self.pg_ctl = str(bindir / "pg_ctl")
        self._run([str(bindir / "initdb"), "-A", "trust", "--no-sync", "-U", self.user, "-D",
                   str(self.data)])  # fmt: skip
        options = (
            f"-c fsync=off -c max_connections=300 -p {self.port} -k {self.folder} -h 127.0.0.1"
        )
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

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._run([self.pg_ctl, "-D", str(self.data), "-m", "immediate", "stop"])
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The session's PostgreSQL server; no skip: a missing PostgreSQL fails the tests using it."""
    cluster = PgCluster()
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PgCluster) -> str:
    """A PostgreSQL URL of a fresh, empty schema."""
    return pg_cluster.new_schema()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A module that sets BACKENDS runs each of its tests using the `store` (or `backend`) fixture
    # on each backend; `@pytest.mark.sqlite_only` keeps a test about the SQLite file on SQLite.
    backends = getattr(metafunc.module, "BACKENDS", None)
    if metafunc.definition.get_closest_marker("sqlite_only"):
        backends = None
    if backends and "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", backends, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """ "sqlite" or "postgresql" (see `pytest_generate_tests`)."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def db_url(backend: str, request: pytest.FixtureRequest) -> str | None:
    """The `db` argument of `annotate.open` for this test's backend (None: the project's file)."""
    if backend == "sqlite":
        return None
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def store(tmp_path: Path, db_url: str | None) -> Iterator[annotate.Store]:
    """A fresh store in a temporary project folder (on PostgreSQL: in a fresh schema)."""
    s = annotate.open(tmp_path, db=db_url)
    yield s
    s.close()


def text_note(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "text",
        "pageUrl": "/guide/install/",
        "pageTitle": "Install",
        "note": "Mention pipx as well.",
        "selectedText": "pip install mkdocs-annotate",
        "quote": {
            "exact": "pip install mkdocs-annotate",
            "prefix": "Run ",
            "suffix": " in a shell",
        },
        "position": {"start": 120, "end": 147},
    }
    data.update(overrides)
    return data


def element_note(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "element",
        "pageUrl": "/guide/install/",
        "pageTitle": "Install",
        "note": "This screenshot is out of date.",
        "elementSelector": {
            "cssSelector": "article img:nth-of-type(2)",
            "xpath": "/html/body/div/main/article/p[4]/img",
            "tagName": "img",
            "description": "Screenshot of the review panel",
            "attributes": {"src": "panel.png", "alt": "Review panel"},
            "outerHtmlPreview": '<img src="panel.png" alt="Review panel">',
        },
    }
    data.update(overrides)
    return data
