"""A small JSON client for a pull request's host (the standard library's urllib: no new
dependency). The token travels in a header only, never in a URL, and is never part of an error
message; a `next` page on another origin is not followed (it would get the token)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import BadToken, HostRefused, HostUnreachable, PullRequestNotFound, RateLimited

__all__ = ["Client", "Response"]

TIMEOUT_S = 30.0
# How much of a refusal's text a message quotes.
MAX_REASON = 300
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="next"')
# The headers that carry a token: never sent on to another origin.
SECRET_HEADERS = ("authorization", "private-token")


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect (GitHub moves renamed repositories), but drop the token's header when
    it leads to another origin; urllib would send it on."""

    def redirect_request(
        self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            for name in list(new.headers):
                if name.lower() in SECRET_HEADERS:
                    del new.headers[name]
        return new


_OPENER = urllib.request.build_opener(_SameOriginRedirects)


@dataclass(slots=True)
class Response:
    status: int
    data: Any
    headers: Mapping[str, str] = field(default_factory=dict)


class Client:
    """Requests to one API root (`api_url`), signed with `headers` (the token's header)."""

    def __init__(
        self, api_url: str, headers: Mapping[str, str], *, host_name: str, what: str
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self._headers = dict(headers)
        # "GitHub" or "GitLab", and the request's object ("pull request 4 of o/r") for messages.
        self.host_name = host_name
        self.what = what

    def url(self, path: str, params: Mapping[str, Any] | None = None) -> str:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return f"{self.api_url}{path}{query}"

    def request(
        self,
        method: str,
        path_or_url: str,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Response:
        """One request; the host's refusals raised as named errors (annotate/pullrequests/
        errors.py)."""
        url = path_or_url if "://" in path_or_url else self.url(path_or_url, params)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "User-Agent": "mkdocs-annotate", **self._headers}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with _OPENER.open(req, timeout=TIMEOUT_S) as answer:
                raw = answer.read()
                return Response(answer.status, _json(raw), dict(answer.headers.items()))
        except urllib.error.HTTPError as e:
            raw = e.read()
            raise self._refusal(e.code, _json(raw), dict(e.headers.items())) from None
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise HostUnreachable(
                f"Cannot reach {self.host_name} at {self.api_url} ({reason}); the notes are as "
                "they were: run the command again when the host answers"
            ) from None

    def pages(
        self, path: str, params: Mapping[str, Any] | None = None, *, limit: int = 100
    ) -> list[Any]:
        """Every item of a paginated listing, following the `Link: rel="next"` header (on the
        API's own origin only)."""
        items: list[Any] = []
        url: str | None = self.url(path, {**(params or {}), "per_page": 100})
        origin = _origin(self.api_url)
        for _ in range(limit):
            if url is None:
                break
            answer = self.request("GET", url)
            items.extend(answer.data or [])
            found = _NEXT.search(_header(answer.headers, "link") or "")
            url = found[1] if found and _origin(found[1]) == origin else None
        return items

    def _refusal(self, status: int, data: Any, headers: Mapping[str, str]) -> Exception:
        reason = _reason(data)
        said = f": {reason}" if reason else ""
        if status == 401:
            return BadToken(
                f"{self.host_name} refused the token (401{said}); set a valid one in the "
                "environment (see docs/pull-requests.md)"
            )
        limited = status == 429 or (
            status == 403
            and (
                _header(headers, "x-ratelimit-remaining") == "0"
                or _header(headers, "retry-after") is not None
                or "rate limit" in reason.lower()
            )
        )
        if limited:
            wait = _retry_after(headers)
            when = f"retry in {wait} s" if wait is not None else "retry later"
            return RateLimited(
                f"{self.host_name}'s rate limit was reached ({status}): {when}; the notes not "
                "posted yet stay open and the next push sends them",
                wait,
            )
        if status == 404:
            return PullRequestNotFound(
                f"{self.host_name} knows no {self.what} (404), or the token may not read it"
            )
        return HostRefused(f"{self.host_name} refused the request ({status}{said})", status)


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _reason(data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    parts = [str(data.get("message") or data.get("error") or "")]
    for error in data.get("errors") or ():
        parts.append(str(error.get("message", error)) if isinstance(error, dict) else str(error))
    text = "; ".join(p for p in parts if p)
    return text[:MAX_REASON]


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def _retry_after(headers: Mapping[str, str]) -> int | None:
    """Seconds to wait: `Retry-After`, else GitHub's `X-RateLimit-Reset` (epoch seconds),
    GitLab's `RateLimit-Reset`."""
    after = _header(headers, "retry-after")
    if after is not None and after.strip().isdigit():
        return int(after)
    reset = _header(headers, "x-ratelimit-reset") or _header(headers, "ratelimit-reset")
    if reset is not None and reset.strip().isdigit():
        return max(0, int(reset) - int(time.time()))
    return None


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc
