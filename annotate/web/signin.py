"""Team mode's settings, who a request is from, and the sign-in page (docs/team.md).

Every request is a person's (annotate/web/security.py, `Identify`): an SSO proxy's identity
header from a trusted peer, or a personal token (`annotate token add NAME`) as a bearer token or
the cookie the sign-in page sets. The notes record who wrote them, and the store refuses what a
person's role does not allow (annotate/identity.py). The team app and its ASGI factory
(`uvicorn --factory annotate.web.team:app`) are put together in annotate/compose.py.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qs, quote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from ..errors import ValidationError
from ..identity import Person
from ..store import Store
from .responses import FORBIDDEN_ORIGIN, UNSUPPORTED_MEDIA_TYPE, error_response
from .security import COOKIES, DEFAULT_PROXIES, SIGNIN_PATH, Identify, trusted_network

__all__ = ["ENV", "NO_IDENTITY", "Settings", "has_identity_source", "identify", "signin", "signout"]

# How long a browser stays signed in: revoking the token ends it sooner, on the next request.
COOKIE_MAX_AGE = 30 * 24 * 3600
SIGNIN_BODY_LIMIT = 8 * 1024
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # Not no-referrer: under it a browser sends `Origin: null` with the form's POST (Fetch
    # standard, "append a request Origin header"), which the Origin check refuses.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# The factory's settings: environment variable -> what it holds.
ENV = {
    "ANNOTATE_SITE_DIR": "the built site to serve (required)",
    "ANNOTATE_PROJECT": "the project folder (default: found upwards from the current folder)",
    "ANNOTATE_DB": "the store: an SQLite file or a postgresql:// URL (default: PROJECT/.annotate/annotations.db)",
    "ANNOTATE_IDENTITY_HEADER": "the SSO proxy's identity header, e.g. X-Forwarded-Email",
    "ANNOTATE_TRUSTED_PROXIES": "comma-separated addresses or networks (default: loopback)",
    "ANNOTATE_MAINTAINERS": "comma-separated names the identity header makes maintainers",
    "ANNOTATE_PUBLIC_URL": "the URL reviewers open, e.g. https://review.example.com",
    "ANNOTATE_READ_ONLY": "1: show the review without accepting changes",
}


@dataclass(frozen=True)
class Settings:
    """Team mode's options (`annotate serve --team …`, or the factory's environment)."""

    identity_header: str | None = None
    trusted_proxies: tuple[str, ...] = DEFAULT_PROXIES
    maintainers: tuple[str, ...] = ()
    public_url: str | None = None

    def __post_init__(self) -> None:
        for address in self.trusted_proxies:
            trusted_network(address)  # a bad address fails at start, not on a request
        if self.public_url is not None:
            parts = urlsplit(self.public_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValidationError(
                    f"--public-url {self.public_url!r} must be an http(s) URL such as "
                    "https://review.example.com",
                    "public-url",
                )

    @property
    def public_origin(self) -> str | None:
        if self.public_url is None:
            return None
        parts = urlsplit(self.public_url)
        return f"{parts.scheme}://{parts.netloc}".lower()

    @property
    def public_host(self) -> str | None:
        return urlsplit(self.public_url).hostname if self.public_url else None

    @property
    def secure(self) -> bool:
        """Whether browsers reach the server over https (its cookie is then `Secure`)."""
        return bool(self.public_url and self.public_url.lower().startswith("https:"))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        def names(key: str) -> tuple[str, ...]:
            return tuple(n.strip() for n in environ.get(key, "").split(",") if n.strip())

        return cls(
            identity_header=environ.get("ANNOTATE_IDENTITY_HEADER") or None,
            trusted_proxies=names("ANNOTATE_TRUSTED_PROXIES") or DEFAULT_PROXIES,
            maintainers=names("ANNOTATE_MAINTAINERS"),
            public_url=environ.get("ANNOTATE_PUBLIC_URL") or None,
        )


def identify(settings: Settings, store: Store) -> Identify:
    """Who a request is from: the header as `settings` say, personal tokens from `store`."""
    return Identify(
        store.person_for_token,
        header=settings.identity_header,
        trusted=settings.trusted_proxies,
        maintainers=settings.maintainers,
        secure=settings.secure,
        live=store.people.live,
        # PostgreSQL sends the check with the request's first statement (annotate/tokencheck.py).
        carried=store.dialect == "postgresql",
    )


def has_identity_source(settings: Settings, store: Store) -> bool:
    """An identity header, or at least one live personal token."""
    return bool(settings.identity_header) or any(
        t["revokedAt"] is None for t in store.list_tokens()
    )


# -- the sign-in page ---------------------------------------------------------------------------


def _next(value: str | None) -> str:
    """Where to go after signing in: a path of this server, never another site. Control
    characters are refused: browsers drop tab, CR and LF from a URL, so `/\t/evil.example/`
    would become `//evil.example/` (issue #32). What is left is percent-encoded (ASCII only)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        return "/"
    return quote(value, safe="/?&=#%:@!$'()*+,;~")


def _page(message: str, person: Person | None, next_url: str, status: int = 200) -> Response:
    # Every string is escaped: a name or a `next` from the URL is text, never markup.
    esc = html.escape
    if person is not None:
        body = (
            f"<p>Signed in as <b>{esc(person.name)}</b> ({esc(person.role)}).</p>"
            f'<p><a href="{esc(next_url)}">Continue</a></p>'
            '<form method="post" action="/__annotate/signout">'
            '<button type="submit">Sign out</button></form>'
        )
    else:
        body = (
            f'<form method="post" action="{SIGNIN_PATH}">'
            f'<input type="hidden" name="next" value="{esc(next_url)}">'
            '<label for="token">Personal token</label>'
            '<input id="token" name="token" type="password" autocomplete="off" required>'
            '<button type="submit">Sign in</button></form>'
            "<p>No token? Ask a maintainer to run <code>annotate token add YOUR-NAME</code>.</p>"
        )
    note = f'<p role="alert">{esc(message)}</p>' if message else ""
    page = (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Sign in · annotate</title><style>"
        "body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:4rem auto;padding:0 1rem}"
        "input{display:block;width:100%;margin:.25rem 0 1rem;padding:.4rem;box-sizing:border-box}"
        "[role=alert]{color:#b00020}</style></head><body><main>"
        f"<h1>Review sign-in</h1>{note}{body}</main></body></html>\n"
    )
    return HTMLResponse(page, status_code=status, headers=PAGE_HEADERS)


def _same_origin_post(request: Request) -> Response | None:
    """A sign-in or sign-out form must come from a page of this server: the Guard refused any
    other `Origin`; here one must be sent at all (browsers send it with every form POST), so a
    request from elsewhere cannot sign a browser in to someone else's name (login CSRF)."""
    if request.headers.get("origin") is None:
        return error_response(
            403, FORBIDDEN_ORIGIN, "Sign-in forms must carry an Origin header (send it from a page)"
        )
    return None


async def _form(request: Request) -> dict[str, str] | Response:
    media = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        return error_response(
            415, UNSUPPORTED_MEDIA_TYPE, "The sign-in form is application/x-www-form-urlencoded"
        )
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > SIGNIN_BODY_LIMIT:
            return error_response(413, "too_large", "The sign-in form is larger than 8 KB")
    fields = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8)
    return {k: v[0] for k, v in fields.items() if v}


def _secure(request: Request, settings: Settings) -> bool:
    return settings.secure or request.url.scheme == "https"


async def signin(request: Request, store: Store, settings: Settings) -> Response:
    """GET: the sign-in page. POST (the form, a token pasted): sets the sign-in cookie."""
    person: Person | None = getattr(request.state, "person", None)
    if request.method in ("GET", "HEAD"):
        return _page("", person, _next(request.query_params.get("next")))
    refused = _same_origin_post(request)
    if refused is not None:
        return refused
    form = await _form(request)
    if isinstance(form, Response):
        return form
    next_url = _next(form.get("next"))
    token = form.get("token", "").strip()
    found = await run_in_threadpool(store.person_for_token, token) if token else None
    if found is None:
        return _page("That token is unknown or was revoked.", None, next_url, 401)
    answer = RedirectResponse(next_url, status_code=303)
    secure = _secure(request, settings)
    answer.set_cookie(
        COOKIES[0] if secure else COOKIES[1],
        token,
        max_age=COOKIE_MAX_AGE,
        path="/",
        secure=secure,
        httponly=True,
        samesite="strict",
    )
    answer.headers["Cache-Control"] = "no-store"
    return answer


async def signout(request: Request, settings: Settings) -> Response:
    """POST: forget the sign-in cookie."""
    refused = _same_origin_post(request)
    if refused is not None:
        return refused
    answer = RedirectResponse(SIGNIN_PATH, status_code=303)
    for name in COOKIES:
        answer.delete_cookie(
            name,
            path="/",
            secure=name.startswith("__Host-") or _secure(request, settings),
            httponly=True,
            samesite="strict",
        )
    return answer


NO_IDENTITY = (
    "Team mode needs an identity source before other machines can reach it: an SSO proxy's "
    "header (--identity-header / ANNOTATE_IDENTITY_HEADER) or a personal token "
    "(annotate token add NAME)"
)
