"""Serving a built site with the overlay injected, and the overlay's own files.

`annotate serve DIR` works for any static site (MkDocs `site/`, Sphinx, Hugo…): every HTML answer
gets, before its last `</body>`, the overlay's configuration (token, API base) as a JSON data block
and the overlay's `<script>` and stylesheet. The MkDocs plugin reuses `overlay_snippet` and `inject`.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import mimetypes
import re
from collections.abc import Callable, Iterable
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
    "OVERLAY_URL",
    "OverlayAsset",
    "SiteFiles",
    "find_overlay_dir",
    "inject",
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
) -> str:
    """The tags the overlay needs: its configuration, its stylesheet and its script.

    The configuration is a JSON data block (`<script type="application/json" id="annotate-config">`,
    read with `JSON.parse`), not inline code, so it also works on sites whose Content-Security-Policy
    forbids inline scripts. `pinned`: the overlay files' URLs carry their content hash (`?v=…`),
    which `OverlayFiles` answers with a year-long immutable cache, so a warm page load asks the
    server nothing for them (`annotate proxy`, benchmarks/proxy.py).
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
    full = safe_file(root, url.removeprefix(OVERLAY_URL)) if root else None
    if full is None or not full.is_file():
        return url
    return f"{url}?v={overlay_asset(full).etag.strip(chr(34))}"


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
        self, root: Path, snippet: Callable[[], str], *, hidden: Iterable[Path] = ()
    ) -> None:
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
            return self.not_found()
        return self.file(full)

    def file(self, full: Path, status: int = 200) -> Response:
        if full.suffix.lower() in HTML_SUFFIXES:
            return self.html(full.read_bytes(), status)
        media_type = mimetypes.guess_type(full.name)[0] or "application/octet-stream"
        return FileResponse(
            full,
            status_code=status,
            media_type=media_type,
            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"},
        )

    def html(self, content: bytes, status: int = 200) -> Response:
        # no-store: the page holds the token, and a rebuilt page must not come from a cache.
        return Response(
            inject(content, self.snippet()),
            status_code=status,
            media_type="text/html",
            headers={
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
                **FRAME_HEADERS,
            },
        )

    def not_found(self) -> Response:
        page = self.root / "404.html"
        if page.is_file():
            return self.html(page.read_bytes(), 404)
        return self.html(NOT_FOUND_HTML, 404)


class OverlayAsset(NamedTuple):
    """One overlay file as served: minified (JavaScript), gzipped, and its ETag."""

    body: bytes
    gzipped: bytes
    etag: str
    media_type: str


def overlay_asset(path: Path) -> OverlayAsset:
    """The overlay file at `path` as served, made again when the file changes."""
    stat = path.stat()
    return _asset(path, stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=8)
def _asset(path: Path, mtime_ns: int, size: int) -> OverlayAsset:
    body = path.read_bytes()
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if media_type == "text/javascript":
        # Comments and indentation are a fifth of the gzipped size (benchmarks/overlay.py).
        body = rjsmin.jsmin(body.decode("utf-8"), keep_bang_comments=True).encode("utf-8")
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
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
        full = safe_file(self.root, name) if self.root else None
        if full is None or not full.is_file():
            return error_response(404, NOT_FOUND, f"No overlay file {name!r}")
        asset = overlay_asset(full)
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
