"""Which site config a project uses, and the few settings of it that say where pages come from.

A project is built by Zensical, MkDocs or ProperDocs from one config file, looked for in the
project folder in Zensical's order (`zensical.toml`, `mkdocs.yml`, `mkdocs.yaml`) and then
ProperDocs' own names. Only what maps a page URL to its Markdown file is read: `docs_dir`,
`site_dir`, `use_directory_urls` (forced off by the offline plugin, as Zensical and Material's
plugin do) and `site_url`, whose path is where a dev server serves the site. `pages.py` works out a
page's Markdown file from it; the CLI, the MCP server, `annotate serve` and the store all ask here.

This module imports neither MkDocs nor Zensical: a `mkdocs.yml` is read with a safe YAML loader
that leaves `!!python/name:` and other tags unresolved (their values are never needed here) and
resolves `!ENV` as MkDocs does; `INHERIT` is followed. A file that is not valid YAML or TOML is a
`ConfigError` naming the file and the place, never a traceback.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from .errors import ConfigError
from .urls import site_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = ["CONFIG_FILES", "GENERATORS", "SiteConfig", "config_file", "site_config"]

# The order Zensical looks for its config in (`zensical build` without `-f`), then ProperDocs'
# names: where a project holds several, the first is the one read.
CONFIG_FILES = (
    "zensical.toml",
    "mkdocs.yml",
    "mkdocs.yaml",
    "properdocs.yml",
    "properdocs.yaml",
)
# Which generator each config file belongs to (a `mkdocs.yml` may be built by Zensical too).
GENERATORS = {
    "zensical.toml": "zensical",
    "mkdocs.yml": "mkdocs",
    "mkdocs.yaml": "mkdocs",
    "properdocs.yml": "properdocs",
    "properdocs.yaml": "properdocs",
}
# A config file larger than this is refused (a real one is kilobytes).
MAX_CONFIG_BYTES = 4 * 1024 * 1024
# How many `INHERIT` steps are followed before the chain is called a loop.
MAX_INHERIT = 8


@dataclass(frozen=True)
class SiteConfig:
    """What a project's config says about where its pages come from."""

    file: Path | None  # the config file read; None when the project has none
    generator: str | None  # "zensical", "mkdocs", "properdocs"; None without a config
    docs_dir: str = "docs"  # relative to the project, POSIX form
    site_dir: str = "site"  # relative to the project, POSIX form
    use_directory_urls: bool = True
    site_url: str | None = None
    offline: bool = False  # the offline plugin is on (it turns use_directory_urls off)
    dev_addr: str | None = None  # `dev_addr`: where `mkdocs serve` listens (the chat view looks)

    @property
    def site_path(self) -> str:
        """The path `site_url` serves the site under (`/docs/`), `/` when none."""
        return site_path(self.site_url)


def config_file(folder: Path) -> Path | None:
    """The config file directly in `folder` that the generator would read, if there is one."""
    for name in CONFIG_FILES:
        candidate = folder / name
        if candidate.is_file():
            return candidate
    return None


# config file -> (the (path, mtime, size) of every file read for it, its settings). A listing
# resolves a page per page note: the config is parsed once per change, not once per page.
_CACHE: dict[str, tuple[tuple[tuple[str, int, int], ...], SiteConfig]] = {}


def _stamp(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return (str(path), st.st_mtime_ns, st.st_size)


def site_config(project: str | os.PathLike[str]) -> SiteConfig:
    """The config `project` is built from and what it says; defaults when it has none.

    Raises `ConfigError` when the file cannot be read or is not valid TOML / YAML, or a setting
    read here has the wrong type.
    """
    folder = Path(project)
    file = config_file(folder)
    if file is None:
        return SiteConfig(file=None, generator=None)
    key = str(file)
    cached = _CACHE.get(key)
    if cached is not None:
        try:
            if all(_stamp(Path(p)) == (p, m, s) for p, m, s in cached[0]):
                return cached[1]
        except OSError:
            pass
    # Each file's stamp is taken before it is read: a change while reading is seen next time.
    stamps: list[tuple[str, int, int]] = []
    raw = _read_toml(file, stamps) if file.suffix == ".toml" else _read_yaml(file, stamps)
    config = _settings(raw, file, folder)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = (tuple(stamps), config)
    return config


def _text(file: Path, stamps: list[tuple[str, int, int]]) -> str:
    try:
        stamp = _stamp(file)
        if stamp[2] > MAX_CONFIG_BYTES:
            raise ConfigError(file, f"it is over {MAX_CONFIG_BYTES // (1024 * 1024)} MB")
        stamps.append(stamp)
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(file, f"it is not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise ConfigError(file, f"it cannot be read: {e.strerror or e}") from None


def _read_toml(file: Path, stamps: list[tuple[str, int, int]]) -> dict[str, Any]:
    try:
        data = tomllib.loads(_text(file, stamps))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(file, f"it is not valid TOML: {e}") from None
    # Zensical reads the settings under [project], or the top level of a file without it.
    project = data.get("project", data)
    if not isinstance(project, dict):
        raise ConfigError(file, "[project] is not a table")
    return project


class _Loader(yaml.SafeLoader):
    """A safe loader that tolerates MkDocs' tags: `!ENV` is resolved, any other tag is None."""


def _env(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    """`!ENV NAME` or `!ENV [NAME, OTHER, default]`, as MkDocs (pyyaml-env-tag) reads it."""
    default = None
    if isinstance(node, yaml.ScalarNode):
        names = [loader.construct_scalar(node)]
    elif isinstance(node, yaml.SequenceNode):
        children = node.value
        if len(children) > 1:
            default = loader.construct_object(children[-1])
            children = children[:-1]
        names = [loader.construct_scalar(child) for child in children]
    else:
        return None
    for name in names:
        if isinstance(name, str) and name in os.environ:
            value = os.environ[name]
            # The stubs leave Resolver.resolve untyped; it returns the implicit tag.
            tag = loader.resolve(yaml.ScalarNode, value, (True, False))  # type: ignore[no-untyped-call]
            return loader.construct_object(yaml.ScalarNode(tag, value))
    return default


def _unknown(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> None:
    return None


_Loader.add_constructor("!ENV", _env)
_Loader.add_multi_constructor("", _unknown)


def _read_yaml(file: Path, stamps: list[tuple[str, int, int]]) -> dict[str, Any]:
    """The YAML config with its `INHERIT` parents merged under it, as MkDocs merges them."""
    chain: list[dict[str, Any]] = []
    current = file
    for _ in range(MAX_INHERIT + 1):
        try:
            data = yaml.load(_text(current, stamps), Loader=_Loader)  # a SafeLoader
        except yaml.YAMLError as e:
            where = getattr(e, "problem_mark", None)
            place = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
            problem = getattr(e, "problem", None) or str(e)
            raise ConfigError(current, f"it is not valid YAML{place}: {problem}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ConfigError(current, "it is not a mapping of settings")
        chain.append(data)
        parent = data.pop("INHERIT", None)
        if parent is None:
            break
        if not isinstance(parent, str) or not parent:
            raise ConfigError(current, "INHERIT is not a file name")
        current = (current.parent / parent).resolve()
        if not current.is_file():
            raise ConfigError(file, f"the file it inherits, {str(current)!r}, does not exist")
    else:
        raise ConfigError(file, f"INHERIT goes over {MAX_INHERIT} files deep (a loop?)")
    merged: dict[str, Any] = {}
    for data in reversed(chain):
        merged = _merge(merged, data)
    return merged


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`: mappings merged key by key, anything else replaced (mergedeep's
    default, which MkDocs uses for INHERIT)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _folder(raw: dict[str, Any], name: str, default: str, file: Path, project: Path) -> str:
    value = raw.get(name)
    if value is None:
        return default
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(file, f"{name} must be a folder name, not {value!r}")
    path = Path(value)
    if path.is_absolute():
        # An absolute folder inside the project is the same as its relative path; one outside
        # stays absolute, and no Markdown file is ever read from it (pages.safe_path).
        try:
            return path.resolve().relative_to(project.resolve()).as_posix() or "."
        except (ValueError, OSError):
            return path.as_posix()
    return PurePosixPath(value.replace("\\", "/")).as_posix()


def _offline(plugins: Any) -> bool:
    """Whether the offline plugin (`offline`, `material/offline`) is listed and not disabled."""
    if isinstance(plugins, dict):
        items = list(plugins.items())
    elif isinstance(plugins, list):
        items = []
        for entry in plugins:
            if isinstance(entry, str):
                items.append((entry, None))
            elif isinstance(entry, dict):
                items.extend(entry.items())
    else:
        return False
    for name, options in items:
        if isinstance(name, str) and name.removeprefix("material/") == "offline":
            enabled = options.get("enabled", True) if isinstance(options, dict) else True
            return enabled is not False
    return False


def _settings(raw: dict[str, Any], file: Path, project: Path) -> SiteConfig:
    directory_urls = raw.get("use_directory_urls")
    if directory_urls is None:
        directory_urls = True
    if not isinstance(directory_urls, bool):
        raise ConfigError(file, f"use_directory_urls must be true or false, not {directory_urls!r}")
    url = raw.get("site_url")
    if url is not None and not isinstance(url, str):
        raise ConfigError(file, f"site_url must be a URL, not {url!r}")
    offline = _offline(raw.get("plugins"))
    return SiteConfig(
        file=file,
        generator=GENERATORS[file.name],
        docs_dir=_folder(raw, "docs_dir", "docs", file, project),
        site_dir=_folder(raw, "site_dir", "site", file, project),
        use_directory_urls=directory_urls and not offline,
        site_url=(url.strip() or None) if url else None,
        offline=offline,
        dev_addr=dev_addr if isinstance(dev_addr := raw.get("dev_addr"), str) else None,
    )
