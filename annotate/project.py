"""Which project a command works on: found upwards from a folder, as git finds its repository.

A project is the nearest folder, from the start folder upwards, holding one of `CONFIG_FILES`
(`zensical.toml`, `mkdocs.yml`, `mkdocs.yaml`, `properdocs.yml`; annotate/config.py). Its store
is `<project>/.annotate/annotations.db`, beside the config file and so never inside `docs_dir`
(docs/architecture.md, "Why the database lives outside watched paths"). Started in `docs/` or any
folder below the project, every command finds the same store; started outside any project, it
says so instead of creating an empty store where nobody looks (issue #14).
"""

from __future__ import annotations

import os
from pathlib import Path

from .config import CONFIG_FILES, config_file
from .errors import ProjectNotFound, ValidationError

__all__ = ["CONFIG_FILES", "config_file", "find_project"]


def _upwards(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        if config_file(folder) is not None:
            return folder
    return None


def find_project(start: str | os.PathLike[str] | None = None) -> Path:
    """The project folder for `start`.

    Without `start`, the nearest folder from the current one upwards that holds a config file, or
    `ProjectNotFound`. With `start` (a folder the user named), the same search from there; when no
    folder above holds a config file, `start` itself: a built site of any generator can be
    reviewed (`annotate serve DIR --project P`).
    """
    if start is None:
        here = Path.cwd()
        found = _upwards(here.resolve())
        if found is None:
            raise ProjectNotFound(str(here))
        return found
    folder = Path(start)
    if not folder.is_dir():
        raise ValidationError(f"Project folder {str(folder)!r} does not exist", "project")
    found = _upwards(folder.resolve())
    return folder if found is None else found
