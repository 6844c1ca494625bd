"""The page a review in the agent's chat shows, and what the agent is told about it (docs/chat.md).

The chat view (an MCP App, `annotate/chatview.py`) shows a page as its readers see it, so that a
note made there quotes the same page text as one made in the browser overlay: the page as a
running review server serves it (`mkdocs serve` with the plugin, `annotate serve`), else the
built page in the site folder, else the page's Markdown rendered here. Only the page's content
root travels (Material's `article.md-content__inner`, else `main`, `[role=main]`, `body`, the
overlay's order in overlay/src/base.js), without scripts.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from typing import Any

from . import documents
from .agents import mode_instructions
from .config import site_config
from .errors import ValidationError
from .store import Store

__all__ = [
    "MAX_PAGE_BYTES",
    "ChatPage",
    "Opening",
    "content_root",
    "find_server",
    "open_review",
    "page_view",
    "review_message",
]

# A page larger than this is not sent into the chat (a real page is tens of kilobytes).
MAX_PAGE_BYTES = 5 * 1024 * 1024
# How long a review server gets to answer: the dev server answers its health route at once.
PROBE_S = 0.5
DEFAULT_DEV_ADDR = "127.0.0.1:8000"
LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
_SCRIPT = re.compile(r"<script\b.*?</script\s*>", re.I | re.S)
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.I | re.S)
_H1 = re.compile(r"<h1\b[^>]*>(.*?)</h1\s*>", re.I | re.S)
_FRONT_MATTER = re.compile(r"\A---\s*\n.*?\n(---|\.\.\.)\s*\n", re.S)
# The Markdown extensions of a page rendered here: what Python-Markdown itself ships and MkDocs
# sites use most.
MARKDOWN_EXTENSIONS = ("extra", "admonition", "sane_lists", "toc")


@dataclass(frozen=True)
class ChatPage:
    """One page as the chat view shows it."""

    page_url: str
    path: str | None  # the Markdown file, relative to the project
    title: str
    html: str  # the page's content root (outer HTML), without scripts
    origin: str  # "served", "built" or "markdown"
    url: str | None  # the page on a running review server

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        return {"pageUrl": data.pop("page_url"), **data}


@dataclass(frozen=True)
class Opening:
    """What `open_review` answers: the page, its notes still to do, the server's URL."""

    page_url: str
    path: str | None
    open_here: int  # notes of this page open or in progress
    open_total: int  # the same on the whole site
    url: str | None  # the page with the overlay, when a review server runs

    def to_dict(self) -> dict[str, Any]:
        return {
            "pageUrl": self.page_url,
            "path": self.path,
            "openHere": self.open_here,
            "openTotal": self.open_total,
            "url": self.url,
        }

    def text(self, *, view: bool) -> str:
        """The model's text: short when the host shows the view, the way to the page otherwise."""
        where = f"{self.page_url}" + (f" ({self.path})" if self.path else "")
        counts = (
            f"{_notes(self.open_here)} open on this page, {_notes(self.open_total)} on the site"
        )
        if view:
            return (
                f"Showing {where} in the review view: {counts}. The reviewer selects text there "
                "and leaves notes; Send to agent posts a message naming the review to work, "
                "Ask agent now one note."
            )
        if self.url:
            return (
                f"Review {where} in the browser, with the review overlay: {self.url}\n{counts}. "
                "Notes left there reach you through wait_for_review or list_annotations."
            )
        return (
            f"No review server runs for this project, and this client shows no MCP App view. "
            f"Start one (`mkdocs serve` with the annotate plugin, or `annotate serve SITE_DIR`) "
            f"and open {where} there. {counts[0].upper()}{counts[1:]}."
        )


def _notes(n: int) -> str:
    return f"{n} note{'' if n == 1 else 's'}"


# -- where the page comes from -----------------------------------------------------------------


def _dev_addr(project: Path) -> str:
    """The dev server's address from the site config (`dev_addr`), on a loopback name."""
    addr = site_config(project).dev_addr or DEFAULT_DEV_ADDR
    host, _, port = addr.rpartition(":")
    if host in ("0.0.0.0", "", "::", "[::]"):  # listening everywhere: loopback reaches it
        host = "127.0.0.1"
    if host not in LOOPBACK or not port.isdigit():
        return DEFAULT_DEV_ADDR  # never a request to another machine
    return f"{host}:{port}"


def find_server(project: str | Path) -> str | None:
    """The base URL (`http://127.0.0.1:8000`) of the review server running for `project` at its
    config's `dev_addr`, or None: the address must answer `/__annotate/health` as ours does."""
    base = f"http://{_dev_addr(Path(project))}"
    try:
        with urllib.request.urlopen(base + "/__annotate/health", timeout=PROBE_S) as answer:
            data = json.loads(answer.read(4096))
    except (OSError, ValueError, urllib.error.URLError):
        return None
    return base if isinstance(data, dict) and data.get("ok") is True else None


def _served(base: str, page_url: str) -> str | None:
    try:
        with urllib.request.urlopen(base + page_url, timeout=5) as answer:
            if "html" not in answer.headers.get("content-type", ""):
                return None
            return str(answer.read(MAX_PAGE_BYTES + 1).decode("utf-8", "replace"))
    except (OSError, urllib.error.URLError):
        return None


def _built(project: Path, page_url: str) -> str | None:
    config = site_config(project)
    site = (project / config.site_dir).resolve()
    path = page_url.split("?", 1)[0].split("#", 1)[0]
    base = config.site_path
    if base != "/" and (path + "/").startswith(base):
        path = "/" + path[len(base) :]
    relative = path.strip("/")
    names = [relative] if relative.endswith((".html", ".htm")) else []
    names += [f"{relative}/index.html".lstrip("/"), f"{relative}.html"]
    for name in names:
        full = (site / name).resolve()
        if full.is_relative_to(site) and full.is_file():
            return full.read_bytes()[: MAX_PAGE_BYTES + 1].decode("utf-8", "replace")
    return None


def _rendered(project: Path, path: str | None) -> str:
    import markdown  # type: ignore[import-untyped]  # MkDocs' renderer, a dependency of MkDocs

    text = ""
    if path is not None:
        try:
            text = (project / path).read_text("utf-8", errors="replace")
        except OSError:
            text = ""
    text = _FRONT_MATTER.sub("", text)
    body: str = markdown.markdown(text, extensions=list(MARKDOWN_EXTENSIONS))
    return f'<article class="md-content__inner md-typeset">\n{body}\n</article>'


class _Root(HTMLParser):
    """Finds where the first element matching `wanted(tag, attrs)` starts and ends."""

    def __init__(self, wanted: Any) -> None:
        super().__init__(convert_charrefs=False)
        self.wanted = wanted
        self.tag: str | None = None
        self.depth = 0
        self.start: tuple[int, int] | None = None
        self.end: tuple[int, int] | None = None
        self.end_text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.end is not None:
            return
        if self.tag is None:
            if self.wanted(tag, dict(attrs)):
                self.tag, self.depth, self.start = tag, 1, self.getpos()
        elif tag == self.tag:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.tag == tag and self.end is None:
            self.depth -= 1
            if self.depth == 0:
                self.end = self.getpos()
                self.end_text = f"</{tag}>"


def _offset(lines: list[int], pos: tuple[int, int]) -> int:
    return lines[pos[0] - 1] + pos[1]


ROOTS = (
    lambda t, a: t == "article" and "md-content__inner" in (a.get("class") or "").split(),
    lambda t, a: t == "main",
    lambda t, a: a.get("role") == "main",
    lambda t, a: t == "body",
)


def content_root(html: str) -> str:
    """The outer HTML of the page's content root (the overlay's order of roots), scripts
    removed; the whole document's body when none is found."""
    html = _SCRIPT.sub("", html)
    starts = [0]
    for line in html.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for wanted in ROOTS:
        finder = _Root(wanted)
        finder.feed(html)
        finder.close()
        if finder.start is None:
            continue
        begin = _offset(starts, finder.start)
        end = _offset(starts, finder.end) + len(finder.end_text) if finder.end else len(html)
        found = html[begin:end]
        if finder.tag == "body":  # the body's content, in a main element of ours
            found = "<main>" + found[found.index(">") + 1 :].removesuffix("</body>") + "</main>"
        return found
    return f"<main>{html}</main>"


def _title(html: str, page_url: str) -> str:
    """The page's `<title>`, else its first heading, else its URL."""
    found = _TITLE.search(html) or _H1.search(html)
    title = re.sub(r"\s+", " ", re.sub(r"<[^>]*>", "", found[1])).strip() if found else ""
    return title or page_url


def _page_url(store: Store, page_url: str | None, path: str | None) -> str:
    if page_url is not None:
        return store.page_url(page_url)
    if path is None:
        return store.page_url("/")
    config = site_config(store.project_dir)
    docs = PurePosixPath(config.docs_dir)
    relative = PurePosixPath(path.replace("\\", "/").removeprefix("./"))
    if relative.suffix in (".md", ".markdown") and docs not in relative.parents:
        # Issue #29: any other Markdown file of the project (refused outside it, through a
        # symlink out, not UTF-8, too big), its notes on a page of its own.
        doc = documents.read_document(store.project_dir, path, base=store.project_dir)
        if not doc.site_page:
            store.register_pages({doc.page_url: doc.path})
        return doc.page_url
    if relative.suffix != ".md" or docs not in relative.parents:
        raise ValidationError(
            f"path must be a Markdown file in the docs folder ({docs}/…​.md), got {path!r}; any "
            "other Markdown file is reviewed with request_review or `annotate open FILE`",
            "path",
        )
    parts = relative.relative_to(docs).with_suffix("").parts
    if parts[-1] in ("index", "README"):
        url = "/" + "/".join(parts[:-1]) + ("/" if len(parts) > 1 else "")
    elif config.use_directory_urls:
        url = "/" + "/".join(parts) + "/"
    else:
        url = "/" + "/".join(parts) + ".html"
    return store.page_url(url)


def _no_page(url: str) -> ValidationError:
    return ValidationError(
        f"No page {url} in this project: no Markdown file in the docs folder builds it, and "
        "no built or served page has it",
        "pageUrl",
    )


def page_view(store: Store, page_url: str | None = None, path: str | None = None) -> ChatPage:
    """The page (`page_url`, or the page of the Markdown file `path`; the home page by default)
    as the chat view shows it: served, else built, else rendered from its Markdown."""
    url = _page_url(store, page_url, path)
    project = store.project_dir
    source = store.page_file(url)
    server = find_server(project)
    html, origin = None, "markdown"
    if server is not None and not url.startswith(documents.FILES_PREFIX):
        html, origin = _served(server, url), "served"
    if html is None:
        html, origin = _built(project, url), "built"
    if html is None:
        if source is None:
            raise _no_page(url)
        if url.startswith(documents.FILES_PREFIX):
            # Any Markdown file (issue #29): rendered with raw HTML off, as `annotate open` does.
            text = documents.read_document(project, source, base=project).text
            html = f"<main>{documents.render(text)}</main>"
        else:
            html = _rendered(project, source)
        origin = "markdown"
    if len(html) > MAX_PAGE_BYTES:
        raise ValidationError(
            f"The page {url} is larger than {MAX_PAGE_BYTES // 1024 // 1024} MB", "pageUrl"
        )
    title = _title(html, url)
    return ChatPage(
        url,
        source,
        title,
        content_root(html),
        origin,
        server + url if server and not url.startswith(documents.FILES_PREFIX) else None,
    )


def open_review(store: Store, page_url: str | None = None, path: str | None = None) -> Opening:
    """What the agent's `open_review` answers: the page, how many notes are still to do on it
    and on the site, and its URL on a running review server."""
    url = _page_url(store, page_url, path)
    here = store.list_annotations(url, ["open", "in_progress"])
    notes = store.list_page_notes(url, ["open", "in_progress"])
    total = store.summary().open_items
    server = find_server(store.project_dir)
    source = store.page_file(url)
    if source is None and server is None and _built(store.project_dir, url) is None:
        raise _no_page(url)
    # A file outside the docs (issue #29) is no page of the site the server serves.
    served = server is not None and not url.startswith(documents.FILES_PREFIX)
    return Opening(
        url,
        source,
        len(here) + len(notes),
        total,
        server + url if served and server else None,
    )


def _lines(note: dict[str, Any]) -> str:
    src = note.get("source") or {}
    if not src.get("path"):
        return ""
    start, end = src.get("lineStart"), src.get("lineEnd")
    if start is None:
        return f" ({src['path']})"
    return f" ({src['path']}:{start}" + (f"-{end})" if end and end != start else ")")


def review_message(review: dict[str, Any], *, ask: bool = False) -> str:
    """The message the chat view posts into the conversation when the reviewer sends `review`
    (as the API answers it): Send to agent (a batch), or with `ask` Ask agent now (one note)."""
    notes = [*review.get("annotations", []), *review.get("pageNotes", [])]
    if ask and len(notes) == 1:
        note = notes[0]
        quote = " ".join((note.get("selectedText") or "").split())
        return (
            f"The reviewer asks you about one note now: {note['id']} on {note['pageUrl']}"
            f"{_lines(note)}" + (f', on "{short(quote, 200)}"' if quote else "") + f': "'
            f'{short(note.get("note") or "", 2000)}". Review {review["id"]}, mode `review`: '
            f"{mode_instructions('review')} Read it with get_context {note['id']}."
        )
    message = review.get("message") or ""
    return (
        f"The reviewer sent review {review['id']} from the review view: {_notes(len(notes))}, "
        f"mode `{review['mode']}`"
        + (f', message "{short(message, 500)}"' if message else "")
        + f". {mode_instructions(review['mode'])} Take it with wait_for_review (it returns at "
        "once with this review), then work each note."
    )


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
