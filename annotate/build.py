"""Which build of the docs a note was made on: its branch and commit (docs/workflow.md, "Builds").

`current(project)` reads, in this order:

1. `ANNOTATE_BUILD_BRANCH` and `ANNOTATE_BUILD_COMMIT` in the environment (set by the CI job that
   built the preview, or by whoever starts `annotate serve`); each one that is set wins on its own;
2. git in the project folder: one `git rev-parse HEAD --abbrev-ref HEAD` with a short timeout. On a
   detached HEAD (CI checks out a commit) the branch comes from the CI's own variables
   (`GITHUB_HEAD_REF`, `GITHUB_REF_NAME`, `CI_COMMIT_REF_NAME`), else it is unknown (null);
3. nothing: no git, not a repository, or git too slow -> `None` (the note records no build).

A commit that looks like a git object name is kept as its first 12 hex digits, lowercased: what
`git` itself shows when abbreviating, unique in any real repository, and 28 bytes less in every
answer. Two commits are the same build when their stored forms are equal.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from .errors import ValidationError
from .models import Build

__all__ = [
    "ENV_BRANCH",
    "ENV_COMMIT",
    "Build",
    "BuildSource",
    "Current",
    "Naming",
    "current",
    "from_git",
    "label",
    "named",
    "short_commit",
]

ENV_BRANCH = "ANNOTATE_BUILD_BRANCH"
ENV_COMMIT = "ANNOTATE_BUILD_COMMIT"
# The branch of a detached checkout, as CI services name it (GitHub pull requests first: their
# GITHUB_REF_NAME is `123/merge`).
CI_BRANCH = ("GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME")
GIT_TIMEOUT_S = 2.0
# How long `Current` trusts what it read: a server or an MCP session outlives commits and branch
# switches in its checkout, and a read path should not start git each time.
REREAD_S = 2.0
SHORT = 12
MAX_NAME = 200
_HEX = re.compile(r"[0-9a-fA-F]{7,64}")
# A note's build as its two columns, `(None, None)` for none.
Made = tuple[str | None, str | None]


def short_commit(commit: str) -> str:
    """A git object name as its first 12 hex digits (lowercase); any other label as it is."""
    commit = commit.strip()
    return commit[:SHORT].lower() if _HEX.fullmatch(commit) else commit


def label(branch: str | None, commit: str | None) -> str:
    """A build in one short word for people and agents: `main@0b105a0c1d2e`, `?` where unknown."""
    return f"{branch or '?'}@{commit or '?'}"


class Naming(NamedTuple):
    """How a listing of notes names the builds they were made on (`named`)."""

    once: Made | None  # the one build every note was made on, named once for them all
    each: set[Made]  # the builds to name on each note made on one


def named(made: Iterable[Made], current: Build | None) -> Naming:
    """How the Markdown export and the review page name the builds `made` their notes were made
    on (each note's `(branch, commit)`), read on the build `current`: only where it tells the
    reader something, for it costs an agent tokens on every note.

    Every build but `current` is named on each note made on it; with no current build, every
    build when the notes come from more than one, else none. When every note was made on the
    same build (and it is named), it is named once for them all instead. A note made on no build
    (`(None, None)`) names none.
    """
    every = set(made)
    known = every - {(None, None)}
    if current is None:
        each = known if len(known) > 1 else set()
    else:
        each = known - {(current.branch, current.commit)}
    if len(every) == 1 and each:
        return Naming(next(iter(every)), set())
    return Naming(None, each)


def make(branch: str | None, commit: str | None) -> Build | None:
    """A checked build from a caller's values (empty strings are unknown), or None when both are."""
    values = []
    for name, value in (("branch", branch), ("commit", commit)):
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"build {name} must be text, got {value!r}", f"build.{name}")
        value = (value or "").strip() or None
        if value is not None and (len(value) > MAX_NAME or not value.isprintable()):
            raise ValidationError(
                f"build {name} must be at most {MAX_NAME} printable characters", f"build.{name}"
            )
        values.append(value)
    branch, commit = values
    if branch is None and commit is None:
        return None
    return Build(branch, None if commit is None else short_commit(commit))


def of(value: Build | Mapping[str, Any] | None) -> Build | None:
    """A build from a `Build`, a `{branch, commit}` mapping (a note's JSON), or None."""
    if value is None or isinstance(value, Build):
        return value
    if not isinstance(value, Mapping):
        raise ValidationError(f"build must be an object with branch and commit, got {value!r}")
    return make(value.get("branch"), value.get("commit"))


def from_git(project: str | os.PathLike[str], env: Mapping[str, str]) -> Build | None:
    """The checked-out branch and commit of the repository holding `project`, or None."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD", "--abbrev-ref", "HEAD"],
            cwd=Path(project),
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None  # no git, or it hung (a network file system, a lock)
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None  # not a repository, or a repository without a commit yet
    commit, branch = lines
    if branch == "HEAD":
        branch = next((env[k] for k in CI_BRANCH if env.get(k)), "")
    return make(branch, commit)


def current(project: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> Build | None:
    """The build being served from `project`: the environment first, else git (module doc)."""
    env = os.environ if env is None else env
    branch, commit = env.get(ENV_BRANCH) or None, env.get(ENV_COMMIT) or None
    if branch is None or commit is None:
        found = from_git(project, env)
        if found is not None:
            branch = branch or found.branch
            commit = commit or found.commit
    return make(branch, commit)


class Current:
    """`current(project)`, read again once `REREAD_S` seconds have passed since the last read."""

    def __init__(self, project: str | os.PathLike[str], env: Mapping[str, str] | None = None):
        self.project = Path(project)
        self.env = env
        self._lock = threading.Lock()
        self._read_at = -REREAD_S
        self._read = False
        self._build: Build | None = None

    def __call__(self) -> Build | None:
        if time.monotonic() - self._read_at < REREAD_S:
            return self._build
        # One thread runs git; the others go on with what was read last rather than queue behind
        # it (every note and list of a busy server asks), unless nothing was read yet.
        if not self._lock.acquire(blocking=not self._read):
            return self._build
        try:
            if time.monotonic() - self._read_at >= REREAD_S:
                self._build = current(self.project, self.env)
                self._read_at = time.monotonic()
                self._read = True
            return self._build
        finally:
            self._lock.release()


BuildSource = Build | Callable[[], Build | None] | None
"""What a store is told about the build it serves: one build, a function that reads it (`Current`),
or nothing (notes record no build)."""
