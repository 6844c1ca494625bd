"""The plugin under a real `mkdocs build` into tmp_path: options and production safety (issue #6)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from mkdocs.commands.build import build
from mkdocs.config import load_config
from mkdocs.exceptions import Abort
from starlette.testclient import TestClient

import annotate
from annotate.tokens import read_token
from annotate.web import create_app

FIXTURE = Path(__file__).parent / "fixtures" / "plugin_project"
ROOT = Path(__file__).parent.parent
CONFIG = re.compile(r'<script type="application/json" id="annotate-config">(.*?)</script>')
SCRIPT = '<script src="/__annotate/overlay/annotate.js" defer></script>'
TOKEN = "build-test-token-0123456789"


def make_project(tmp_path: Path, options: dict[str, Any] | None = None, **config: Any) -> Path:
    """A copy of the fixture project whose mkdocs.yml gets `config` and the plugin's `options`."""
    project = tmp_path / "project"
    shutil.copytree(FIXTURE, project)
    data = yaml.safe_load((project / "mkdocs.yml").read_text())
    data.update(config)
    data["plugins"] = ["search", {"annotate": options} if options is not None else "annotate"]
    (project / "mkdocs.yml").write_text(yaml.safe_dump(data))
    return project


def build_site(project: Path) -> Path:
    """`mkdocs build` as the command runs it: startup, build, shutdown."""
    config = load_config(str(project / "mkdocs.yml"), site_dir=str(project / "site"))
    config.plugins.on_startup(command="build", dirty=False)
    try:
        build(config)
    finally:
        config.plugins.on_shutdown()
    return project / "site"


def site_text(site: Path) -> dict[str, str]:
    return {
        p.relative_to(site).as_posix(): p.read_text(errors="replace")
        for p in site.rglob("*")
        if p.is_file() and p.suffix in (".html", ".js", ".css", ".json", ".xml")
    }


def pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("index.html"))


def test_default_build_is_untouched(tmp_path: Path) -> None:
    site = build_site(make_project(tmp_path))
    files = site_text(site)
    assert "index.html" in files and "guide/install/index.html" in files
    for name, text in files.items():
        assert "__annotate" not in text, name
        assert "annotate-config" not in text, name
    # Nothing written beside mkdocs.yml either: a plain build opens no store.
    assert not (tmp_path / "project" / ".annotate").exists()


def test_material_build_is_untouched(tmp_path: Path) -> None:
    project = make_project(tmp_path, theme={"name": "material", "features": ["navigation.instant"]})
    site = build_site(project)
    for name, text in site_text(site).items():
        assert "__annotate" not in text, name


def test_disabled_plugin_does_nothing(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"enabled": False, "build": True, "db_path": "docs/x.db"})
    site = build_site(project)
    for name, text in site_text(site).items():
        assert "__annotate" not in text, name
    assert not (project / ".annotate").exists()
    assert not (project / "docs" / "x.db").exists()


def test_build_true_injects_the_overlay_without_the_token(tmp_path: Path) -> None:
    project = make_project(
        tmp_path, {"build": True, "content_selector": "div[role=main]", "author": "Ada"}
    )
    site = build_site(project)
    built = pages(site)
    assert len(built) == 2
    for page in built:
        html = page.read_text()
        assert html.count(SCRIPT) == 1, page
        assert html.count('href="/__annotate/overlay/annotate.css"') == 1
        config = json.loads(CONFIG.search(html)[1])
        assert config["token"] == ""
        assert config["contentSelector"] == "div[role=main]"
        assert config["author"] == "Ada"
    # The token file is never read into the output.
    token = read_token(project)
    assert all(token not in text for text in site_text(site).values())


def test_build_true_records_page_sources_for_annotate_serve(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"build": True})
    build_site(project)
    with annotate.open(project) as store:
        rows = {r["page_url"]: r["src_path"] for r in store.db["pages"].rows}
    assert rows == {"/": "docs/index.md", "/guide/install/": "docs/guide/install.md"}


def test_annotate_serve_fills_in_the_token_once(tmp_path: Path) -> None:
    """`annotate serve site/` on a `build: true` site: one overlay, the build's settings, the token."""
    project = make_project(tmp_path, {"build": True, "content_selector": "main"})
    site = build_site(project)
    with annotate.open(project) as store:
        client = TestClient(
            create_app(store, token=TOKEN, site_dir=site), base_url="http://127.0.0.1:8000"
        )
        html = client.get("/guide/install/").text
        assert html.count(SCRIPT) == 1
        assert len(CONFIG.findall(html)) == 1
        config = json.loads(CONFIG.search(html)[1])
        assert config["token"] == TOKEN
        assert config["contentSelector"] == "main"


def test_use_directory_urls_false_maps_both_urls(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"build": True}, use_directory_urls=False)
    build_site(project)
    with annotate.open(project) as store:
        rows = {r["page_url"]: r["src_path"] for r in store.db["pages"].rows}
    assert rows == {
        "/index.html": "docs/index.md",
        "/": "docs/index.md",
        "/guide/install.html": "docs/guide/install.md",
    }


def test_custom_db_path(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"build": True, "db_path": "../review/notes.db"})
    build_site(project)
    assert (tmp_path / "review" / "notes.db").is_file()
    assert not (project / ".annotate" / "annotations.db").exists()


@pytest.mark.parametrize(
    ("options", "config", "where"),
    [
        ({"db_path": "docs/.annotate/annotations.db"}, {}, "docs_dir"),
        ({"db_path": "docs"}, {}, "docs_dir"),
        ({}, {"watch": ["."]}, "watch"),
        ({"db_path": "extra/notes.db"}, {"watch": ["extra"]}, "watch"),
    ],
)
def test_db_inside_a_watched_path_is_refused(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    options: dict[str, Any],
    config: dict[str, Any],
    where: str,
) -> None:
    project = make_project(tmp_path, options, **config)
    (project / "extra").mkdir()
    with pytest.raises(Abort):
        build_site(project)
    assert re.search(rf"is inside {where} .*every saved note would rebuild", caplog.text)
    assert not (project / "docs" / ".annotate").exists()


def test_refusal_through_the_command_line(tmp_path: Path) -> None:
    project = make_project(tmp_path, {"db_path": "docs/notes.db"})
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "db_path" in result.stderr and "is inside docs_dir" in result.stderr


def test_project_docs_build_strict_without_overlay(tmp_path: Path) -> None:
    """The project's own docs (plugin enabled) build with --strict and carry no overlay."""
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "annotate" in yaml.safe_load((ROOT / "mkdocs.yml").read_text())["plugins"]
    for name, text in site_text(site).items():
        # The docs talk about the overlay: look for its tags, not its name.
        assert CONFIG.search(text) is None, name
        assert '<script src="/__annotate/' not in text, name
