"""Zensical sites (issue #15): a real `zensical build` of a fixture project, whose page URLs map
to the Markdown files they were built from, and whose rendered text maps to the right lines.

Zensical renders with Python-Markdown and the pymdownx extensions, as MkDocs with Material does:
the fixture's pages reproduce the patterns of real sites (admonitions, collapsed blocks, content
tabs, code annotations, tables, keys, definition lists, footnotes) and each passage, taken from
the built HTML as the overlay measures the page's text, gets the lines a plain search of the
Markdown finds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

import annotate
from annotate import pages

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "sites" / "zensical"
BIN = Path(sys.executable).parent
ZENSICAL = BIN / "zensical"
PROPERDOCS = BIN / "properdocs"
MKDOCS = BIN / "mkdocs"


def build(project: Path, *command: str) -> Path:
    """A real build of `project` (Zensical unless told otherwise) into its site folder."""
    subprocess.run(
        [*(command or (str(ZENSICAL), "build")), *([] if command else ["--clean"])],
        cwd=project,
        check=True,
        capture_output=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    return project


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("zensical") / "project"
    shutil.copytree(FIXTURE, project)
    return build(project)


# -- the page text, as the overlay measures it ----------------------------------------------------

# What the overlay leaves out of the page text (overlay/annotate.js): heading permalinks, code
# copy buttons, edit buttons.
SKIPPED_CLASSES = {"headerlink", "md-code__nav", "md-clipboard", "md-content__button"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}


class PageText(HTMLParser):
    """The text nodes of `article.md-content__inner`, concatenated, skipping what the overlay
    skips."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = 0  # inside the article: its depth of open elements
        self.skip_at = 0  # depth of the skipped element we are inside, 0 when none
        self.text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        if self.depth == 0:
            if tag == "article" and "md-content__inner" in classes:
                self.depth = 1
            return
        self.depth += 1
        if not self.skip_at and (classes & SKIPPED_CLASSES or tag in ("script", "style")):
            self.skip_at = self.depth

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID or self.depth == 0:
            return
        if self.skip_at == self.depth:
            self.skip_at = 0
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip_at:
            self.text += data


def page_text(site: Path, url: str) -> str:
    parser = PageText()
    parser.feed((site / url.strip("/") / "index.html").read_text(encoding="utf-8"))
    return parser.text


def line_of(markdown: str, needle: str) -> int:
    """The 1-based line holding `needle`, found once (a plain search, not the tool)."""
    found = [n for n, line in enumerate(markdown.split("\n"), 1) if needle in line]
    assert len(found) == 1, (needle, found)
    return found[0]


# -- page URL -> Markdown file ---------------------------------------------------------------------


def built_pages(site: Path) -> dict[str, str]:
    """Every page of a built site: {URL it is served at: its title}."""
    out = {}
    for html in sorted(site.rglob("*.html")):
        relative = html.relative_to(site).as_posix()
        if relative == "404.html" or relative.startswith("assets/"):
            continue
        url = (
            "/" + relative.removesuffix("index.html")
            if relative.endswith("index.html")
            else ("/" + relative)
        )
        text = html.read_text(encoding="utf-8")
        title = text.split("<h1", 1)[1].split(">", 1)[1].split("<", 1)[0]
        out[url] = title
    return out


def zensical_toml(extra: str = "", project: str = "") -> str:
    return f'[project]\nsite_name = "Map"\n{project}\n[project.theme]\nfeatures = []\n{extra}'


@pytest.mark.parametrize(
    ("config", "text", "command", "html"),
    [
        ("zensical.toml", zensical_toml(), "zensical", "guide/install/index.html"),
        (
            "zensical.toml",
            zensical_toml(project='docs_dir = "content"\nuse_directory_urls = false'),
            "zensical",
            "guide/install.html",
        ),
        (
            "zensical.toml",
            zensical_toml(extra="[project.plugins.offline]\n"),
            "zensical",
            "guide/install.html",
        ),
        (
            "mkdocs.yml",
            "site_name: Map\ndocs_dir: content\nplugins:\n  - offline\ntheme:\n  name: material\n",
            "zensical",
            "guide/install.html",
        ),
        (
            "properdocs.yml",
            "site_name: Map\ndocs_dir: content\nuse_directory_urls: false\n",
            "properdocs",
            "guide/install.html",
        ),
        ("mkdocs.yml", "site_name: Map\nsite_url: https://example.com/sub/\n", "mkdocs", None),
    ],
)
def test_every_built_page_maps_to_the_markdown_it_was_built_from(
    tmp_path: Path, config: str, text: str, command: str, html: str | None
) -> None:
    """What the generator really built (its output's paths and titles) against what the site
    config says: each page URL resolves to the Markdown file whose title the page shows."""
    (tmp_path / config).write_text(text)
    docs = tmp_path / annotate.config.site_config(tmp_path).docs_dir
    files = {
        "index.md": "Home",
        "guide/index.md": "Guide",
        "guide/install.md": "Install",
        "reference.md": "Reference",
        "topics/README.md": "Topics",
    }
    for relative, title in files.items():
        (docs / relative).parent.mkdir(parents=True, exist_ok=True)
        (docs / relative).write_text(f"# {title}\n\nThe page {title.lower()}.\n")
    runner = {"zensical": [str(ZENSICAL), "build"], "properdocs": [str(PROPERDOCS), "build"]}
    build(tmp_path, *runner.get(command, [str(MKDOCS), "build"]))
    site = tmp_path / "site"
    if html:
        assert (site / html).is_file()  # the generator's own URL rules, as the config says
    served = built_pages(site)
    assert sorted(served.values()) == sorted(files.values())
    base = annotate.config.site_config(tmp_path).site_path
    for url, title in served.items():
        for form in (url, base + url[1:]):  # as `annotate serve site/` and a dev server serve it
            source = pages.resolve_page(tmp_path, form)
            assert source is not None, form
            assert files[Path(source).relative_to(docs.name).as_posix()] == title, form


# -- rendered text -> Markdown lines ---------------------------------------------------------------

# (kind, page, file, the passage as the page shows it, a piece of its first and last Markdown lines)
PASSAGES = [
    ("paragraph", "/", "index.md", "A second paragraph", "says it", "over two lines"),
    ("heading", "/reference/", "reference.md", "Reference", "# Reference", "# Reference"),
    ("admonition", "/guide/install/", "guide/install.md", "Make sure", "Make sure", "active."),
    ("details", "/guide/install/", "guide/install.md", "Pin the version", "Pin the", "Pin the"),
    (
        "tab",
        "/guide/install/",
        "guide/install.md",
        "Install it into an isolated",
        "pipx in",
        "pipx in",
    ),
    (
        "code",
        "/guide/install/",
        "guide/install.md",
        "site_name: My project",
        "site_name:",
        "site_name:",
    ),
    (
        "code annotation",
        "/guide/install/",
        "guide/install.md",
        "Zensical's own theme",
        "2.  Zen",
        "2.  Zen",
    ),
    (
        "table cell",
        "/reference/",
        "reference.md",
        "The folder that holds",
        "The folder",
        "The folder",
    ),
    ("keys", "/reference/", "reference.md", "to restart the review", "to restart", "to restart"),
    (
        "definition",
        "/reference/",
        "reference.md",
        "The person who reads",
        "The person",
        "The person",
    ),
    (
        "list item",
        "/reference/",
        "reference.md",
        "Another item that",
        "Another item",
        "Another item",
    ),
    ("footnote", "/reference/", "reference.md", "The footnote says", "[^1]: The", "[^1]: The"),
]


def passage(text: str, start_words: str, *, wrapped: bool) -> tuple[int, int]:
    """The [start, end) of the block of page text that begins with `start_words`: up to the end of
    its line, or of its sentence when it is `wrapped` over lines."""
    start = text.index(start_words)
    assert text.count(start_words) == 1 or start_words == "Reference", start_words
    end = start
    while end < len(text) and text[end] != "\n":
        end += 1
    if wrapped:
        end = text.index(".", end) + 1  # a sentence wrapped over two Markdown lines
    return start, end


@pytest.mark.parametrize("kind", [p[0] for p in PASSAGES])
def test_source_lines_of_zensical_rendered_text(built: Path, tmp_path: Path, kind: str) -> None:
    _, url, file, words, first, last = next(p for p in PASSAGES if p[0] == kind)
    project = tmp_path / "project"
    shutil.copytree(built, project)
    text = page_text(project / "site", url)
    start, end = passage(text, words, wrapped=kind in ("paragraph", "admonition"))
    exact = text[start:end]
    markdown = (project / "docs" / file).read_text(encoding="utf-8")
    with annotate.open(project) as store:
        note = store.add_annotation(
            {
                "pageUrl": url,
                "note": "Check this.",
                "selectedText": exact,
                "quote": {
                    "exact": exact,
                    "prefix": text[max(0, start - 32) : start],
                    "suffix": text[end : end + 32],
                },
                "position": {"start": start, "end": end},
            }
        )
    assert note.source is not None, exact
    expected = (line_of(markdown, first), line_of(markdown, last))
    assert (note.source.path, note.source.line_start, note.source.line_end) == (
        f"docs/{file}",
        *expected,
    ), exact
    assert note.anchor_state == "anchored"
