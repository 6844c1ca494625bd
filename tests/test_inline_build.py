"""The site built from marked-up Markdown shows the same pages (issue #19 item 5): a real
`mkdocs build` (Material, the extensions of tests/inline_project.py) before and after
`annotate export --inline`, compared page by page."""

from __future__ import annotations

import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from mkdocs.commands.build import build
from mkdocs.config import load_config

import annotate
from annotate import inline

from .inline_project import add_notes, make_project


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


def test_the_markers_are_comments_in_the_built_pages(
    built: tuple[Path, dict[str, object]],
) -> None:
    project, runs = built
    ids = runs["ids"]
    assert isinstance(ids, list)
    html = (project / "site-after" / "inline-fixtures" / "tabs" / "index.html").read_text()
    assert html.count("<!-- annotate: ") >= 3
    assert "-->" not in html.split("<!-- annotate: ", 1)[1].split(" -->", 1)[0]
