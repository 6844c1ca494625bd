"""Page URLs: every way a person or an agent writes a page's address, brought to one form.

An agent copies `/getting-started`, `getting-started/`, `/getting-started/index.html` or the whole
`http://127.0.0.1:8000/getting-started/` from the browser; with a `site_url` such as
`https://example.com/docs/`, `mkdocs serve` serves the same page at `/docs/getting-started/`. All of
them mean one page. The store keeps the path the page is served at (sub-path included), so the
overlay's `location.pathname` is stored unchanged; these functions give the forms an address may
stand for, and `Store.page_url` picks the one the store knows: a form that has notes, else one the
plugin registered, else the address itself (issue #14).

`/guide/` and `/guide/index.html` serve one page, and with `use_directory_urls: false` MkDocs
links to the second: both stay as written when nothing is known, so an overlay on either finds its
own notes under its own `location.pathname`.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["candidates", "clean", "default", "site_path"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_SLASHES = re.compile(r"/{2,}")


def clean(value: str) -> str:
    """The path of `value`: scheme, host, query and fragment dropped, a leading `/` added."""
    url = value.strip()
    if _SCHEME.match(url):
        url = urlsplit(url).path or "/"
    url = url.split("#", 1)[0].split("?", 1)[0]
    return _SLASHES.sub("/", "/" + url.lstrip("/"))


def _extensionless(path: str) -> bool:
    return not path.endswith("/") and "." not in path.rsplit("/", 1)[-1]


def default(path: str) -> str:
    """The form of a cleaned path that no known page settles: a folder URL gets its `/`."""
    return path + "/" if _extensionless(path) else path


def candidates(path: str, base: str = "/") -> list[str]:
    """The page URLs a cleaned `path` may stand for, the likeliest first: as written, the folder
    and its `index.html` for each other, as an `.html` page (`use_directory_urls: false`), then
    each with the site's sub-path `base` added or taken away."""
    forms = [path]
    if path.endswith("/index.html"):
        forms.append(path[: -len("index.html")])
    elif path.endswith("/"):
        forms.append(path + "index.html")
    elif _extensionless(path):
        forms += [path + "/", path + "/index.html", path + ".html"]
    out = list(forms)
    if base != "/":
        for form in forms:
            if form.startswith(base):
                out.append("/" + form[len(base) :])
            elif (form + "/").startswith(base):
                out.append("/")  # the sub-path itself: the home page
            else:
                out.append(base + form[1:])
    return list(dict.fromkeys(out))


def site_path(site_url: str | None) -> str:
    """The sub-path of a `site_url` (`https://example.com/docs/` → `/docs/`), `/` when none."""
    if not site_url:
        return "/"
    path = urlsplit(site_url.strip()).path if _SCHEME.match(site_url.strip()) else site_url
    path = _SLASHES.sub("/", "/" + path.strip().strip("/") + "/")
    return path
