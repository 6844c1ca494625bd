"""A PostgreSQL URL or conninfo string without its passwords, for messages and logs
(annotate/backends/postgres.py names the database by it)."""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["SECRET_KEYS", "redact"]

# What libpq reads as a password, in a URL's query or a `key=value` conninfo string.
SECRET_KEYS = frozenset({"password", "sslpassword"})
_URL_IN_TEXT = re.compile(r"(postgres(?:ql)?://[^\s'\"<>]*)", re.IGNORECASE)
# `password=value`, `sslpassword = 'quoted \' value'` (conninfo quoting: '…' with \' and \\).
_CONNINFO_SECRET = re.compile(
    r"\b((?:ssl)?password)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s]*)", re.IGNORECASE
)
_NETLOC = re.compile(r"([^/?#]*)(.*)", re.DOTALL)


def _redact_url(url: str) -> str:
    scheme, rest = url.split("://", 1)
    netloc, tail = _NETLOC.match(rest).groups()  # type: ignore[union-attr]  # always matches
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hosts}" if user else f"***@{hosts}"
    path, question, query = tail.partition("?")
    if question:
        pairs = []
        for pair in query.split("&"):
            key = pair.partition("=")[0]
            # libpq decodes %XX in keys too: `pass%77ord=` is a password.
            pairs.append(f"{key}=***" if unquote(key).strip().lower() in SECRET_KEYS else pair)
        query = "&".join(pairs)
    return f"{scheme}://{netloc}{path}{question}{query}"


def redact(text: str) -> str:
    """`text` without any password libpq would read in it: a URL's `user:password@`, its
    `?password=` / `?sslpassword=` (keys percent-encoded or not), and `password=…` in conninfo
    `key=value` strings (quoted values too), wherever they appear in `text` (for messages and
    logs)."""
    pieces = _URL_IN_TEXT.split(text)
    for i, piece in enumerate(pieces):
        if i % 2:
            pieces[i] = _redact_url(piece)
        else:
            pieces[i] = _CONNINFO_SECRET.sub(r"\1\2***", piece)
    return "".join(pieces)
