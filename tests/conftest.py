from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import annotate

from .pgcluster import PgCluster

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


def write_install_page(root: Path, install_md: str) -> Path:
    """A project folder whose nav is `docs/install.md` (the page `/install/`)."""
    (root / "mkdocs.yml").write_text("site_name: Test\nnav:\n  - install.md\n")
    (root / "docs").mkdir()
    (root / "docs" / "install.md").write_text(install_md)
    return root


def touch_write(path: Path, text: str) -> float:
    """Write with an mtime 5 s after the previous one (coarse file systems) and return it."""
    at = (path.stat().st_mtime if path.exists() else 0) + 5
    path.write_text(text)
    os.utime(path, (at, at))
    return at


# -- PostgreSQL: one throwaway cluster per session, a fresh schema per test --------------------


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
