"""Which Markdown file a page URL was built from.

The MkDocs plugin knows each page's `src_uri` and records it with `Store.register_pages`; that
mapping wins. Without it (Zensical, `annotate serve`, the CLI or MCP server on a project whose site
was never served with the plugin), the path is worked out from the project's site config
(`zensical.toml`, `mkdocs.yml`…, read by annotate/config.py) the way MkDocs and Zensical build
URLs. Either way the path comes from the server side, never from a browser, and never leaves the
project folder (docs/security.md).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath, PureWindowsPath

from .config import site_config

__all__ = ["candidates", "docs_dir", "resolve_page", "safe_path", "site_url"]


def docs_dir(project: Path) -> str:
    """The docs folder relative to the project (`docs` unless the site config says otherwise)."""
    return site_config(project).docs_dir


def site_url(project: Path) -> str | None:
    """The config's `site_url`, whose path is where a dev server serves the site."""
    return site_config(project).site_url


def candidates(page_url: str, *, directory_urls: bool = True) -> list[str]:
    """Source paths (relative to docs_dir) that MkDocs or Zensical could have built `page_url`
    from."""
    path = page_url.split("?", 1)[0].split("#", 1)[0]
    folder = path.endswith("/")
    path = path.strip("/")
    if path.endswith(".html"):
        stem = path[: -len(".html")]
        if stem == "index" or stem.endswith("/index"):
            base = stem[: -len("index")].rstrip("/")
            return [f"{base}/index.md".lstrip("/"), f"{base}/README.md".lstrip("/")]
        return [f"{stem}.md"]
    if not path:
        return ["index.md", "README.md"]
    if directory_urls:
        return [f"{path}.md", f"{path}/index.md", f"{path}/README.md"]
    if folder:  # a server answers a folder with its index.html
        return [f"{path}/index.md", f"{path}/README.md"]
    return [f"{path}.md"]


def safe_path(project: Path, relative: str) -> Path | None:
    """`project / relative`, symlinks resolved, if it stays inside the project; else None.

    Refuses empty, absolute and drive paths, backslashes, NUL, `..` parts, symlink loops and
    symlinks that lead out: no path outside the project is ever read (docs/security.md).

    The answer is `Path.resolve()`'s, made cheaper for what nearly every call is, a path without
    symlinks (it ran on every request, issue #31): the project's real path is remembered while
    `project` is the same folder, and only `relative`'s parts are looked at, one `lstat` each;
    the first symlink among them hands the path to `resolve()`.
    """
    if not relative or "\0" in relative or "\\" in relative or relative[0] == "/":
        return None
    if ":" in relative and PureWindowsPath(relative).anchor:  # `C:`, a drive
        return None
    names = [n for n in relative.split("/") if n and n != "."]  # PurePosixPath's parts
    if ".." in names or not names:  # not `..`, nor the project folder itself
        return None
    root = _real_root(project)
    if root is None:
        return None
    path = root
    for name in names:
        path = f"{path}/{name}" if path != "/" else f"/{name}"
        try:
            linked = stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            # Missing (or under a file): `resolve()` goes on with the name as written, so does this.
            continue
        if linked:
            return _resolved(Path(root), PurePosixPath(*names))
    return Path(path)


def _resolved(root: Path, parts: PurePosixPath) -> Path | None:
    """`root / parts` through `resolve()`, if it stays inside `root` (a real path); else None."""
    try:
        full = (root / parts).resolve()
    except (OSError, RuntimeError):  # symlink loop
        return None
    if full == root or not full.is_relative_to(root):
        return None
    return full


# Project folder as given -> (its identity, its real path): resolving it cost as much as the rest.
_ROOTS: dict[str, tuple[tuple[int, int], str]] = {}


def _real_root(project: Path) -> str | None:
    """The project folder's real path, remembered while `project` names the same folder (a
    `stat`); None when it cannot be resolved."""
    key = os.fspath(project)
    try:
        st = os.stat(key)
        known = _ROOTS.get(key)
        if known is not None and known[0] == (st.st_dev, st.st_ino):
            return known[1]
        real = os.fspath(project.resolve())
    except (OSError, RuntimeError):
        return None
    if len(_ROOTS) >= 64:
        _ROOTS.clear()
    _ROOTS[key] = ((st.st_dev, st.st_ino), real)
    return real


def resolve_page(project: Path, page_url: str) -> str | None:
    """The existing Markdown file, relative to the project in POSIX form, or None.

    `page_url` may carry the sub-path of `site_url` (a dev server serves the site under it) or
    not (`annotate serve site/` serves it at the root). Raises `ConfigError` when the project's
    site config cannot be read.
    """
    config = site_config(project)
    path = page_url.split("?", 1)[0].split("#", 1)[0]
    base = config.site_path
    if base != "/" and (path + "/").startswith(base):
        path = "/" + path[len(base) :]
    for candidate in candidates(path, directory_urls=config.use_directory_urls):
        relative = str(PurePosixPath(config.docs_dir) / candidate)
        # A plain stat first: resolving symlinks (safe_path) costs ten times more, and most
        # candidates do not exist.
        if not os.path.isfile(os.path.join(project, relative)):
            continue
        full = safe_path(project, relative)
        try:
            if full is not None and full.is_file():
                return relative
        except OSError:  # a name the file system cannot hold (over 255 bytes): no such page
            continue
    return None
