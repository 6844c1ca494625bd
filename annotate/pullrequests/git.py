"""What the checkout says about its pull request: the remote's host and repository, the current
branch, the repository's root (a note's Markdown path is the project's; a pull request's is the
repository's)."""

from __future__ import annotations

import re
import subprocess
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from .errors import NoPullRequest

__all__ = ["Checkout", "checkout", "parse_remote"]

# `git@host:owner/name.git`, scp-like.
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")


@dataclass(frozen=True, slots=True)
class Checkout:
    root: Path
    branch: str | None
    head: str | None
    # The remote's host (`github.com`) and path (`owner/name`); None when there is no remote.
    host: str | None
    repo: str | None


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def parse_remote(url: str) -> tuple[str, str] | None:
    """(host, `owner/name`) of a remote URL (https, ssh, scp-like), without credentials or
    `.git`; None when it names no repository on a host."""
    url = url.strip()
    if "://" in url:
        parts = urllib.parse.urlsplit(url)
        host, path = parts.hostname, parts.path
    else:
        found = _SCP.match(url)
        if found is None:
            return None
        host, path = found[1], found[2]
    path = path.strip("/")
    path = path.removesuffix(".git")
    if not host or path.count("/") < 1:
        return None
    return host.lower(), path


def checkout(cwd: Path) -> Checkout:
    """The git checkout `cwd` is in (`NoPullRequest` when it is in none)."""
    root = _git(cwd, "rev-parse", "--show-toplevel")
    if root is None:
        raise NoPullRequest(
            f"{cwd} is not in a git checkout: name the pull request with --repo OWNER/NAME and "
            "--pr N"
        )
    branch = _git(cwd, "symbolic-ref", "--quiet", "--short", "HEAD")
    head = _git(cwd, "rev-parse", "HEAD")
    remote = (_git(cwd, "config", f"branch.{branch}.remote") if branch else None) or "origin"
    url = _git(cwd, "remote", "get-url", remote)
    parsed = parse_remote(url) if url else None
    return Checkout(
        Path(root),
        branch,
        head,
        parsed[0] if parsed else None,
        parsed[1] if parsed else None,
    )
