"""Source fidelity on a real MkDocs site (issue #13): every note on the right lines, through edits.

    .venv/bin/python benchmarks/realsite.py SITE_DIR [--config mkdocs.yml] [--mkdocs PATH]
        [--per-kind 2] [--max-pages 80] [--generator zensical --zensical PATH] [--commit SHA]

SITE_DIR is a checkout of someone else's documentation (never committed here). The site is copied
to a temp folder, the `annotate` plugin is added to its config, and `mkdocs serve` (from
`--mkdocs`, a virtualenv where the site's plugins and this package are installed) serves it.
Debian's Chromium then, through the real overlay (select with the mouse, press Annotate, type,
Save; Alt+click for an element), annotates passages of every kind: paragraph, inline markup,
heading, admonition, content tab, table cell, list item, code block, footnote, definition list,
keys, generated API text, an element. Until the overlay sends `inCode` and `occurrence` itself,
the benchmark works them out in the page and adds them to the overlay's request.

Each note's `source` is checked against lines found independently of the tool: a plain search
of the Markdown file for runs of the quote's words (unique among the runs of the same kind,
code or not, by a plain scan of fences); generated text against the `:::` line whose identifier
is the longest leading part of the object id on the rendered page; an image against the line
that names its file. Then agent-style edits are made to the Markdown (insert a paragraph near
the top, insert one just above, reword one word inside, reflow, move, delete; the other notes of
each page stay untouched with edits around them), the site rebuilds, each page is reloaded, and
`source`, `anchorState` and the highlight are checked again. One table per kind, then a summary.

"right" lines hold the independently found first and last lines of the quote and at most two
more; "exact" are exactly those lines.

With `--generator zensical` the site is built by `zensical build` (from `--zensical`, a
virtualenv with Zensical and the Markdown extensions the site names) instead, without the plugin
(Zensical runs none): the built `site/` is served by `annotate serve`, each page's Markdown file
comes from the site config (annotate/config.py), and after the edits the site is built again.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CHROMIUM, CHROMIUM_ARGS
from _machine import describe
from playwright.sync_api import Page, Route, sync_playwright

import annotate
import annotate.config
import annotate.pages

KINDS = (
    "paragraph",
    "inline",
    "heading",
    "admonition",
    "tab",
    "table cell",
    "list item",
    "code",
    "footnote",
    "definition",
    "keys",
    "generated",
    "element",
)
EDITS = ("insert above", "insert just above", "reword", "reflow", "move", "delete")
# Sentences revised in several places (issue #26): 2 or 3 words replaced by others of about the
# same length, or words replaced until 10-20 % of the quote's characters changed; quotes of
# REVISE_MIN characters or more, of the kinds a one-word rewording is tried on.
REVISIONS = ("reword 2", "reword 3", "reword 15 %")
REVISE_MIN = 60
# Replacement words by length (a word is replaced by one within a letter of its length).
NEW_WORDS = (  # noqa: SIM905 (a list of 51 words, one a line, reads worse)
    "alpha brave cobalt dynamo ember falcon gravel harbor island jovial kernel lantern "
    "meadow nectar orchid pepper quartz ribbon saddle timber umbrella velvet walnut yonder "
    "zephyr absolute blueprint carnival daffodil elevator fountain galaxies hydrogen "
    "incident juniper kangaroo labyrinth mandolin navigator obsidian pinnacle quadrant "
    "rosemary sapphire tapestry ultimatum vineyard wanderer xylophone yachtsman zeppelin"
).split()
# Which edits make sense for a kind (a table cell cannot be reflowed, a heading not moved).
EDITABLE = {
    "paragraph": EDITS + REVISIONS,
    "inline": ("insert just above", "reword", "reflow", "insert above"),
    "heading": ("insert above", "reword", "delete"),
    "admonition": ("insert just above", "reword", "reflow", "delete", *REVISIONS),
    "tab": ("insert just above", "reword", "reflow", "delete", *REVISIONS),
    "table cell": ("insert above", "reword", "insert just above"),
    "list item": ("reword", "insert just above", "reflow", "delete", *REVISIONS),
    "code": ("insert above", "reword"),
    "footnote": ("reword", "insert just above", "reflow"),
    "definition": ("reword", "reflow", "insert just above"),
    "keys": ("insert above", "insert just above"),
    "generated": ("insert above",),
    "element": ("insert above", "insert just above"),
}
# Edits that change no passage's text (only lines and context).
KEEP_TEXT = ("insert above", "insert just above")
TOP_TEXT = "An agent inserted this paragraph near the top of the page."
JUST_ABOVE_TEXT = "An agent added this paragraph just above the passage."
NEW_WORD = "revised"
SKIP_SELECTOR = (
    "#annotate-host,script,style,noscript,template,.headerlink,.md-code__nav,.md-clipboard,"
    ".md-content__button"
)

# -- in the page ---------------------------------------------------------------------------------

# The page text as the overlay measures it (overlay/annotate.js `measure`), each text node's start
# and whether it is code; then the candidate passages of one kind as [start, end) spans.
PAGE_JS = """
([kind, skip, limit]) => {
  const root = document.querySelector('article.md-content__inner') || document.querySelector('main')
    || document.querySelector('[role=main]') || document.body;
  const nodes = [], starts = []; let text = '';
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => n.nodeType === 1 ? (n.matches(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP)
      : (n.data.length ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP)});
  for (let n = walker.nextNode(); n; n = walker.nextNode()) { nodes.push(n); starts.push(text.length); text += n.data; }
  const code = nodes.map((n) => !!(n.parentElement && n.parentElement.closest('pre,code')));
  const spanOf = (el) => {
    let s = -1, e = -1;
    nodes.forEach((n, i) => { if (el.contains(n)) { if (s < 0) s = starts[i]; e = starts[i] + n.data.length; } });
    return s < 0 ? null : [s, e];
  };
  // Not inside a closed <details> (its content is laid out, but not shown).
  const visible = (el) => { const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && (!el.checkVisibility || el.checkVisibility()); };
  // A piece of [s, e) of 20 to 90 characters, starting and ending at a word.
  const piece = (s, e, from) => {
    let a = from === undefined ? s : from;
    while (a < e && /\\s/.test(text[a])) a++;
    let b = Math.min(e, a + 90);
    if (b < e) { const cut = text.lastIndexOf(' ', b); if (cut > a + 20) b = cut; }
    while (b > a && /[\\s,;:]/.test(text[b - 1])) b--;
    return b - a >= 12 ? [a, b] : null;
  };
  const codeAt = (pos) => { let lo = 0, hi = nodes.length - 1, at = 0;
    while (lo <= hi) { const m = (lo + hi) >> 1; if (starts[m] <= pos) { at = m; lo = m + 1; } else hi = m - 1; }
    return code[at]; };
  const q = (sel) => [...root.querySelectorAll(sel)].filter(visible);
  const plain = (el) => !el.querySelector('code,kbd,img,svg,sup,.keys,ul,ol,table');
  const out = [];
  const nodeAt = (pos) => { let lo = 0, hi = nodes.length - 1, at = 0;
    while (lo <= hi) { const m = (lo + hi) >> 1; if (starts[m] <= pos) { at = m; lo = m + 1; } else hi = m - 1; }
    return nodes[at]; };
  // A press on a link drags the link: a reader starts and ends a selection outside links.
  const inLink = (pos) => !!nodeAt(pos).parentElement.closest('a');
  const add = (span, extra) => {
    if (!span || out.length >= limit) return;
    const [a, b] = span, exact = text.slice(a, b);
    if (inLink(a) || inLink(b - 1)) return;
    if (exact.trim().length < 12) return;
    const inCode = codeAt(a);
    let occurrence = 0;
    for (let at = text.indexOf(exact); at >= 0 && at < a; at = text.indexOf(exact, at + 1))
      if (codeAt(at) === inCode) occurrence++;
    out.push({start: a, end: b, exact, inCode, occurrence, prefix: text.slice(Math.max(0, a - 32), a),
              suffix: text.slice(b, b + 32), ...(extra || {})});
  };
  const inside = (el, sel) => el.parentElement && el.parentElement.closest(sel);
  const block = '.admonition,details,.tabbed-set,.footnote,table,li,dd,blockquote,.doc';
  if (kind === 'paragraph')
    for (const el of q(':scope > p')) { if (plain(el) && el.textContent.length > 60) { const s = spanOf(el); if (s) add(piece(...s)); } }
  if (kind === 'inline')
    for (const el of q(':scope > p, :scope > ul > li > p')) {
      const child = el.querySelector(':scope > code, :scope > strong, :scope > em, :scope > a');
      if (!child || el.querySelector('.keys,sup')) continue;
      const s = spanOf(el), c = spanOf(child); if (!s || !c) continue;
      let a = Math.max(s[0], c[0] - 25); a = text.lastIndexOf(' ', a) + 1 > s[0] ? text.lastIndexOf(' ', a) + 1 : s[0];
      let b = Math.min(s[1], c[1] + 25); const cut = text.indexOf(' ', b); if (cut > 0 && cut < s[1]) b = cut;
      while (b > a && /[\\s,;:]/.test(text[b - 1])) b--;
      add([a, b]);
    }
  if (kind === 'heading')
    for (const el of q(':scope h2, :scope h3')) { if (!el.classList.contains('doc-heading') && !inside(el, block)) add(spanOf(el)); }
  if (kind === 'admonition')
    for (const el of q('.admonition > p:not(.admonition-title), details > p')) { if (plain(el)) { const s = spanOf(el); if (s) add(piece(...s)); } }
  if (kind === 'tab')
    for (const el of q('.tabbed-block > p, .tabbed-content > p')) { if (plain(el)) { const s = spanOf(el); if (s) add(piece(...s)); } }
  if (kind === 'table cell')
    for (const el of q('td')) { if (plain(el) && el.textContent.trim().length >= 20 && !inside(el, '.doc')) { const s = spanOf(el); if (s) add(piece(...s)); } }
  if (kind === 'list item')
    for (const el of q(':scope > ul > li, :scope > ol > li')) { if (plain(el) && el.textContent.trim().length >= 25) { const s = spanOf(el); if (s) add(piece(...s)); } }
  if (kind === 'code')
    for (const el of q('pre > code')) {
      const s = spanOf(el); if (!s || inside(el, '.doc')) continue;
      const lines = text.slice(...s).split('\\n'); let at = s[0];
      for (const line of lines) {
        const t = line.trim();
        if (t.length >= 15 && /[A-Za-z]{3}/.test(t)) { const a = at + line.indexOf(t); add([a, a + t.length]); break; }
        at += line.length + 1;
      }
    }
  if (kind === 'footnote')
    for (const el of q('.footnote li > p')) { const s = spanOf(el); if (s) add(piece(...s)); }
  if (kind === 'definition')
    for (const el of q('dd')) { if (plain(el) && !inside(el, '.doc')) { const s = spanOf(el); if (s) add(piece(...s)); } }
  if (kind === 'keys')
    for (const k of q('.keys')) {
      const host = k.closest('li,p,td'); if (!host) continue;
      const s = spanOf(host), after = spanOf(k); if (!s || !after) continue;
      add(piece(after[1], s[1]));
    }
  if (kind === 'generated')
    for (const el of q('.doc-contents > p')) {
      const heads = [...root.querySelectorAll('.doc-heading[id], .doc-object > a[id]')]
        .filter((h) => h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING);
      const object = heads.length ? heads[heads.length - 1].id : null;
      const s = spanOf(el); if (s && object) add(piece(...s), {object});
    }
  if (kind === 'element')
    for (const el of q('img')) {
      if (el.closest('.twemoji,.emojione,a.glightbox') || !el.getAttribute('src')) continue;
      const r = el.getBoundingClientRect();
      if (r.width < 20 || r.height < 20 || out.length >= limit) continue;
      el.scrollIntoView({block: 'center'});
      const c = el.getBoundingClientRect(), x = c.left + c.width / 2, y = c.top + c.height / 2;
      if (document.elementFromPoint(x, y) !== el) continue;  // covered: a click would hit another element
      out.push({src: el.getAttribute('src'), alt: el.getAttribute('alt') || '', index: [...document.images].indexOf(el)});
    }
  return out;
}
"""

# Scroll a [start, end) span of the page text into view and say where its first and last
# characters are (tests/browser/conftest.py `select_text`, by offsets).
RECTS_JS = """
async ([start, end, skip]) => {
  const root = document.querySelector('article.md-content__inner') || document.querySelector('main')
    || document.querySelector('[role=main]') || document.body;
  const nodes = []; let total = 0;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => n.nodeType === 1 ? (n.matches(skip) ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_SKIP)
      : (n.data.length ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP)});
  for (let n = walker.nextNode(); n; n = walker.nextNode()) { nodes.push([n, total]); total += n.data.length; }
  const point = (pos) => { for (let i = nodes.length - 1; i >= 0; i--) if (nodes[i][1] <= pos) return [nodes[i][0], pos - nodes[i][1]]; };
  const rect = (pos) => { const [n, o] = point(pos); const r = document.createRange(); r.setStart(n, o); r.setEnd(n, o + 1); return r.getBoundingClientRect(); };
  const frame = () => new Promise((done) => requestAnimationFrame(done));
  for (let tries = 0; ; tries++) {
    const first = rect(start);
    if (first.y < 60 || first.y > innerHeight - 120) window.scrollBy({top: first.y - 250, behavior: 'instant'});
    let y = -1, still = 0;
    while (still < 3) { await frame(); still = scrollY === y ? still + 1 : 0; y = scrollY; }
    const a = rect(start), b = rect(end - 1);
    if ((a.y >= 0 && b.bottom <= innerHeight) || tries === 10)
      return {x1: a.left + 1, y1: a.top + a.height / 2, x2: b.right - 1, y2: b.top + b.height / 2};
  }
}
"""

HIGHLIGHTS_JS = """() => { const h = CSS.highlights.get('annotate'); return h ? [...h].map((r) => r.toString()) : []; }"""

# -- independent expectations: plain searches of the Markdown ------------------------------------

# A fence may stand inside block quotes (`> > ```django`, MkDocs' own dev-guide/themes.md): its
# code lines are code, as the rendered page says.
_FENCE = re.compile(r"^(?:[ \t]*>)*\s*(`{3,}|~{3,})")
_DIRECTIVE = re.compile(r"^\s*(?:#+\s+)?:::\s+(\S+)")


def fenced_lines(md: str) -> list[bool]:
    """For each line, whether it is inside a fenced block (a plain scan of ``` and ~~~)."""
    out, fence = [], ""
    for line in md.split("\n"):
        m = _FENCE.match(line)
        if fence:
            out.append(True)
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = ""
            continue
        if m:
            fence = m.group(1)
            out.append(True)
            continue
        out.append(False)
    return out


def _line(md: str, offset: int) -> int:
    return md.count("\n", 0, offset) + 1


# Inline markup a reader does not see, outside fences: a link's target or reference label, its
# brackets, backticks, emphasis stars, and the block-quote markers that start the lines of MkDocs'
# `> ` callouts. A page's words wrapped across `[Index\npages](#index-pages)` or `have\n> Python`
# sit on both lines; dropped from the search, they are placed there too.
_MARKUP = re.compile(r"\]\([^)\s]*\)|\]\[[^\]\n]*\]|[\[\]`*]|^[ \t]*(?:>[ \t]?)+", re.M)


@dataclass
class PlainMarkdown:
    """The Markdown without the inline markup outside fences (`_MARKUP`), each character's
    offset in the Markdown, and each Markdown line's fencing."""

    md: str
    text: str
    offsets: list[int]
    fenced: list[bool]

    @classmethod
    def of(cls, md: str, *, strip: bool = True) -> PlainMarkdown:
        fenced = fenced_lines(md)
        dropped = bytearray(len(md))
        for m in _MARKUP.finditer(md) if strip else ():
            if not fenced[_line(md, m.start()) - 1]:
                dropped[m.start() : m.end()] = b"\1" * (m.end() - m.start())
        if md.startswith("---\n") and (close := md.find("\n---", 3)) != -1:
            # Front matter: no page shows it ("title: Code of Conduct" above a snippet include).
            dropped[: close + 4] = b"\1" * (close + 4)
        offsets = [i for i, gone in enumerate(dropped) if not gone]
        return cls(md, "".join(md[i] for i in offsets), offsets, fenced)

    def hits(self, run: list[str], in_code: bool, *, at_end: bool) -> list[int]:
        """The Markdown lines of the first (or last) word of each occurrence of `run` among
        lines of the kind."""
        pattern = r"\s+".join(map(re.escape, run))
        out = []
        for m in re.finditer(pattern, self.text):
            first = _line(self.md, self.offsets[m.start()])
            if self.fenced[first - 1] == in_code:
                out.append(_line(self.md, self.offsets[m.end() - 1]) if at_end else first)
        return out


def window_lines(
    plain: PlainMarkdown,
    words: list[str],
    in_code: bool,
    *,
    from_end: bool,
    within: tuple[int, int] | None = None,
) -> tuple[int, int, int]:
    """(line of the earliest/latest run of 3-5 of `words` found once among lines of the kind,
    or once `within` those lines, index of that run's first word, its length), or (0, -1, 0)."""
    for k in (5, 4, 3):
        order = range(len(words) - k, -1, -1) if from_end else range(len(words) - k + 1)
        for i in order:
            run = words[i : i + k]
            if sum(len(w) for w in run) < 10:
                continue
            hits = plain.hits(run, in_code, at_end=from_end)
            if within is not None:
                hits = [h for h in hits if within[0] <= h <= within[1]]
            if len(hits) == 1:
                return hits[0], i, k
    return 0, -1, 0


def expected_text_lines(
    md: str, quote: str, in_code: bool
) -> tuple[tuple[int, int], tuple[bool, bool]] | None:
    """The lines of the first and last runs of the quote's words found once, and whether words
    before / after those runs were left out."""
    words = quote.split()
    if len(words) < 3:
        return None
    # Markup dropped, else as written (a quote of code-like text: "default is []").
    for plain in (PlainMarkdown.of(md), PlainMarkdown.of(md, strip=False)):
        first, i, _ = window_lines(plain, words, in_code, from_end=False)
        # The quote's last words may repeat elsewhere in the file ("the latest version of
        # Material for MkDocs"): once within as many lines after its first as it has words.
        within = (first, first + len(words)) if first else None
        last, j, k = window_lines(plain, words, in_code, from_end=True, within=within)
        if first and last and last >= first:
            return (first, last), (i > 0, j + k < len(words))
    return None


def expected_directive(md: str, object_id: str) -> int | None:
    best, line = "", None
    for n, (text, fenced) in enumerate(zip(md.split("\n"), fenced_lines(md), strict=True), 1):
        m = _DIRECTIVE.match(text)
        if m and not fenced:
            ident = m.group(1)
            if (object_id == ident or object_id.startswith(ident + ".")) and len(ident) > len(best):
                best, line = ident, n
    return line


def expected_image(md: str, src: str) -> int | None:
    name = src.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
    if len(name) < 3:
        return None
    fenced = fenced_lines(md)
    hits = [n for n, line in enumerate(md.split("\n"), 1) if name in line and not fenced[n - 1]]
    return hits[0] if len(hits) == 1 else None


# -- passages -----------------------------------------------------------------------------------


@dataclass
class Passage:
    kind: str
    url: str
    path: str  # Markdown file relative to the project
    exact: str = ""
    in_code: bool = False
    expected: tuple[int, int] | None = None
    object: str | None = None
    src: str = ""
    # Runs of the quote's words before the first and after the last found independently: the
    # lines of those words are not known, so the range may reach that far (at most 2 lines).
    loose: tuple[bool, bool] = (False, False)
    stored: dict[str, Any] = field(default_factory=dict)  # what the overlay sent
    stale_text: bool = False  # the overlay's quote was not the text selected (issue #13, class 4)
    failure: str = ""  # why it could not be annotated
    id: str | None = None
    created: str = "-"  # exact | right | wrong | none | failed
    source: dict[str, Any] | None = None
    edit: str = "none"
    new_exact: str = ""
    after: dict[str, Any] = field(default_factory=dict)


def grade(
    source: dict[str, Any] | None,
    path: str,
    expected: tuple[int, int] | None,
    loose: tuple[bool, bool] = (False, False),
) -> str:
    """exact: the lines found independently; right: reaching at most 2 lines further where
    words at that end of the quote could not be placed independently; else wrong."""
    if expected is None:
        return "unchecked"
    if not source:
        return "none"
    if source.get("path") != path:
        return "wrong"
    first, last = expected
    start, end = source["lineStart"], source["lineEnd"]
    if (start, end) == expected:
        return "exact"
    starts = first - 2 <= start <= first if loose[0] else start == first
    ends = last <= end <= last + 2 if loose[1] else end == last
    return "right" if starts and ends else "wrong"


# -- the site -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def with_plugin(config: str) -> str:
    """The config with `- annotate` first under `plugins:` (a text edit: configs hold
    `!!python/name` tags a YAML round trip would lose)."""
    lines = config.split("\n")
    for n, line in enumerate(lines):
        if re.match(r"^plugins:\s*$", line):
            for item in lines[n + 1 :]:
                if item.strip().startswith("- "):
                    indent = item[: len(item) - len(item.lstrip())]
                    break
            else:
                indent = "  "
            lines.insert(n + 1, f"{indent}- annotate")
            return "\n".join(lines)
    return config + "\nplugins:\n  - search\n  - annotate\n"


def copy_site(site: Path, work: Path, config_name: str) -> Path:
    shutil.copytree(
        site, work, ignore=shutil.ignore_patterns(".git", "node_modules", "site", ".annotate")
    )
    config = work / "mkdocs.annotate.yml"
    config.write_text(with_plugin((work / config_name).read_text()))
    return config


def wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the site did not answer at {url} within {timeout:.0f} s")


def page_order(project: Path, pages: dict[str, str]) -> list[str]:
    """Page URLs, the ones whose Markdown hints at the most kinds first."""
    hints = (
        r"\n!!!|\n\?\?\?",
        r'\n\s*=== "',
        r"\|\s*-{3,}",
        r"\[\^",
        r"\+\+\w",
        r"^:::|\n#*\s*:::",
        r"!\[",
        r"\n:\s{3}",
    )

    def score(url: str) -> int:
        try:
            md = (project / pages[url]).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return -1
        return sum(bool(re.search(h, md)) for h in hints)

    urls = [u for u in pages if u.endswith("/") or u.endswith(".html")]
    urls = list(dict.fromkeys(sorted(urls)))
    random.Random(13).shuffle(urls)
    return sorted(urls, key=score, reverse=True)


class Session:
    def __init__(self, page: Page, base: str, project: Path) -> None:
        self.page, self.base, self.project = page, base, project
        self.extra: dict[str, Any] = {}
        self.selected: dict[str, Any] = {}
        self.stale = False
        self.why = ""  # why the last note could not be made
        page.route("**/__annotate/api/annotations", self._add_fields)

    def _add_fields(self, route: Route) -> None:
        # The overlay helper sends inCode/occurrence (COMMON.md contract 1); until then, add them.
        request = route.request
        if request.method == "POST" and self.extra and request.post_data:
            body = json.loads(request.post_data)
            if body.get("type", "text") == "text":
                for key, value in self.extra.items():
                    body.setdefault(key, value)
                # The overlay measures the page text once (issue #13, class 4, the overlay's
                # part): where a script changed the DOM since, its quote is other text. Send
                # what was selected, as an overlay whose text follows the DOM would.
                sent = (body.get("quote") or {}).get("exact") or body.get("selectedText")
                self.stale = sent != self.selected["exact"]
                if self.stale:
                    # The overlay worked out inCode/occurrence for its own, other, text.
                    body.update(self.extra)
                    body["selectedText"] = self.selected["exact"]
                    body["quote"] = {k: self.selected[k] for k in ("exact", "prefix", "suffix")}
                    body["position"] = {
                        "start": self.selected["start"],
                        "end": self.selected["end"],
                    }
            route.continue_(post_data=json.dumps(body))
            return
        route.continue_()

    def open(self, url: str) -> None:
        self.page.goto(self.base + url)
        self.page.wait_for_function(
            "() => performance.getEntriesByName('annotate:painted').length > 0", timeout=30000
        )

    def candidates(self, kind: str, limit: int) -> list[dict[str, Any]]:
        return self.page.evaluate(PAGE_JS, [kind, SKIP_SELECTOR, limit])

    def annotate_text(self, c: dict[str, Any]) -> dict[str, Any] | None:
        box = self.page.evaluate(RECTS_JS, [c["start"], c["end"], SKIP_SELECTOR])
        mouse = self.page.mouse
        mouse.move(box["x1"], box["y1"])
        mouse.down()
        mouse.move((box["x1"] + box["x2"]) / 2, (box["y1"] + box["y2"]) / 2, steps=3)
        mouse.move(box["x2"], box["y2"], steps=3)
        mouse.up()
        adder = self.page.get_by_role("button", name="Annotate")
        try:
            adder.wait_for(state="visible", timeout=3000)
        except Exception:
            selected = self.page.evaluate("() => String(getSelection())")
            same = " ".join(selected.split()) == " ".join(c["exact"].split())
            self.why = "no Annotate button" + (
                " for the selection" if same else f" (selected {selected[:30]!r})"
            )
            return None
        adder.click()
        self.extra = {"inCode": c["inCode"], "occurrence": c["occurrence"]}
        self.selected, self.stale = c, False
        return self._save()

    def annotate_element(self, c: dict[str, Any]) -> dict[str, Any] | None:
        for _ in range(5):
            point = self.page.evaluate(
                """async (i) => {
                     // Images still loading move the page under the pointer.
                     await Promise.all([...document.images].map((im) => im.decode().catch(() => null)));
                     const el = document.images[i]; el.scrollIntoView({block: 'center'});
                     const r = el.getBoundingClientRect(), x = r.left + r.width / 2 + 1, y = r.top + r.height / 2 + 1;
                     return document.elementFromPoint(x, y) === el ? {x, y} : null; }""",
                c["index"],
            )
            if point is not None:
                break
            self.page.wait_for_timeout(300)
        else:
            self.why = "the image is covered"
            return None
        self.page.keyboard.down("Alt")
        self.page.mouse.move(point["x"] - 1, point["y"] - 1)
        self.page.mouse.move(point["x"], point["y"])
        self.page.mouse.click(point["x"], point["y"])
        self.page.keyboard.up("Alt")
        self.extra, self.stale = {}, False
        made = self._save()
        if made is not None and (made.get("elementSelector") or {}).get("tagName") != "img":
            self.stale = True  # the click landed on another element (a moving page)
        return made

    def _save(self) -> dict[str, Any] | None:
        try:
            self.page.get_by_label("Note", exact=True).fill("Check this passage.")
            with self.page.expect_response(
                lambda r: (
                    r.url.endswith("/__annotate/api/annotations") and r.request.method == "POST"
                ),
                timeout=15000,
            ) as info:
                self.page.get_by_role("button", name="Save").click()
            response = info.value
            if response.status != 201 and response.status != 200:
                self.why = f"HTTP {response.status}: {response.text()[:80]}"
                return None
            self.page.locator("#annotate-host [role=dialog]").wait_for(state="hidden")
            return response.json()
        except Exception as e:
            self.why = f"no note dialog or answer ({type(e).__name__})"
            return None

    def highlights(self) -> list[str]:
        return [" ".join(t.split()) for t in self.page.evaluate(HIGHLIGHTS_JS)]


def collect(
    session: Session, pages: dict[str, str], per_kind: int, max_pages: int
) -> list[Passage]:
    """Annotate passages of every kind through the overlay; check each `source` at creation."""
    wanted = dict.fromkeys(KINDS, per_kind)
    passages: list[Passage] = []
    for n, url in enumerate(page_order(session.project, pages)):
        if n >= max_pages or not any(wanted.values()):
            break
        path = pages[url]
        md = (session.project / path).read_text(encoding="utf-8", errors="replace")
        try:
            session.open(url)
        except Exception:
            continue
        for kind in KINDS:
            if not wanted[kind]:
                continue
            for c in session.candidates(kind, 12):
                p = Passage(kind, url, path)
                if kind == "element":
                    line = expected_image(md, c["src"])
                    if line is None:
                        continue
                    p.expected, p.src, p.exact = (line, line), c["src"], c["alt"]
                    made = session.annotate_element(c)
                else:
                    p.exact, p.in_code = c["exact"], bool(c["inCode"])
                    if kind == "generated":
                        line = expected_directive(md, c["object"])
                        if line is None or " ".join(p.exact.split()) in " ".join(md.split()):
                            continue
                        p.expected, p.object = (line, line), c["object"]
                    else:
                        found = expected_text_lines(md, p.exact, p.in_code)
                        if found is None:
                            continue  # no way to know its lines without the tool: pick another
                        p.expected, p.loose = found
                    session.why = ""
                    made = session.annotate_text(c)
                if made is None:
                    p.created, p.failure = "failed", session.why
                else:
                    p.id, p.source = made["id"], made.get("source")
                    p.stored = {k: made.get(k) for k in ("quote", "position", "elementSelector")}
                    p.stale_text = session.stale
                    p.created = grade(p.source, path, p.expected, p.loose)
                    if kind == "element" and session.stale:
                        p.created, p.expected = "misclick", None  # another element was noted
                    if kind == "generated" and p.source:
                        # The directive's first line; its options may follow.
                        right = p.source.get("lineStart") == p.expected[0]
                        generated = p.source.get("kind") == "generated"
                        p.created = "exact" if right and generated else "wrong"
                passages.append(p)
                wanted[kind] -= 1
                break
    return passages


# -- edits --------------------------------------------------------------------------------------


def block_start(lines: list[str], line: int) -> int:
    """The 0-based index of the first line of the block holding 1-based `line`."""
    i = line - 1
    while i > 0 and lines[i - 1].strip():
        i -= 1
    return i


def block_end(lines: list[str], line: int) -> int:
    i = line - 1
    while i + 1 < len(lines) and lines[i + 1].strip():
        i += 1
    return i


def top_position(lines: list[str]) -> int:
    """Where a paragraph goes near the top: after front matter and the first heading."""
    i = 0
    if lines and lines[0].strip() == "---":
        for j in range(1, len(lines)):
            if lines[j].strip() == "---":
                i = j + 1
                break
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].startswith("# "):
        i += 1
    return i


def plan_edits(passages: list[Passage]) -> None:
    """One edit per passage, cycling through the edits its kind allows; one per block and one
    'insert above' per file, so the edits do not overlap. A passage on lines another passage
    shares gets no edit that changes text: that text is the other's too, which would then be
    graded as untouched (an inline quote inside a paragraph quote, reworded, left the paragraph's
    highlight following text the check did not expect)."""
    used: set[tuple[str, int]] = set()
    tops: set[str] = set()
    turn = 0
    noted = [p for p in passages if p.id is not None and p.expected is not None]
    shared = {
        id(p)
        for p in noted
        for q in noted
        if q is not p
        and q.path == p.path
        and q.expected[0] <= p.expected[1]  # type: ignore[index]
        and p.expected[0] <= q.expected[1]  # type: ignore[index]
    }
    for p in passages:
        if p.id is None or p.expected is None:
            continue
        options = EDITABLE[p.kind]
        if id(p) in shared:
            options = tuple(e for e in options if e in KEEP_TEXT)
        for k in range(len(options)):
            edit = options[(turn + k) % len(options)]
            if edit == "insert above" and p.path in tops:
                continue
            if edit == "reword" and len(p.exact) < 30:
                continue
            if edit in REVISIONS and len(p.exact) < REVISE_MIN:
                continue
            key = (p.path, p.expected[0])
            if edit != "insert above" and key in used:
                continue
            p.edit = edit
            if edit == "insert above":
                tops.add(p.path)
            else:
                used.add(key)
            break
        turn += 1


def apply_edits(project: Path, passages: list[Passage]) -> dict[str, str]:
    """Write the planned edits; returns the edited files' new text by path."""
    by_file: dict[str, list[Passage]] = {}
    for p in passages:
        if p.edit != "none":
            by_file.setdefault(p.path, []).append(p)
    written: dict[str, str] = {}
    for path, items in by_file.items():
        file = project / path
        lines = file.read_text(encoding="utf-8").split("\n")
        planned = []
        for p in items:
            assert p.expected is not None
            if p.edit == "insert above":
                planned.append((top_position(lines), p))
            elif p.edit in ("insert just above", "move", "delete") and p.kind in (
                "paragraph",
                "admonition",
                "tab",
            ):
                planned.append((block_start(lines, p.expected[0]), p))
            else:
                planned.append((p.expected[0] - 1, p))
        for at, p in sorted(planned, key=lambda x: -x[0]):
            edit(lines, at, p)
        text = "\n".join(lines)
        file.write_text(text, encoding="utf-8")
        written[path] = text
    return written


def edit(lines: list[str], at: int, p: Passage) -> None:
    assert p.expected is not None
    first, last = p.expected[0] - 1, p.expected[1] - 1
    indent = re.match(r"\s*", lines[first]).group()  # type: ignore[union-attr]
    p.new_exact = p.exact
    if p.edit == "insert above":
        lines[at:at] = [TOP_TEXT, ""]
    elif p.edit == "insert just above":
        start = block_start(lines, p.expected[0]) if p.kind not in ("code",) else first
        pad = re.match(r"\s*", lines[start]).group()  # type: ignore[union-attr]
        lines[start:start] = [pad + JUST_ABOVE_TEXT, ""]
    elif p.edit == "reword":
        words = [w for w in re.findall(r"[A-Za-z]{5,}", p.exact)]
        middle = words[len(words) // 3 :] + words[: len(words) // 3]
        for word in middle:
            span = "\n".join(lines[first : last + 1])
            # Not inside `[...]`: a reference link's text is its key, and a changed key breaks
            # the link (the page would then show the brackets the check does not expect).
            in_link = re.search(r"\[[^\]]*\b" + word + r"\b[^\]]*\]", span)
            if span.count(word) == 1 and p.exact.count(word) == 1 and not in_link:
                for n in range(first, last + 1):
                    if word in lines[n]:
                        lines[n] = lines[n].replace(word, NEW_WORD, 1)
                        p.new_exact = p.exact.replace(word, NEW_WORD, 1)
                        return
        p.edit = "none"  # no word to change safely
    elif p.edit in REVISIONS:
        if not revise(lines, first, last, p):
            p.edit = "none"  # not enough words to change safely
    elif p.edit == "reflow":
        line = lines[first]
        words = p.exact.split()
        if len(words) >= 4:
            run = " ".join(words[len(words) // 2 - 1 : len(words) // 2 + 1])
            # A continuation line starting "- " or "1. " is a list of its own: not a reflow.
            starts_block = re.match(r"(?:[-*+>#]|\d+[.)])(?:\s|$)", run.split(" ", 1)[1])
            if line.count(run) == 1 and not starts_block:
                marker = re.match(r"\s*(?:[-*+]|\d+\.)\s+|\s*", line).group()  # type: ignore[union-attr]
                cont = " " * len(marker) if marker.strip() else indent
                a, b = run.split(" ", 1)
                lines[first] = line.replace(run, f"{a}\n{cont}{b}", 1)
                return
        p.edit = "none"
    elif p.edit == "move":
        end = block_end(lines, p.expected[1])
        moved = lines[at : end + 1]
        del lines[at : end + 1]
        if at < len(lines) and not lines[at].strip() and at > 0 and not lines[at - 1].strip():
            del lines[at]
        lines.extend(["", *moved, ""])
    elif p.edit == "delete":
        if p.kind in ("paragraph", "admonition", "tab"):
            end = block_end(lines, p.expected[1])
            del lines[at : end + 1]
        else:
            del lines[first : last + 1]


def revise(lines: list[str], first: int, last: int, p: Passage) -> bool:
    """Replace 2 or 3 words of the quote (or enough for 10-20 % of its characters) by words of
    about their length, each once in the quote and in its lines, outside links; whether done
    (nothing is changed otherwise)."""
    rng = random.Random(p.exact)
    words = list(dict.fromkeys(re.findall(r"\b[A-Za-z]{4,}\b", p.exact)))
    rng.shuffle(words)
    if p.edit == "reword 15 %":
        budget, wanted = int(rng.uniform(0.10, 0.20) * len(p.exact)), len(words)
    else:
        budget, wanted = 0, int(p.edit.split()[1])
    span = "\n".join(lines[first : last + 1])
    chosen: list[tuple[str, str]] = []
    changed = 0
    for word in words:
        if len(chosen) == wanted or (budget and changed >= budget):
            break
        pattern = r"\b" + word + r"\b"
        in_link = re.search(r"\[[^\]]*\b" + word + r"\b[^\]]*\]", span)
        if in_link or len(re.findall(pattern, span)) != 1:
            continue
        if len(re.findall(pattern, p.exact)) != 1:
            continue
        near = [w for w in NEW_WORDS if abs(len(w) - len(word)) <= 1 and w not in span]
        if near:
            new = rng.choice(near)
            chosen.append((pattern, new))
            changed += max(len(word), len(new))
    if len(chosen) < (2 if budget else wanted) or (budget and changed < 0.10 * len(p.exact)):
        return False
    new_exact = p.exact
    for pattern, new in chosen:
        for n in range(first, last + 1):
            if re.search(pattern, lines[n]):
                lines[n] = re.sub(pattern, new, lines[n], count=1)
                break
        new_exact = re.sub(pattern, new, new_exact, count=1)
    p.new_exact = new_exact
    return True


def builds(log: Path) -> int:
    """How many builds `mkdocs serve` has finished, from its log."""
    return log.read_text(errors="replace").count("Documentation built in")


def wait_rebuilt(log: Path, done: int, timeout: float) -> None:
    """Wait for the build the edits started to finish: pages read in the middle of a build may
    be reloaded by livereload under the checks."""
    deadline = time.monotonic() + timeout
    while builds(log) <= done and time.monotonic() < deadline:
        time.sleep(1)
    if builds(log) <= done:
        print("warning: no finished rebuild seen in the server's log", file=sys.stderr)
    time.sleep(2)


def check_after(session: Session, passages: list[Passage], written: dict[str, str]) -> None:
    store = annotate.open(session.project)
    pages: dict[str, list[str]] = {}
    for url in dict.fromkeys(p.url for p in passages if p.id):
        try:
            session.open(url)
            pages[url] = session.highlights()
        except Exception:
            pages[url] = []
    for p in passages:
        if p.id is None or p.created == "misclick":
            continue
        note = store.get_annotation(p.id).to_dict()
        md = (session.project / p.path).read_text(encoding="utf-8", errors="replace")
        source = note["source"]
        state = note["anchorState"]
        p.after = {"state": state, "score": note["anchorScore"]}
        if p.edit == "delete":
            flagged = state != "anchored" and (source is None or source.get("lastKnown") is True)
            lit = " ".join(p.exact.split()) in pages[p.url]
            p.after.update(
                lines="flagged" if flagged else "WRONG", light="none" if not lit else "STILL LIT"
            )
            continue
        loose = (False, False)
        if p.kind == "element":
            line = expected_image(md, p.src)
            expected = (line, line) if line else None
        elif p.kind == "generated":
            line = expected_directive(md, p.object or "")
            expected = (line, line) if line else None
        else:
            found = expected_text_lines(md, p.new_exact or p.exact, p.in_code)
            expected, loose = found if found else (None, (False, False))
        graded = grade(source, p.path, expected, loose)
        if p.kind == "generated" and source and expected and source["lineStart"] == expected[0]:
            graded = "exact"
        if state != "anchored":
            graded = f"{state}"
        p.after["lines"] = graded
        if p.kind in ("element", "generated"):
            p.after["light"] = "-"
        else:
            text = " ".join((p.new_exact or p.exact).split())
            p.after["light"] = "yes" if text in pages[p.url] else "no"


# -- report -------------------------------------------------------------------------------------


def table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(str(x).ljust(w) for x, w in zip(r, widths, strict=True)) + " |"

    return "\n".join(
        [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *map(line, rows)]
    )


def report(passages: list[Passage], site: str, commit: str) -> None:
    print(f"\n## {site} at {commit}\n")
    print(describe())
    header = [
        "page",
        "quote",
        "created",
        "edit",
        "state after",
        "score",
        "lines after",
        "highlight",
    ]
    for kind in KINDS:
        rows = [
            [
                p.url,
                (p.exact[:40] + "…") if len(p.exact) > 40 else p.exact,
                p.created,
                p.edit,
                p.after.get("state", "-"),
                "-" if p.after.get("score") is None else f"{p.after['score']:.0f}",
                p.after.get("lines", "-"),
                p.after.get("light", "-"),
            ]
            for p in passages
            if p.kind == kind
        ]
        print(f"\n### {kind}\n")
        print(
            table(rows, header) if rows else "(no passage of this kind found on the pages visited)"
        )
    failed = [p for p in passages if p.created == "failed"]
    if failed:
        print("\n### could not annotate\n")
        print(
            table(
                [[p.kind, p.url, p.exact[:40], p.failure] for p in failed],
                ["kind", "page", "quote", "why"],
            )
        )
    made = [p for p in passages if p.created != "failed"]
    misclicks = sum(p.created == "misclick" for p in made)
    # A click that noted another element is not graded after the edits either.
    graded = [p for p in made if p.created != "misclick"]
    checked = [p for p in made if p.created not in ("unchecked", "misclick")]
    exact = sum(p.created in ("exact", "right") for p in checked)
    wrong = sum(p.created == "wrong" for p in checked) + sum(
        p.after.get("lines") in ("wrong", "WRONG") for p in graded
    )
    reworded = [p for p in graded if p.edit == "reword"]
    revised = {edit: [p for p in graded if p.edit == edit] for edit in REVISIONS}
    untouched = [p for p in graded if p.edit in ("none", "insert above")]
    moved = [
        p for p in graded if p.edit not in ("delete", "none", "insert above", "reword", *REVISIONS)
    ]
    deleted = [p for p in graded if p.edit == "delete"]

    def right(ps: list[Passage]) -> int:
        return sum(
            p.after.get("lines") in ("exact", "right") and p.after.get("light") in ("yes", "-")
            for p in ps
        )

    print("\n### summary\n")
    print(
        table(
            [
                ["passages annotated / tried", f"{len(made)} / {len(passages)}"],
                ["Alt+clicks that landed on another element (not graded)", str(misclicks)],
                [
                    "overlay's quote was other text (stale page text; sent as selected)",
                    str(sum(p.stale_text for p in made)),
                ],
                ["right file and lines at creation", f"{exact} / {len(checked)}"],
                [
                    "exact lines at creation",
                    f"{sum(p.created == 'exact' for p in checked)} / {len(checked)}",
                ],
                ["no source at creation", str(sum(p.created == "none" for p in checked))],
                ["wrong lines (creation + after edits)", str(wrong)],
                [
                    "one-word edit, 30+ chars: anchored, right lines, lit",
                    f"{right(reworded)} / {len(reworded)}",
                ],
                *(
                    [
                        f"{edit.replace('reword ', '')} reworded, {REVISE_MIN}+ chars: anchored, "
                        "right lines, lit",
                        f"{right(revised[edit])} / {len(revised[edit])}",
                    ]
                    for edit in REVISIONS
                ),
                [
                    "untouched (edits around): anchored, right lines, lit",
                    f"{right(untouched)} / {len(untouched)}",
                ],
                [
                    "insert just above / reflow / move: anchored, right lines, lit",
                    f"{right(moved)} / {len(moved)}",
                ],
                [
                    "deleted: flagged, no other text claimed, not lit",
                    f"{sum(p.after.get('lines') == 'flagged' and p.after.get('light') == 'none' for p in deleted)} / {len(deleted)}",
                ],
            ],
            ["measure", "count"],
        )
    )


# -- Zensical mode (--generator zensical) ----------------------------------------------------------

_MISSING_TEMPLATE = re.compile(r"non-existing template \"(\.icons/[^\"]+)\"")


def zensical_build(zensical: str, work: Path, config: str, timeout: float) -> None:
    """`zensical build` of the copy. A theme icon the site takes from Material's own package
    (Material's docs use their logo as `icon.logo`) is missing from Zensical's theme: it is copied
    from the checkout into the site's `custom_dir`, once, and the build tried again."""
    for attempt in range(2):
        done = subprocess.run(
            [zensical, "build", "--clean", "-f", config],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if done.returncode == 0:
            return
        missing = _MISSING_TEMPLATE.search(done.stderr)
        custom = re.search(r"^\s*custom_dir:\s*(\S+)", (work / config).read_text(), re.M)
        found = []
        if missing:
            name = missing.group(1)
            found = [f for f in work.rglob(Path(name).name) if f.as_posix().endswith(name)]
        if attempt or not (missing and custom and found):
            raise SystemExit(f"zensical build failed:\n{done.stderr[-2000:]}")
        target = work / custom.group(1) / missing.group(1)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found[0], target)
        print(
            f"note: copied {found[0].relative_to(work)} to {target.relative_to(work)}",
            file=sys.stderr,
        )


def zensical_pages(work: Path) -> dict[str, str]:
    """{page URL under `annotate serve site/`: its Markdown file}, for every built page whose
    file the site config finds (annotate/pages.py, what the tool uses without the plugin)."""
    config = annotate.config.site_config(work)
    site = work / config.site_dir
    out: dict[str, str] = {}
    for html in sorted(site.rglob("*.html")):
        relative = html.relative_to(site).as_posix()
        if relative == "404.html":
            continue
        url = "/" + (
            relative.removesuffix("index.html") if relative.endswith("index.html") else relative
        )
        source = annotate.pages.resolve_page(work, url)
        if source is not None:
            out[url] = source
    return out


def run_zensical(args: argparse.Namespace, site: Path, commit: str) -> None:
    """The benchmark with the site built by Zensical and served by `annotate serve`."""
    annotate_bin = str(Path(sys.executable).parent / "annotate")
    with tempfile.TemporaryDirectory(prefix="realsite-") as tmp:
        work = Path(tmp) / "site"
        shutil.copytree(
            site, work, ignore=shutil.ignore_patterns(".git", "node_modules", "site", ".annotate")
        )
        zensical_build(args.zensical, work, args.config, args.timeout)
        site_dir = work / annotate.config.site_config(work).site_dir
        port = free_port()
        log = Path(tmp) / "serve.log"
        server = subprocess.Popen(
            [annotate_bin, "serve", str(site_dir), "--project", str(work), "--port", str(port)],
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=open(log, "w"),  # noqa: SIM115
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_http(base + "/__annotate/health", args.timeout)
            pages = zensical_pages(work)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                context.set_default_timeout(15000)
                session = Session(context.new_page(), base, work)
                passages = collect(session, pages, args.per_kind, args.max_pages)
                plan_edits(passages)
                written = apply_edits(work, passages)
                zensical_build(args.zensical, work, args.config, args.timeout)
                check_after(session, passages, written)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
        report(passages, f"{site.name} (built by Zensical)", commit)
        if args.json:
            args.json.write_text(
                json.dumps([p.__dict__ for p in passages], indent=1, default=str), encoding="utf-8"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="a checkout of a public MkDocs site")
    parser.add_argument("--config", default="mkdocs.yml", help="its config, relative to SITE")
    parser.add_argument("--mkdocs", default="mkdocs", help="the mkdocs executable to serve with")
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--max-pages", type=int, default=80)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for a build")
    parser.add_argument("--json", type=Path, help="also write the passages here")
    parser.add_argument(
        "--generator",
        choices=("mkdocs", "zensical"),
        default="mkdocs",
        help="build with `mkdocs serve` and the plugin (default) or `zensical build`",
    )
    parser.add_argument("--zensical", default="zensical", help="the zensical executable")
    parser.add_argument("--commit", help="the site's commit, where SITE is no git checkout")
    args = parser.parse_args()
    site = args.site.resolve()
    commit = (
        args.commit
        or subprocess.run(
            ["git", "-C", str(site), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        or "unknown commit"
    )
    if args.generator == "zensical":
        run_zensical(args, site, commit)
        return
    with tempfile.TemporaryDirectory(prefix="realsite-") as tmp:
        work = Path(tmp) / "site"
        config = copy_site(site, work, args.config)
        port = free_port()
        log = Path(tmp) / "serve.log"
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "DISABLE_MKDOCS_2_WARNING": "true"}
        server = subprocess.Popen(
            [args.mkdocs, "serve", "-f", str(config), "-a", f"127.0.0.1:{port}"],
            cwd=work,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=open(log, "w"),  # noqa: SIM115
        )
        base = f"http://127.0.0.1:{port}"
        try:
            wait_http(base + "/__annotate/health", args.timeout)
            wait_http(base + "/", args.timeout)
            with annotate.open(work) as store:
                pages = dict(store.conn.execute("SELECT page_url, src_path FROM pages").fetchall())
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                context = browser.new_context(viewport={"width": 1280, "height": 900})
                context.set_default_timeout(15000)
                session = Session(context.new_page(), base, work)
                passages = collect(session, pages, args.per_kind, args.max_pages)
                plan_edits(passages)
                done = builds(log)
                written = apply_edits(work, passages)
                wait_rebuilt(log, done, args.timeout)
                check_after(session, passages, written)
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)
        report(passages, site.name, commit)
        if args.json:
            args.json.write_text(
                json.dumps([p.__dict__ for p in passages], indent=1, default=str), encoding="utf-8"
            )


if __name__ == "__main__":
    main()
