"""The site built from marked-up Markdown shows the same pages (issue #19 item 5): a real
`mkdocs build` (Material, the extensions of tests/inline_project.py) before and after
`annotate export --inline`, compared page by page."""

from __future__ import annotations

import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config

import annotate
from annotate import inline

from .inline_project import add_notes, make_project

ZENSICAL = Path(sys.executable).parent / "zensical"


class Page(HTMLParser):
    """A built page as a reader sees it: its text (scripts and styles aside, whitespace folded),
    the elements it is made of, comments left out, and its `<title>` (MkDocs takes the title
    from the first h1)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.hidden = 0
        self.in_title = False
        self.title = ""
        self.text: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.in_title = tag == "title"
        if tag in ("script", "style"):
            self.hidden += 1
        self.tags.append(tag)

    def handle_endtag(self, tag: str) -> None:
        self.in_title = False
        if tag in ("script", "style") and self.hidden:
            self.hidden -= 1
        self.tags.append("/" + tag)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        if not self.hidden:
            self.text.append(data)


def page(file: Path) -> tuple[str, list[str], str]:
    parser = Page()
    parser.feed(file.read_text(encoding="utf-8"))
    parser.close()
    return " ".join("".join(parser.text).split()), parser.tags, parser.title


def build_site(project: Path, site: Path) -> dict[str, tuple[str, list[str], str]]:
    config = load_config(str(project / "mkdocs.yml"), site_dir=str(site))
    build(config)
    return {p.relative_to(site).as_posix(): page(p) for p in sorted(site.rglob("*.html"))}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    root = tmp_path_factory.mktemp("inline-build")
    project = make_project(root)
    # Only Markdown pages: the copied docs' images are not needed to compare text.
    shutil.rmtree(project / "docs" / "img", ignore_errors=True)
    before = build_site(project, root / "site-before")
    with annotate.open(project) as store:
        ids = add_notes(store, project / "docs")
        result = inline.export_inline(store)
    assert result.written == len(ids)
    after = build_site(project, root / "site-after")
    return project, {"before": before, "after": after, "ids": ids}


def test_every_page_was_built_and_marked(built: tuple[Path, dict[str, object]]) -> None:
    project, runs = built
    before = runs["before"]
    assert isinstance(before, dict) and len(before) >= 25
    assert "inline-fixtures/tabs/index.html" in before
    markers = sum(
        len(inline.markers(inline.Document.parse(p.read_bytes().decode("utf-8"))))
        for p in (project / "docs").rglob("*.md")
    )
    assert markers == len(runs["ids"])  # type: ignore[arg-type]


def test_the_built_pages_show_the_same_text(built: tuple[Path, dict[str, object]]) -> None:
    _, runs = built
    before, after = runs["before"], runs["after"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert set(after) == set(before)
    for name, (text, tags, title) in before.items():
        assert after[name][0] == text, name
        assert after[name][1] == tags, name  # the same elements: no list or tab set split
        assert after[name][2] == title, name
    # The title MkDocs took from the first h1, not from the file name (`Code`).
    assert before["inline-fixtures/code/index.html"][2].startswith("Code blocks - ")


def _leaks(site: Path, ids: list[str], texts: tuple[str, ...] = ()) -> list[str]:
    """The files of a built site (pages, search index, sitemap) that hold a note's id or text."""
    found = []
    for file in sorted(site.rglob("*")):
        if file.is_file() and file.suffix in (".html", ".json", ".xml", ".txt"):
            data = file.read_text(encoding="utf-8", errors="replace")
            if any(i in data for i in ids) or any(t in data for t in texts):
                found.append(file.relative_to(site).as_posix())
    return found


def test_a_site_built_without_the_plugin_publishes_no_note(
    built: tuple[Path, dict[str, object]],
) -> None:
    """Issue #27 item 5: plain MkDocs renders the markers as nothing, not even in the HTML source."""
    project, runs = built
    ids = runs["ids"]
    assert isinstance(ids, list) and ids
    assert _leaks(project / "site-after", ids, ("split it --",)) == []


def test_a_site_built_with_the_plugin_publishes_no_note(
    built: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    """The plugin strips the markers, of the current form and the older HTML comment, before
    Python-Markdown sees the page."""
    project, runs = built
    ids = runs["ids"]
    assert isinstance(ids, list)
    copy = tmp_path / "project"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("site-*", ".annotate"))
    old = copy / "docs" / "inline-fixtures" / "old-form.md"
    old.write_text(
        '# Old form\n\n<!-- annotate: {"id": "a_0ldf0rm000", "note": "An old secret."} -->\n\n'
        "Text of the page.\n"
    )
    config = copy / "mkdocs.yml"
    config.write_text(config.read_text() + "plugins:\n- search\n- annotate\n")
    pages = build_site(copy, tmp_path / "site")
    assert "Text of the page." in pages["inline-fixtures/old-form/index.html"][0]
    leaks = _leaks(tmp_path / "site", [*ids, "a_0ldf0rm000"], ("An old secret", "split it --"))
    assert leaks == []
    # The plugin strips the built page, not the file: the notes are still there to import.
    assert len(inline.markers(inline.Document.parse(old.read_text()))) == 1


def test_a_site_built_by_zensical_publishes_no_note(
    built: tuple[Path, dict[str, object]], tmp_path: Path
) -> None:
    """Zensical runs no MkDocs plugin: its Markdown renders the markers as nothing."""
    project, runs = built
    ids = runs["ids"]
    assert isinstance(ids, list)
    copy = tmp_path / "project"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("site-*", ".annotate"))
    subprocess.run(
        [str(ZENSICAL), "build", "--clean"], cwd=copy, check=True, capture_output=True, timeout=600
    )
    assert len(list((copy / "site").rglob("*.html"))) >= 25
    assert _leaks(copy / "site", ids, ("split it --",)) == []
