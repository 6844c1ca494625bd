"""Which Markdown file a page URL was built from.

The MkDocs plugin knows each page's `src_uri` and records it with `Store.register_pages`; that
mapping wins. Without it (the CLI or MCP server on a project whose site was never served), the
path is worked out from `mkdocs.yml` the way MkDocs builds URLs. Either way the path comes from the
server side, never from a browser, and never leaves the project folder (SPEC §5).
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath, PureWindowsPath

__all__ = ["candidates", "docs_dir", "resolve_page", "safe_path", "site_url"]

CONFIG_NAMES = ("mkdocs.yml", "mkdocs.yaml")
# Only the keys we need, read with a pattern: mkdocs.yml often holds `!!python/name:` tags that
# a safe YAML loader refuses, and this module must not import MkDocs.
_KEY = re.compile(
    r"^(docs_dir|use_directory_urls|site_url)\s*:\s*(['\"]?)([^'\"#\n]*?)\2\s*(#.*)?$", re.M
)


# (config file, mtime, size) -> its keys: a listing resolves a page per page note, and reading
# the file for each made listing 2,000 page notes ten times slower.
_CONFIGS: dict[tuple[str, int, int], dict[str, str]] = {}


def _config(project: Path) -> dict[str, str]:
    for name in CONFIG_NAMES:
        path = project / name
        try:
            st = path.stat()
            key = (str(path), st.st_mtime_ns, st.st_size)
            if key not in _CONFIGS:
                text = path.read_text(encoding="utf-8")
                if len(_CONFIGS) > 64:
                    _CONFIGS.clear()
                _CONFIGS[key] = {m.group(1): m.group(3).strip() for m in _KEY.finditer(text)}
            return _CONFIGS[key]
        except OSError:
            continue
    return {}


def docs_dir(project: Path) -> str:
    """The docs folder relative to the project (`docs` unless mkdocs.yml says otherwise)."""
    return _config(project).get("docs_dir") or "docs"


def site_url(project: Path) -> str | None:
    """mkdocs.yml's `site_url`, whose path is where `mkdocs serve` serves the site."""
    return _config(project).get("site_url") or None


def candidates(page_url: str, *, directory_urls: bool = True) -> list[str]:
    """Source paths (relative to docs_dir) that MkDocs could have built `page_url` from."""
    path = page_url.split("?", 1)[0].split("#", 1)[0].strip("/")
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
    return [f"{path}.md"]


def safe_path(project: Path, relative: str) -> Path | None:
    """`project / relative`, symlinks resolved, if it stays inside the project; else None.

    Refuses empty, absolute and drive paths, backslashes, NUL, `..` parts, symlink loops and
    symlinks that lead out (SPEC §5: no path outside the project is ever read).
    """
    if not relative or "\0" in relative or "\\" in relative:
        return None
    parts = PurePosixPath(relative)
    if parts.is_absolute() or PureWindowsPath(relative).anchor or ".." in parts.parts:
        return None
    try:
        root = project.resolve()
        full = (root / parts).resolve()
    except (OSError, RuntimeError):  # symlink loop
        return None
    if full == root or not full.is_relative_to(root):
        return None
    return full


def resolve_page(project: Path, page_url: str) -> str | None:
    """The existing Markdown file, relative to the project in POSIX form, or None."""
    config = _config(project)
    folder = config.get("docs_dir") or "docs"
    directory_urls = config.get("use_directory_urls", "true").lower() not in ("false", "no", "off")
    for candidate in candidates(page_url, directory_urls=directory_urls):
        relative = str(PurePosixPath(folder) / candidate)
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
