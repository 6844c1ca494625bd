"""Source mapping (annotate/sourcemap.py): text shown on a rendered page → Markdown file and
1-based lines."""

from __future__ import annotations

import html
import itertools
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.sourcemap import (
    MAX_EXCERPT_CHARS,
    locate_in_markdown,
    map_source,
    normalise,
    project_markdown,
)

DOCS = Path(__file__).parent / "fixtures" / "sourcemap" / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
TARGET_HIT_RATE = 0.98


def read(page: str) -> str:
    return (DOCS / page).read_text(encoding="utf-8")


def line_of(source: str, needle: str) -> int:
    """The 1-based line holding `needle`, which must be on exactly one line."""
    found = [n for n, line in enumerate(source.split("\n"), 1) if needle in line]
    assert len(found) == 1, f"{needle!r} is on lines {found}"
    return found[0]


# -- quotes as a browser shows them --------------------------------------------------------------

CASES = [
    # (page, quote as rendered, text on the first line, text on the last line)
    (
        "index.md",
        "opening a site with\nmkdocs serve and leaving your first note",
        "opening a site",
        "and leaving your first",
    ),
    (
        "index.md",
        "needs nothing but\nPython 3.10 or newer and a working MkDocs project.",
        "and needs nothing",
        "**Python 3.10",
    ),
    (
        "index.md",
        "It takes about five minutes –\nless if you already have",
        "It takes about five",
        "less if you already",
    ),
    (
        "index.md",
        "The reviewer’s job is to say “this part, fix it like so”",
        "The reviewer's job",
        "The reviewer's job",
    ),
    (
        "index.md",
        "That’s the whole idea — nothing more.",
        "That's the whole idea",
        "That's the whole idea",
    ),
    ("index.md", "Why review on the rendered page?", "## Why review", "## Why review"),
    ("index.md", "Getting started with review notes", "# Getting started", "# Getting started"),
    (
        "index.md",
        "source .venv/bin/activate",
        "source .venv/bin/activate",
        "source .venv/bin/activate",
    ),
    (
        "index.md",
        "a .annotate/ folder appears the first time you save a note;",
        "folder appears the first",
        "folder appears the first",
    ),
    (
        "index.md",
        "Install the package from PyPI with pip install mkdocs-annotate; the\ncommand also pulls in",
        "2. Install the package",
        "command also pulls",
    ),
    ("index.md", "with\nCtrl+Shift+. on the keyboard.", "button or with", "<kbd>Ctrl</kbd>"),
    (
        "index.md",
        "Note\nThe plugin does nothing in mkdocs build unless you ask it to.",
        "!!! note",
        "The plugin does nothing",
    ),
    (
        "index.md",
        "stays exactly as it was — no scripts, no styles,",
        "stays exactly as it was",
        "stays exactly as it was",
    ),
    (
        "index.md",
        "see the data model and the\ncommand line reference.",
        "see the [data model]",
        "[command line reference]",
    ),
    (
        "index.md",
        "never in the docs themselves1.\nThey survive rebuilds",
        "never in the docs themselves",
        "They survive rebuilds",
    ),
    (
        "index.md",
        "a SQLite file that three\nprocesses can share safely",
        "a SQLite file that three",
        "processes can share safely",
    ),
    (
        "index.md",
        "Agents follow reasons better than orders.",
        "Agents follow reasons",
        "Agents follow reasons",
    ),
    (
        "index.md",
        "You can reopen anything – “addressed”\nis a claim, not a verdict.",
        "You can reopen anything",
        "is a claim, not a verdict",
    ),
    (
        "guide/configuration.md",
        "Folder of the database, relative to mkdocs.yml.",
        "Folder of the database",
        "Folder of the database",
    ),
    (
        "guide/configuration.md",
        "Inject the overlay into mkdocs build output as well & keep it there.",
        "Inject the overlay",
        "Inject the overlay",
    ),
    ("guide/configuration.md", "theme default", "*theme default*", "*theme default*"),
    (
        "guide/configuration.md",
        "Keep the store out of docs_dir",
        '!!! warning "Keep the store',
        '!!! warning "Keep the store',
    ),
    (
        "guide/configuration.md",
        "triggers a rebuild and a full reload\nof every open browser tab.",
        "triggers a rebuild",
        "of every open browser tab",
    ),
    (
        "guide/configuration.md",
        "The plugin refuses such a path at start-up",
        "The plugin refuses",
        "The plugin refuses",
    ),
    (
        "guide/configuration.md",
        "nothing else – no navigation, no footer.",
        "nothing else &ndash;",
        "nothing else &ndash;",
    ),
    (
        "guide/configuration.md",
        "A CSS selector, matched once per page.",
        "A CSS selector",
        "A CSS selector",
    ),
    (
        "guide/configuration.md",
        "Store folder\nA path relative to the folder of mkdocs.yml.",
        "Store folder",
        "A path relative to the folder",
    ),
    (
        "guide/configuration.md",
        "mkdocs.ymlsite_name: My docs",
        'title="mkdocs.yml"',
        "site_name: My docs",
    ),
    (
        "guide/configuration.md",
        "- annotate:\n      author: “Reviewer One”",
        "  - annotate:",
        'author: "Reviewer One"',
    ),
    ("guide/configuration.md", "Running several projects at once", "??? tip", "??? tip"),
    (
        "guide/configuration.md",
        "two mkdocs serve\nprocesses on different ports",
        "two `mkdocs serve`",
        "processes on different ports",
    ),
    ("guide/configuration.md", "uv add --dev mkdocs-annotate", "uv add --dev", "uv add --dev"),
    ("guide/configuration.md", "pipuv\nInstall with pip", '=== "pip"', '=== "uv"'),
    ("guide/troubleshooting.md", "Do not edit the database by hand", "!!! danger", "!!! danger"),
    (
        "guide/troubleshooting.md",
        'Annotation with ID "…" not found',
        "`Annotation with ID",
        "`Annotation with ID",
    ),
    (
        "guide/troubleshooting.md",
        "Very large pages – think 5 MB of HTML – take a moment",
        "Very large pages",
        "Very large pages",
    ),
    (
        "guide/troubleshooting.md",
        "it’s what the tool is for.",
        "it's what the tool is for",
        "it's what the tool is for",
    ),
    (
        "about.md",
        "Bridging\nthe two by hand — copying a sentence",
        "think in pages. Bridging",
        "the two by hand ---",
    ),
    ("about.md", "Built on MkDocs & Material, stored in SQLite.", "<p>Built on", "<p>Built on"),
    (
        "about.md",
        "Material for MkDocs, markdown-it-py and rapidfuzz.\nWithout them",
        "MkDocs, Material for MkDocs",
        "Without them there",
    ),
    ("about.md", "$ annotate --version\nannotate 0.1.0", "$ annotate --version", "annotate 0.1.0"),
    (
        "about.md",
        "nothing more…\nand it’s “boring” on purpose",
        "nothing less, nothing more",
        'and it\'s "boring"',
    ),
    (
        "reference.md",
        "Write *literal asterisks* with a backslash, and &lt;div&gt; shows as\n<div> in the page.",
        r"Write \*literal",
        "&lt;div&gt; in the page",
    ),
    (
        "reference.md",
        "Copyright © 2025, “numbered” and\n— hex entities",
        "Copyright &copy;",
        "&#x2014; hex entities",
    ),
    (
        "reference.md",
        "An autolink such as\nhttps://example.com/annotate shows its address",
        "An autolink such as",
        "<https://example.com/annotate>",
    ),
    ("reference.md", "Reserved for a | b pipes", "Reserved for", "Reserved for"),
    (
        "reference.md",
        "annotate list --json | jq '.[] | .source'",
        "annotate list --json |",
        "annotate list --json |",
    ),
    (
        "reference.md",
        "a click opens the note popup for that element.",
        "a click opens",
        "a click opens",
    ),
    (
        "reference.md",
        "Important: exit code 0 means success",
        "***Important:***",
        "***Important:***",
    ),
    (
        "reference.md",
        "Question\nWhy does the CLI not talk to the dev server?",
        "??? question",
        "Why does the CLI",
    ),
    ("reference.md", "Setext headings work too", "Setext headings", "Setext headings"),
    (
        "guide/edge-cases.md",
        "link that spans\ntwo lines and emphasis that also\nspans two lines before the end",
        "[link that spans",
        "spans two lines*",
    ),
    ("guide/edge-cases.md", "Fast to set up: one line in mkdocs.yml.", "__Fast__", "__Fast__"),
    (
        "guide/edge-cases.md",
        "Second definition, added later.",
        "Second definition",
        "Second definition",
    ),
]


@pytest.mark.parametrize(("page", "quote", "first", "last"), CASES)
def test_rendered_quote_maps_to_its_lines(page: str, quote: str, first: str, last: str) -> None:
    source = read(page)
    match = locate_in_markdown(source, quote)
    assert match is not None
    assert (match.line_start, match.line_end) == (line_of(source, first), line_of(source, last))
    assert match.score == 100
    assert match.excerpt == "\n".join(source.split("\n")[match.line_start - 1 : match.line_end])


def test_prefix_and_suffix_pick_the_right_copy_of_repeated_text() -> None:
    source = read("guide/edge-cases.md")
    quote = "The same sentence appears twice on this page."
    first, second = (n for n, line in enumerate(source.split("\n"), 1) if line == quote)
    before = locate_in_markdown(source, quote, suffix="\nSomething in between the two")
    after = locate_in_markdown(source, quote, prefix="in between the two copies.\n")
    assert before is not None and after is not None
    assert (before.line_start, after.line_start) == (first, second)
    assert before.score == after.score == 100


def test_hint_line_picks_the_nearest_copy() -> None:
    source = read("guide/edge-cases.md")
    quote = "The same sentence appears twice on this page."
    first, second = (n for n, line in enumerate(source.split("\n"), 1) if line == quote)
    near_first = locate_in_markdown(source, quote, hint_line=first - 1)
    near_second = locate_in_markdown(source, quote, hint_line=second + 1)
    assert near_first is not None and near_first.line_start == first
    assert near_second is not None and near_second.line_start == second


def test_edited_text_is_found_approximately_and_rewritten_text_is_not() -> None:
    source = read("index.md")
    line = line_of(source, "Reading the *rendered* page")
    # The quote was taken before "badly" became "poorly" in the source.
    edited = source.replace("a table that wraps badly", "a table that wraps poorly")
    quote = "Reading the rendered page is where problems show: a table that wraps badly,"
    match = locate_in_markdown(edited, quote)
    assert match is not None
    assert match.line_start == line and 75 <= match.score < 100
    rewritten = "Nobody reads documentation pages from top to bottom anyway, so why bother."
    assert locate_in_markdown(source, rewritten) is None


@pytest.mark.parametrize(
    "theme_text",
    [
        "About this project",  # Material's generated <h1> from the front-matter title
        "Back to top",
        "Made with Material for MkDocs",
        "Table of contents",
        "¶",
        "   ",
    ],
)
def test_theme_text_is_not_in_the_source(theme_text: str) -> None:
    assert locate_in_markdown(read("about.md"), theme_text) is None


def _normalise_by_character(text: str) -> tuple[str, list[int]]:
    """`normalise` written the plain way, one character at a time: the reference."""
    from annotate.anchoring.normalise import DROPPED, FOLDED, RUNS

    out: list[str] = []
    index: list[int] = []
    for i, ch in enumerate(text):
        if ch in DROPPED:
            continue
        if ch.isspace():
            if not out or out[-1] != " ":
                out.append(" ")
                index.append(i)
            continue
        folded = FOLDED.get(ch, ch)
        if folded in RUNS and out and out[-1] == folded:
            continue
        for c in folded.casefold():
            out.append(c)
            index.append(i)
    return "".join(out), index


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(
            list("aZ09 -._\t\n\x1c\xa0\u2003") + list("¶\u200b’“–—…ßİÉé") + ["\U0001f600"]
        ),
        max_size=60,
    )
    | st.text(max_size=40)
)
def test_normalise_equals_the_character_by_character_reference(text: str) -> None:
    assert normalise(text) == _normalise_by_character(text)


def test_normalise_folds_what_renderers_change() -> None:
    rendered, _ = normalise("It’s “done” – really—now… Ok\xa0\n  fine¶")
    source, _ = normalise('It\'s "done" -- really---now... ok fine')
    assert rendered == source == 'it\'s "done" - really-now. ok fine'


def test_projection_drops_markup_and_keeps_offsets() -> None:
    source = (
        "---\ntitle: T\n---\n\n# Head {#id}\n\nSome **bold** and [a link][r] &amp; `co*de`.\n\n"
        "| A | B |\n| - | - |\n| x | y \\| z |\n\n[r]: https://example.com\n"
    )
    projected = project_markdown(source)
    assert " ".join(projected.text.split()) == "Head Some bold and a link & co*de. A B x y | z"
    assert len(projected.offsets) == len(projected.text)
    for ch, offset in zip(projected.text, projected.offsets, strict=True):
        if not ch.isspace():
            assert source[offset] == ch, (ch, source[offset - 5 : offset + 5])
    assert projected.line_of(projected.offsets[projected.text.index("y")]) == 11


MARKDOWN_PIECES = [
    "# Title {#t}\n",
    "Plain *em* and **strong** text\nover two lines.\n",
    "- item one\n- item *two*\n    - nested\n",
    "1. first\n2. second\n",
    "| a | b |\n| - | - |\n| c | d |\n",
    "!!! note\n    Body text.\n",
    '!!! warning "Title"\n    Body.\n',
    '=== "Tab"\n\n    Tab body.\n',
    "```py\ncode = 1\n```\n",
    "    indented\n",
    "Term\n:   Definition.\n",
    "A[^1] note.\n\n[^1]: Footnote.\n",
    "&amp; &copy; \\* `x`\n",
    "<div>raw <b>html</b></div>\n",
    "> quoted *text*\n",
    "[ref][r] and <https://x.org>\n\n[r]: /u\n",
    "'quotes' -- dashes --- and...\n",
]


@settings(max_examples=150, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(MARKDOWN_PIECES), min_size=1, max_size=8),
    noise=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40),
    data=st.data(),
)
def test_any_span_of_the_projection_is_found_in_its_lines(
    pieces: list[str], noise: str, data: st.DataObject
) -> None:
    source = "\n".join([*pieces, noise])
    projected = project_markdown(source)
    assert len(projected.offsets) == len(projected.text)
    assert all(0 <= o < len(projected.source) for o in projected.offsets)
    if not normalise(projected.text)[0].strip():
        return
    text = projected.text
    start = data.draw(st.integers(0, len(text) - 1))
    end = data.draw(st.integers(start + 1, len(text)))
    # A page shows `...` and `--` as one character (…, –): a selection never splits them.
    while start > 0 and text[start - 1] == text[start] and text[start] in "-.":
        start -= 1
    while end < len(text) and text[end - 1] == text[end] and text[end] in "-.":
        end += 1
    quote = text[start:end]
    match = locate_in_markdown(source, quote, prefix=text[max(0, start - 32) : start])
    if not normalise(quote)[0].strip():
        assert match is None
        return
    assert match is not None and match.score == 100
    # Lines count as an editor counts them: `\r\n` and a lone `\r` end a line too.
    assert 1 <= match.line_start <= match.line_end <= projected.source.count("\n") + 1
    assert len(match.excerpt) <= MAX_EXCERPT_CHARS


# -- THE REAL CHECK: quotes from pages rendered by MkDocs + Material ------------------------------

MKDOCS_YML = """\
site_name: Source map fixtures
docs_dir: {docs}
theme:
  name: material
  features: [content.code.copy, navigation.top]
markdown_extensions:
  - admonition
  - pymdownx.details
  - pymdownx.superfences
  - pymdownx.tabbed:
      alternate_style: true
  - attr_list
  - md_in_html
  - def_list
  - footnotes
  - tables
  - toc:
      permalink: true
  - smarty
"""

_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "wbr",
}


class ArticleText(HTMLParser):
    """Text nodes of Material's content root, as the overlay concatenates them
    (docs/overlay.md, "What gets stored")."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._depth = 0
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        classes = (dict(attrs).get("class") or "").split()
        if not self._depth:
            self._depth = int(tag == "article" and "md-content__inner" in classes)
            return
        self._depth += 1
        skipped = {"headerlink", "md-content__button", "md-code__nav"} & set(classes)
        if self._skip or tag in ("script", "style") or skipped:
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not self._depth:
            return
        self._depth -= 1
        if self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if self._depth and not self._skip:
            self.parts.append(data)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sourcemap-site")
    (root / "mkdocs.yml").write_text(MKDOCS_YML.format(docs=DOCS.as_posix()), encoding="utf-8")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", "mkdocs.yml", "-d", "site"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    return root / "site"


def rendered_parts(site: Path, page: str) -> list[str]:
    stem = page.removesuffix(".md")
    url = "" if stem == "index" else stem.removesuffix("/index")
    parser = ArticleText()
    parser.feed((site / url / "index.html").read_text(encoding="utf-8"))
    return parser.parts


def _words(text: str) -> list[str]:
    return [normalise(w)[0] for w in re.findall(r"[^\W\d_]+", text)]


def _folded(lines: list[str]) -> str:
    # Compare against the raw and the entity-decoded source: code shows `&lt;` as typed, prose
    # shows `<`. Footnote markers `[^x]` are numbers on the page.
    text = re.sub(r"\[\^[^\]]*\]", "", "\n".join(lines))
    return normalise(text)[0] + "|" + normalise(html.unescape(text))[0]


def maps_correctly(quote: str, words: list[str], lines: list[str], first: int, last: int) -> bool:
    """Ground truth, checked against the file, not the mapper.

    Prose: every word of the quote is in the mapped lines, and the range is tight — its first and
    last lines hold a word of the quote (or, when the quote starts or ends with punctuation left
    over from a neighbouring line, one of the next few lines does). Code and plain text: the quote
    is literally in the mapped lines and in no fewer of them.
    """
    span = _folded(lines[first - 1 : last])
    leads = re.match(r"\s*[^\W\d_]", quote) is None
    trails = re.search(r"[^\W\d_]\s*$", quote) is None
    head = _folded(lines[first - 1 : first + (3 if leads else 0)])
    tail = _folded(lines[max(last - (4 if trails else 1), 0) : last])
    if (
        words
        and all(w in span for w in words)
        and any(w in head for w in words)
        and any(w in tail for w in words)
    ):
        return True
    folded = normalise(quote)[0]
    return (
        folded in span
        and folded not in _folded(lines[first:last])
        and folded not in _folded(lines[first - 1 : last - 1])
    )


def theme_heading_length(parts: list[str], source: str) -> int:
    """Length of the <h1> Material generates for a page whose Markdown has none (theme text)."""
    if re.search(r"^# ", source, re.MULTILINE):
        return 0
    title = re.search(r"^title: (.*)$", source, re.MULTILINE)
    assert title is not None
    text = "".join(parts)
    return text.index(title.group(1)) + len(title.group(1))


def mapping_results(
    site: Path, pages: dict[str, str], length: int, step: int, skip_theme: bool = True
) -> tuple[int, list[tuple[str, str, tuple[int, int] | None]]]:
    """Cut quotes of `length` characters every `step` from each rendered page, map them back to
    the page's Markdown, and count the ones that land on the lines that hold them."""
    hits, misses = 0, []
    for page, source in pages.items():
        parts = rendered_parts(site, page)
        text = "".join(parts)
        # Words never straddle two text nodes (`mkdocs.yml` title + code on one line).
        bounds = {0}
        for part in parts:
            bounds.add(max(bounds) + len(part))
        lines = source.split("\n")
        first = theme_heading_length(parts, source) if skip_theme else 0
        for start in range(first, len(text) - length // 2, step):
            end = min(start + length, len(text))
            quote = text[start:end]
            if len(re.sub(r"\s", "", quote)) < min(20, length * 2 // 3):
                continue
            cuts = sorted({start, end, *(b for b in bounds if start < b < end)})
            words = [w for a, b in itertools.pairwise(cuts) for w in _words(text[a:b])]
            match = locate_in_markdown(
                source, quote, prefix=text[max(0, start - 32) : start], suffix=text[end : end + 32]
            )
            if match and maps_correctly(quote, words, lines, match.line_start, match.line_end):
                hits += 1
            else:
                misses.append((page, quote, match and (match.line_start, match.line_end)))
    return hits, misses


@pytest.mark.parametrize("length", [12, 25, 60, 150])
def test_quotes_from_the_rendered_site_map_to_the_lines_that_hold_them(
    site: Path, length: int
) -> None:
    hits, misses = mapping_results(site, {page: read(page) for page in PAGES}, length, 7)
    total = hits + len(misses)
    rate = hits / total
    print(f"\nsource mapping, {length}-character quotes: {hits}/{total} = {rate:.2%}")
    assert total > 1000
    assert rate >= TARGET_HIT_RATE, misses[:20]


def test_theme_text_of_the_rendered_site_is_not_mapped(site: Path) -> None:
    parts = rendered_parts(site, "about.md")
    generated_h1 = parts[0] if parts[0].strip() else next(p for p in parts if p.strip())
    assert generated_h1.strip() == "About this project"
    assert locate_in_markdown(read("about.md"), generated_h1.strip()) is None
    html_page = (site / "about" / "index.html").read_text(encoding="utf-8")
    assert "Back to top" in html_page  # navigation.top is on: the text is on the page, not in docs
    assert map_source(DOCS.parent, "docs/about.md", "Back to top") is None


# -- map_source: files, and nothing outside the project -------------------------------------------


def test_map_source_returns_the_source_shape(tmp_path: Path) -> None:
    (tmp_path / "docs" / "guide").mkdir(parents=True)
    (tmp_path / "docs" / "guide" / "install.md").write_text(
        "# Install\n\nRun `pip install mkdocs-annotate`\nin a shell.\n", encoding="utf-8"
    )
    assert map_source(tmp_path, "docs/guide/install.md", "pip install mkdocs-annotate\nin a") == {
        "path": "docs/guide/install.md",
        "lineStart": 3,
        "lineEnd": 4,
        "excerpt": "Run `pip install mkdocs-annotate`\nin a shell.",
        "score": 100,
    }
    assert map_source(tmp_path, "docs/guide/install.md", "Theme footer text") is None
    assert map_source(tmp_path, "docs/guide/missing.md", "Install") is None
    assert map_source(tmp_path, "docs/guide", "Install") is None


def test_map_source_reads_crlf_and_bom_files_by_line(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_bytes(
        "\ufeff# Title\r\n\r\nFirst line\r\nsecond line\r\n".encode()
    )
    result = map_source(tmp_path, "page.md", "First line second")
    assert result is not None and (result["lineStart"], result["lineEnd"]) == (3, 4)


def test_excerpt_is_trimmed(tmp_path: Path) -> None:
    (tmp_path / "long.md").write_text("word " * 400 + "\n", encoding="utf-8")
    result = map_source(tmp_path, "long.md", "word word word")
    assert result is not None and len(result["excerpt"]) == MAX_EXCERPT_CHARS


@pytest.fixture
def project_with_neighbours(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("Top secret text.\n", encoding="utf-8")
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "page.md").write_text("Public text.\n", encoding="utf-8")
    return project


@pytest.mark.parametrize(
    "rel_path",
    [
        "../outside/secret.md",
        "docs/../../outside/secret.md",
        "docs/../docs/page.md",  # `..` is refused even when it would stay inside
        "",
        "docs/\0page.md",
    ],
)
def test_paths_that_climb_out_are_refused(project_with_neighbours: Path, rel_path: str) -> None:
    assert map_source(project_with_neighbours, rel_path, "text") is None


def test_absolute_paths_are_refused(project_with_neighbours: Path) -> None:
    secret = project_with_neighbours.parent / "outside" / "secret.md"
    inside = project_with_neighbours / "docs" / "page.md"
    assert map_source(project_with_neighbours, str(secret), "Top secret text.") is None
    assert map_source(project_with_neighbours, str(inside), "Public text.") is None


def test_symlinks_out_of_the_project_are_refused(project_with_neighbours: Path) -> None:
    project = project_with_neighbours
    outside = project.parent / "outside"
    (project / "docs" / "leak.md").symlink_to(outside / "secret.md")
    (project / "docs" / "linked").symlink_to(outside, target_is_directory=True)
    (project / "docs" / "alias.md").symlink_to(project / "docs" / "page.md")
    assert map_source(project, "docs/leak.md", "Top secret text.") is None
    assert map_source(project, "docs/linked/secret.md", "Top secret text.") is None
    # A link that stays inside is fine, and names the real file.
    alias = map_source(project, "docs/alias.md", "Public text.")
    assert alias is not None and alias["path"] == "docs/page.md"
    assert map_source(project, "docs/page.md", "Public text.") is not None


# -- the project's own docs/, as issue #3 asks -----------------------------------------------------

PROJECT = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def project_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("project-site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "-q", "-f", "mkdocs.yml", "-d", str(out)],
        cwd=PROJECT,
        env=env,
        check=True,
        capture_output=True,
    )
    return out


def test_quotes_from_the_projects_own_docs_map_to_their_lines(project_site: Path) -> None:
    docs = PROJECT / "docs"
    pages = {
        p.relative_to(docs).as_posix(): p.read_text(encoding="utf-8") for p in docs.rglob("*.md")
    }
    hits, misses = mapping_results(project_site, pages, 60, 11, skip_theme=False)
    total = hits + len(misses)
    print(f"\nsource mapping on docs/: {hits}/{total} = {hits / total:.2%}")
    assert total > 500
    assert hits / total >= TARGET_HIT_RATE, misses[:20]


# -- issue #26 item 4: a page's first heading ----------------------------------------------------

# A reference page: front matter, its h1, then prose that uses the heading's word again (lower
# case, as prose does, or capitalised at the start of a sentence).
FIRST_HEADING = """\
---
icon: material/format-text
---

# Typesetting

Several HTML elements give text its typesetting. Additionally, marks can be
shown for a document.

  [marks]: https://example.org/marks

## Setup

Typesetting is switched on in the configuration.
"""
# What the overlay measures on a built page: the theme's whitespace before the h1 (its edit
# buttons are left out), the next paragraph after it.
BEFORE_H1 = "         \n                  \n\n\n\n"


@pytest.mark.parametrize("later", ["capitalised", "lower case"])
def test_a_pages_first_heading_maps_to_its_line(later: str) -> None:
    """The h1's prefix on the page is theme text the Markdown cannot hold: at the start of the
    Markdown it is no evidence against the heading. It was: the word again in prose, with a
    space before it like the page's, won (the prose line; or, in other letter case, null)."""
    page = FIRST_HEADING
    if later == "lower case":
        page = page.replace("Typesetting is switched on", "It is switched on")
    found = locate_in_markdown(
        page,
        "Typesetting",
        prefix=BEFORE_H1,
        suffix="\nSeveral HTML elements give text",
        in_code=False,
        occurrence=0,
    )
    assert found is not None and found.excerpt == "# Typesetting"
    assert found.line_start == 5


def test_the_last_line_of_a_page_keeps_its_place() -> None:
    """The same at the other edge: the footer's text after the page's last words."""
    page = "# Notes\n\nThe end of the notes comes here.\n\nRead the notes, the end\n"
    found = locate_in_markdown(
        page, "the end", prefix="Read the notes, ", suffix="\nMade with Material for MkDocs"
    )
    assert found is not None and found.line_start == 5
