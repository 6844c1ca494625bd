"""The per-project token that every API request carries in `X-Annotate-Token`.

It lives in `<project>/.annotate/token`, readable by its owner only (0600), and is handed to the
overlay inside the pages the server serves. A web page on another origin can neither read it nor
guess it, so it cannot write to the store (docs/security.md).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
from pathlib import Path

from .errors import ValidationError
from .store import DEFAULT_DIR

__all__ = ["TOKEN_FILE", "TokenFile", "read_token", "rotate_token", "token_path"]

log = logging.getLogger("annotate.tokens")

TOKEN_FILE = "token"
# 32 random bytes; URL-safe base64 keeps it one plain line that fits in a header.
TOKEN_BYTES = 32
TOKEN_PATTERN = re.compile(r"^[A-Za-z0-9_\-.~+/=]{16,512}$")


def token_path(project: str | os.PathLike[str] = ".") -> Path:
    return Path(project) / DEFAULT_DIR / TOKEN_FILE


def _folder(path: Path, *, parents: bool = True) -> None:
    folder = path.parent
    if not folder.exists():
        folder.mkdir(parents=parents, mode=0o700)
        if folder.name == DEFAULT_DIR:
            # Same guard as the store's: never committed, even before `annotate setup`.
            (folder / ".gitignore").write_text("# created by mkdocs-annotate\n*\n")


def _write_new(path: Path, *, replace: bool, token: str | None = None, parents: bool = True) -> str:
    """Write a token (a fresh one unless given) through a 0600 temporary file; `replace=False`
    keeps an existing one."""
    _folder(path, parents=parents)
    token = token or secrets.token_urlsafe(TOKEN_BYTES)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(token + "\n")
            f.flush()
            os.fsync(f.fileno())
        if replace:
            os.replace(tmp, path)
        else:
            try:
                # link() fails when the file exists: two processes starting at once share one token.
                os.link(tmp, path)
            except FileExistsError:
                return _read(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return token


def _read(path: Path) -> str:
    token = path.read_text(encoding="ascii", errors="replace").strip()
    if not TOKEN_PATTERN.match(token):
        raise ValidationError(
            f"{path} does not hold a valid token (16 to 512 URL-safe characters); "
            "replace it with `annotate token --rotate`",
            "token",
        )
    return token


def read_token(project: str | os.PathLike[str] = ".") -> str:
    """The project's token, created (0600) when missing."""
    path = token_path(project)
    try:
        token = _read(path)
    except FileNotFoundError:
        return _write_new(path, replace=False)
    if os.name == "posix" and path.stat().st_mode & 0o077:
        # A copied or hand-made file: the token must not be readable by other users.
        os.chmod(path, 0o600)
    return token


def rotate_token(project: str | os.PathLike[str] = ".") -> str:
    """Replace the token; pages served with the old one get 401 until they are reloaded."""
    return _write_new(token_path(project), replace=True)


class TokenFile:
    """The current token, re-read when the file changes (so `annotate token --rotate` takes effect
    on a running server at once). Calling it costs one `stat`."""

    def __init__(self, project: str | os.PathLike[str] = ".") -> None:
        self.path = token_path(project)
        self._token = read_token(project)
        self._stamp = self._stat()

    def _stat(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def __call__(self) -> str:
        stamp = self._stat()
        if stamp != self._stamp:
            if stamp is None:
                # Deleted while serving (`git clean -fdX` removes the gitignored `.annotate/`):
                # write back the token the open pages carry, so they keep working and the CLI
                # and MCP server read the same one (issue #17). A token another process wrote
                # first wins; a project folder that is gone is not made again.
                with contextlib.suppress(OSError):
                    token = _write_new(self.path, replace=False, token=self._token, parents=False)
                    if token == self._token:
                        log.warning("%s was deleted while in use; wrote it again", self.path)
                    self._token = token
                stamp = self._stat()
            else:
                with contextlib.suppress(OSError, ValidationError):
                    self._token = _read(self.path)
            # The state as it was before reading: a file written while it was read (seen
            # half-written or empty) differs from it, and is read again on the next call.
            self._stamp = stamp
        return self._token
