"""Serving a built site with the overlay injected, and the overlay's own files.

`annotate serve DIR` works for any static site (MkDocs `site/`, Sphinx, Hugo…): every HTML answer
gets, before its last `</body>`, the overlay's configuration (token, API base) as a JSON data block
and the overlay's `<script>` and stylesheet. The MkDocs plugin reuses `overlay_snippet` and `inject`.
The overlay's script is joined here from its sources (`overlay/src/`), minified and gzipped: users
run no build step.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import mimetypes
import re
from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import rjsmin
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from .responses import NOT_FOUND, error_response

__all__ = [
    "CONFIG_ID",
    "FRAME_HEADERS",
    "OVERLAY_CHUNKS",
    "OVERLAY_SOURCES",
    "OVERLAY_URL",
    "OverlayAsset",
    "SiteFiles",
    "chunk_function",
    "chunk_preamble",
    "find_overlay_dir",
    "inject",
    "inline_chunks",
    "join_chunk",
    "join_overlay",
    "minify_css",
    "overlay_asset",
    "overlay_snippet",
    "safe_file",
]

OVERLAY_URL = "/__annotate/overlay/"
API_URL = "/__annotate/api/"
CONFIG_ID = "annotate-config"
_CONFIG_BLOCK = re.compile(
    rb'<script type="application/json" id="annotate-config">(.*?)</script>', re.S
)
HTML_SUFFIXES = (".html", ".htm")
# Every page carrying the overlay: no other site may frame it, or it could overlay its own bait on
# Accept, Delete or Send to agent (clickjacking, issue #17). 'self', not 'none': a page of the same
# site may frame another (an embedded example), and it already holds the token. X-Frame-Options is
# for browsers without CSP level 2; where both are present, frame-ancestors wins.
FRAME_HEADERS = {
    "Content-Security-Policy": "frame-ancestors 'self'",
    "X-Frame-Options": "SAMEORIGIN",
}
NOT_FOUND_HTML = (
    b"<!doctype html>\n<html><head><meta charset=utf-8><title>404 Not found</title></head>"
    b"<body><h1>404 Not found</h1></body></html>\n"
)
mimetypes.add_type("text/javascript", ".js")
mimetypes.add_type("text/javascript", ".mjs")
mimetypes.add_type("text/css", ".css")


def find_overlay_dir() -> Path | None:
    """`annotate/overlay/` inside an installed wheel, else the repository's `overlay/`."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "overlay", package.parent / "overlay"):
        if candidate.is_dir():
            return candidate
    return None


def _script_json(data: object) -> str:
    # Inside <script> only `</` (and `<!--`) can end the element; escape every `<`, `>` and `&`
    # (and the JS line separators) so no string can close the tag, whatever it holds.
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def overlay_snippet(
    token: str,
    *,
    read_only: bool = False,
    api_base: str = API_URL,
    version: str = "",
    content_selector: str | None = None,
    author: str | None = None,
    pinned: bool = False,
    person: Mapping[str, str] | None = None,
) -> str:
    """The tags the overlay needs: its configuration, its stylesheet and its script.

    The configuration is a JSON data block (`<script type="application/json" id="annotate-config">`,
    read with `JSON.parse`), not inline code, so it also works on sites whose Content-Security-Policy
    forbids inline scripts. `pinned`: the overlay files' URLs carry their content hash (`?v=…`),
    which `OverlayFiles` answers with a year-long immutable cache, so a warm page load asks the
    server nothing for them (`annotate proxy`, benchmarks/proxy.py). `person`: team mode's
    signed-in person (`{name, role}`, docs/team.md), whose cookie replaces the token.
    """
    config = {
        "token": token,
        "api": api_base,
        "readOnly": read_only,
        "version": version,
        "tokenHeader": "X-Annotate-Token",
    }
    # Set by the MkDocs plugin's options `content_selector` and `author` (issue #6).
    if content_selector:
        config["contentSelector"] = content_selector
    if author:
        config["author"] = author
    if person:
        config["person"] = dict(person)
    css, js = f"{OVERLAY_URL}annotate.css", f"{OVERLAY_URL}annotate.js"
    if pinned:
        css, js = _pinned(css), _pinned(js)
    return (
        f'<script type="application/json" id="{CONFIG_ID}">{_script_json(config)}</script>\n'
        f'<link rel="stylesheet" href="{css}">\n'
        f'<script src="{js}" defer></script>\n'
    )


def _pinned(url: str) -> str:
    """`url` with `?v=` and the served file's content hash (its ETag), when the file exists."""
    root = find_overlay_dir()
    asset = overlay_asset(root, url.removeprefix(OVERLAY_URL)) if root else None
    return url if asset is None else f"{url}?v={asset.etag.strip(chr(34))}"


def inject(html: bytes, snippet: str) -> bytes:
    """`html` with `snippet` before its last `</body>` (any case), or at the end when it has none.

    A page that already carries the overlay (built with the MkDocs plugin's `build: true`, which
    leaves the token out of the files) keeps its tags: only its configuration block is updated with
    the snippet's settings, the token among them.
    """
    tags = snippet.encode("ascii")
    built, fresh = _CONFIG_BLOCK.search(html), _CONFIG_BLOCK.search(tags)
    if built and fresh:
        try:
            old, new = json.loads(built[1]), json.loads(fresh[1])
        except ValueError:
            old = new = None
        if isinstance(old, dict) and isinstance(new, dict):
            config = {**old, **new}
            block = (
                f'<script type="application/json" id="{CONFIG_ID}">{_script_json(config)}</script>'
            )
            return html[: built.start()] + block.encode("ascii") + html[built.end() :]
    at = html.lower().rfind(b"</body")
    if at < 0:
        return html + tags
    return html[:at] + tags + html[at:]


def safe_file(root: Path, relative: str) -> Path | None:
    """`root / relative` when it is a plain path inside `root` (symlinks resolved), else None.

    Dot-files and dot-folders are never served: a project folder served by mistake must not hand
    out `.annotate/token` or `.git`.
    """
    if "\x00" in relative or "\\" in relative:
        return None
    parts = [p for p in relative.split("/") if p]
    if any(p.startswith(".") for p in parts):
        return None
    try:
        full = root.joinpath(*parts).resolve()
    except (OSError, ValueError):
        return None
    if full != root and root not in full.parents:
        return None
    return full


class SiteFiles:
    """The files of a built site, HTML answers with the overlay injected."""

    def __init__(
        self, root: Path, snippet: Callable[[Request], str], *, hidden: Iterable[Path] = ()
    ) -> None:
        """`snippet(request)`: the overlay's tags for the page this request asks for."""
        self.root = root.resolve()
        self.snippet = snippet
        # Folders never served even if inside the site (the store's folder).
        self.hidden = [h.resolve() for h in hidden]

    def _visible(self, path: Path) -> bool:
        return not any(path == h or h in path.parents for h in self.hidden)

    async def handle(self, request: Request) -> Response:
        path = request.url.path
        if path == "/__annotate" or path.startswith("/__annotate/"):
            # Our own namespace: an unknown route there is an API error, not a site page.
            return error_response(404, NOT_FOUND, f"No route {path}")
        full = safe_file(self.root, path)
        if full is not None and self._visible(full) and full.is_dir():
            if not path.endswith("/"):
                # Relative links in an index page only work from the folder's URL.
                target = path + "/"
                if request.url.query:
                    target += "?" + request.url.query
                return RedirectResponse(target, status_code=301)
            full = full / "index.html"
        if full is None or not self._visible(full) or not full.is_file():
            return self.not_found(request)
        return self.file(full, request)

    def file(self, full: Path, request: Request, status: int = 200) -> Response:
        if full.suffix.lower() in HTML_SUFFIXES:
            return self.html(full.read_bytes(), request, status)
        media_type = mimetypes.guess_type(full.name)[0] or "application/octet-stream"
        return FileResponse(
            full,
            status_code=status,
            media_type=media_type,
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    def html(self, content: bytes, request: Request, status: int = 200) -> Response:
        # no-store: the page holds the token, and a rebuilt page must not come from a cache.
        return Response(
            inject(content, self.snippet(request)),
            status_code=status,
            media_type="text/html",
            headers={
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                **FRAME_HEADERS,
            },
        )

    def not_found(self, request: Request) -> Response:
        page = self.root / "404.html"
        if page.is_file():
            return self.html(page.read_bytes(), request, 404)
        return self.html(NOT_FOUND_HTML, request, 404)


class OverlayAsset(NamedTuple):
    """One overlay file as served: minified, gzipped, and its ETag."""

    body: bytes
    gzipped: bytes
    etag: str
    media_type: str


# The overlay's script, in the order it is joined: each file is one concern, and a file only uses
# at load time what an earlier one defines (functions are hoisted; `const`s are not). The shadow
# root's stylesheet comes first, as the string SHADOW_CSS.
OVERLAY_SOURCES = (
    "base.js",
    "api.js",
    "text.js",
    "elements.js",
    "state.js",
    "shell.js",
    "chunks.js",
    "highlights.js",
    "popup.js",
    "feed.js",
    "start.js",
)
# What a page loads only when first used (issue #31: the first load stays within its budget):
# `NAME.js`, joined from these sources (`vendor/` files are third-party builds, each kept in a
# scope of its own). A chunk is a function of the first load's names (`chunks.js` fetches it
# through the same route and passes them), and hands back its names the first load refers to.
OVERLAY_CHUNKS: dict[str, tuple[str, ...]] = {
    # since.js first: the panel, built at load, places its section.
    "panel": ("since.js", "gate.js", "panel.js"),
    # snapdom (MIT, its license beside it): chosen by size and fidelity, docs/overlay.md.
    "capture": ("vendor/snapdom.js", "capture.js"),
}
SHADOW_CSS = "shadow.css"


def overlay_asset(overlay: Path, name: str) -> OverlayAsset | None:
    """The overlay file `name` (`annotate.js` or `annotate.css`) as served, None for another name.

    Made again when one of its sources changes (their paths, times and sizes are the cache key).
    """
    if name == "annotate.js":
        # Every chunk's sources too: the first load names each chunk's version and its names.
        # (An overlay folder without them, e.g. a reduced one in a test, has no chunks.)
        chunked = [n for c in _present(overlay / "src") for n in OVERLAY_CHUNKS[c]]
        paths = [overlay / "src" / n for n in (SHADOW_CSS, *OVERLAY_SOURCES, *chunked)]
    elif name.endswith(".js") and name[:-3] in OVERLAY_CHUNKS:
        # The first load's sources too: which of their names the chunk gets depends on them.
        paths = [overlay / "src" / n for n in (*OVERLAY_SOURCES, *OVERLAY_CHUNKS[name[:-3]])]
    elif name == "annotate.css":
        paths = [overlay / name]
    else:
        return None
    try:
        stats = [p.stat() for p in paths]
    except OSError:
        return None
    return _asset(
        name, tuple((p, s.st_mtime_ns, s.st_size) for p, s in zip(paths, stats, strict=True))
    )


def join_overlay(paths: Iterable[Path]) -> str:
    """The overlay's first load: the shadow stylesheet and the sources in one closure (an IIFE),
    so nothing it declares reaches the page's globals; first in it, what its chunks need."""
    css, *scripts = paths
    src = css.parent
    versions = {name: _etag(join_chunk(name, src)) for name in _present(src)}
    parts = [
        f"const SHADOW_CSS = {json.dumps(minify_css(css.read_text('utf-8')))};",
        *(chunk_preamble(src, json.dumps(versions)) if versions else ()),
        *(p.read_text("utf-8") for p in scripts if p.name in OVERLAY_SOURCES),
    ]
    return '(() => {\n"use strict";\n' + "\n".join(parts) + "\n})();\n"


def _present(src: Path) -> list[str]:
    """The chunks whose every source is in `src`."""
    return [n for n, files in OVERLAY_CHUNKS.items() if all((src / f).is_file() for f in files)]


def chunk_preamble(src: Path, chunks: str) -> list[str]:
    """What `chunks.js` needs, before any source runs (a page restored with its panel open loads
    it at once): `CHUNKS` (`chunks`: each chunk's version, or, in the chat view, which makes no
    request, each chunk's function) and `chunkScope()`, the first load's names the chunks use."""
    core = _core(src)
    used: set[str] = set()
    for files in OVERLAY_CHUNKS.values():
        own = _own_code([src / n for n in files])
        used |= (_top_level(core, lets=False) & _names(own)) - _top_level(own)
    return [
        f"const CHUNKS = {chunks};",
        f"const chunkScope = () => ({{{','.join(sorted(used))}}});",
    ]


def inline_chunks(src: Path) -> str:
    """The chunks as functions, by name (a JS object): `CHUNKS` for the chat view. Not those with
    a third-party build (the screenshot's): the view stays small, and offers no screenshots."""
    names = [n for n, files in OVERLAY_CHUNKS.items() if not any("/" in f for f in files)]
    return "{" + ",".join(f"{json.dumps(n)}: {chunk_function(n, src)}" for n in names) + "}"


_DECLARED = re.compile(r"^(?:async\s+)?(?:function\*?|const|let|class)\s+(\w+)", re.M)
_LET = re.compile(r"^let\s+(\w+)", re.M)
# A word not after a `.` (a property), but after `...` (a spread) it is a name.
_WORD = re.compile(r"(?<![\w$])(?:(?<=\.\.\.)|(?<!\.))[A-Za-z_$][\w$]*")


def _core(src: Path) -> str:
    return "\n".join((src / n).read_text("utf-8") for n in OVERLAY_SOURCES)


def _top_level(code: str, *, lets: bool = True) -> set[str]:
    """The names `code` declares at its top level (our sources start those lines at column 0).
    `lets=False`: without the `let`s, which a chunk cannot share (it would keep their value)."""
    names = set(_DECLARED.findall(code))
    return names if lets else names - set(_LET.findall(code))


def _names(code: str) -> set[str]:
    # Every word that is not a property: a superset of the names used is enough (only those
    # the other side declares are passed).
    return set(_WORD.findall(code))


def _own_code(paths: Iterable[Path]) -> str:
    """A chunk's own sources (third-party `vendor/` files left out: they share no names)."""
    return "\n".join(p.read_text("utf-8") for p in paths if p.parent.name != "vendor")


def _vendored(path: Path) -> str:
    """A third-party build in a scope of its own, as `vendor_NAME` (its file name, `-` and `.`
    as `_`): a UMD build takes its CommonJS branch; one that sets `window.NAME` (its file name)
    has that global taken back at once. Its license (`NAME.LICENSE` beside it) goes first, as a
    comment the minifier keeps."""
    name = re.sub(r"\W", "_", path.stem)
    license_file = path.with_suffix(".LICENSE")
    notice = ""
    if license_file.is_file():
        text = license_file.read_text("utf-8").replace("*/", "* /")
        notice = f"/*! {path.name} (vendored): {text.strip()} */\n"
    return (
        f"{notice}const vendor_{name} = (() => {{ const module = {{ exports: {{}} }}, "
        f"exports = module.exports;\n{path.read_text('utf-8')}\n;"
        f"const set = window[{json.dumps(path.stem)}]; delete window[{json.dumps(path.stem)}];"
        f" return set || module.exports; }})();"
    )


def chunk_function(name: str, src: Path) -> str:
    """The chunk `name` as a function of the first load's names it uses (`$`), returning its own
    top-level names (a `let` as a getter, so that its current value is read)."""
    own_paths = [src / n for n in OVERLAY_CHUNKS[name]]
    core, own = _core(src), _own_code(own_paths)
    mine = _top_level(own)
    needed = sorted((_top_level(core, lets=False) & _names(own)) - mine)
    lets = set(_LET.findall(own))
    wanted = sorted(mine)  # all: the first load and other chunks call them as `chunk(…).then`
    out = ",".join(f"get {n}() {{ return {n}; }}" if n in lets else n for n in wanted)
    body = [_vendored(p) if p.parent.name == "vendor" else p.read_text("utf-8") for p in own_paths]
    return (
        f'function ($) {{\n"use strict";\nconst {{ {", ".join(needed)} }} = $;\n'
        + "\n".join(body)
        + f"\nreturn {{ {out} }};\n}}"
    )


def join_chunk(name: str, src: Path) -> str:
    """The chunk `name` as served: a call to the first load's `annotateOverlay.chunk`."""
    return f"annotateOverlay.chunk({json.dumps(name)}, {chunk_function(name, src)});\n"


def _etag(text: str) -> str:
    return hashlib.sha256(rjsmin.jsmin(text, keep_bang_comments=True).encode()).hexdigest()[:32]


_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_CSS_SPACE = re.compile(r"\s*([{};,>~/])\s*|\s+")
_CSS_QUOTED = re.compile(r'\[([-\w]+)="([-\w]+)"\]')


def minify_css(text: str) -> str:
    """`text` without comments and without the spaces CSS does not need (our own stylesheets:
    no strings or `url()` holding these characters; `+` and `-` keep their spaces, which `calc()`
    needs)."""
    text = _CSS_COMMENT.sub("", text)
    text = _CSS_SPACE.sub(lambda m: m[1] or " ", text)
    text = re.sub(r"([{;]\s*[-\w]+):\s+", r"\1:", text)
    text = _CSS_QUOTED.sub(r"[\1=\2]", text)  # [role="tab"]: a name needs no quotes
    return text.replace(";}", "}").replace(" !important", "!important").strip()


@lru_cache(maxsize=8)
def _asset(name: str, key: tuple[tuple[Path, int, int], ...]) -> OverlayAsset:
    paths = [p for p, _, _ in key]
    media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
    if media_type == "text/javascript":
        # Comments and indentation are a fifth of the gzipped size (benchmarks/overlay.py).
        joined = (
            join_overlay(paths) if name == "annotate.js" else join_chunk(name[:-3], paths[0].parent)
        )
        text = rjsmin.jsmin(joined, keep_bang_comments=True)
    else:
        text = minify_css(paths[0].read_text("utf-8"))
    body = text.encode("utf-8")
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'  # as _etag: CHUNKS pins chunks by it
    return OverlayAsset(body, gzip.compress(body, 9, mtime=0), etag, media_type)


def _accepts_gzip(header: str) -> bool:
    for part in header.split(","):
        name, _, params = part.partition(";")
        if name.strip().lower() in ("gzip", "*"):
            q = params.strip().removeprefix("q=").strip()
            return q == "" or (q.replace(".", "", 1).isdigit() and float(q) > 0)
    return False


class OverlayFiles:
    """The overlay's JavaScript and CSS under `/__annotate/overlay/`: minified, gzipped when the
    browser accepts it, and revalidated on every page load by ETag (a new version is picked up
    at once, an unchanged one costs a 304)."""

    def __init__(self, root: Path | None) -> None:
        self.root = root.resolve() if root else None

    async def handle(self, request: Request) -> Response:
        name = request.path_params.get("path", "")
        asset = overlay_asset(self.root, name) if self.root else None
        if asset is None:
            return error_response(404, NOT_FOUND, f"No overlay file {name!r}")
        # A URL naming this very content (`overlay_snippet(pinned=True)`) never changes: cached
        # for good. Any other is revalidated on every page load, so a new version shows at once.
        pinned = request.query_params.get("v") == asset.etag.strip('"')
        headers = {
            "Cache-Control": "public, max-age=31536000, immutable" if pinned else "no-cache",
            "ETag": asset.etag,
            "Vary": "Accept-Encoding",
            "X-Content-Type-Options": "nosniff",
        }
        if asset.etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        body = asset.body
        if _accepts_gzip(request.headers.get("accept-encoding", "")):
            body, headers["Content-Encoding"] = asset.gzipped, "gzip"
        return Response(body, media_type=asset.media_type, headers=headers)
