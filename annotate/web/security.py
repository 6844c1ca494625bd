"""Who may talk to the server, and what they may send (docs/security.md).

A web page the reviewer happens to have open elsewhere can send requests to `127.0.0.1`: a "simple"
cross-site POST (text/plain, no custom header) needs no CORS preflight, so the browser delivers it.
Through a DNS-rebinding name it can even read the answers. `Guard` refuses all of that before any
route runs (tests/test_attack_http.py plays each attack against every route):

1. `Host` must be a loopback name or a host the user chose (`--host`): no DNS rebinding → 403;
2. an `Origin` header, when present, must be the server's own origin → 403;
3. every API request carries the project's token in `X-Annotate-Token` → 401; in team mode
   (`Identify`, docs/team.md) it is a person's instead: a trusted proxy's identity header, or a
   personal token as a bearer token or sign-in cookie → 401 (a page: to the sign-in page), and
   the identity header from any peer but a trusted proxy → 403;
4. the API route must exist (→ 404) and take the method (→ 405 with the route's `Allow`), checked
   before the body so that a `PUT` is told about the method, not its content type (issue #17);
5. with `read_only`, every API write is refused → 405;
6. request bodies must be `application/json` (a note's screenshot: `image/webp`) → 415, and are read with a size limit (1 MB; 8 MB
   for the anchor route) while they stream in, whatever `Content-Length` claims → 413.

`CatchAll` turns any unexpected exception into a bare 500 `{error, code}`: no traceback ever leaves.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import time
import unicodedata
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, cookie_parser
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import tokencheck
from ..errors import AnnotateError, ValidationError
from ..identity import Person, hash_token, person_name
from .responses import (
    FORBIDDEN,
    FORBIDDEN_HOST,
    FORBIDDEN_ORIGIN,
    INTERNAL,
    INVALID,
    METHOD_NOT_ALLOWED,
    NOT_FOUND,
    READ_ONLY,
    TOO_LARGE,
    UNAUTHORIZED,
    UNSUPPORTED_MEDIA_TYPE,
    error_response,
)

__all__ = [
    "ANCHOR_BODY_LIMIT",
    "BODY_LIMIT",
    "COOKIES",
    "SIGNIN_PATH",
    "TOKEN_HEADER",
    "CatchAll",
    "Guard",
    "HostCheck",
    "Identify",
    "allow_header",
    "host_name",
    "in_thread",
    "is_loopback",
    "read_body",
    "replay",
]

log = logging.getLogger("annotate.web")

TOKEN_HEADER = "X-Annotate-Token"
API_PREFIX = "/__annotate/api/"
ANCHOR_PATH = API_PREFIX + "anchor"
SHOWN_PATH = API_PREFIX + "shown"  # a view acknowledging show_annotation (issue #19)
BODY_LIMIT = 1024 * 1024  # 1 MB (docs/http-api.md, "Conventions"); a screenshot's limit too
SCREENSHOT_SUFFIX = "/screenshot"
ANCHOR_BODY_LIMIT = 8 * 1024 * 1024  # the anchor route carries a whole page's text
# After refusing a body, keep reading (and dropping) up to this much so that the client, still
# sending, reads our 413 instead of a reset connection; beyond it the connection is closed.
DRAIN_LIMIT = 256 * 1024 * 1024
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WRITE_METHODS = BODY_METHODS
# Writes that change no note: allowed on a read-only server.
READ_ONLY_POSTS = frozenset({ANCHOR_PATH, SHOWN_PATH})
READ_METHODS = ("GET", "HEAD")
METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
# Team mode: the sign-in cookie. `__Host-` (only over https) binds it to this origin: no
# subdomain can set or overwrite it.
SIGNIN_PATH = "/__annotate/signin"
COOKIES = ("__Host-annotate", "annotate")
# What anyone may load in team mode: nothing of the store's.
PUBLIC_PATHS = frozenset(
    {"/__annotate/health", "/__annotate/openapi.json", SIGNIN_PATH, "/__annotate/signout"}
)
PUBLIC_PREFIX = "/__annotate/overlay/"
DEFAULT_PROXIES = ("127.0.0.1", "::1")
# A read answering this long after it was let in identifies its caller again (`Guard._recheck`).
RECHECK_AFTER_S = 1.0
REVOKED = tokencheck.REVOKED
# Tokens whose person `Identify` remembers (their check still runs on every request).
KNOWN_MAX = 4096


def host_name(value: str) -> str | None:
    """The host part of a `Host` header (`name`, `name:port`, `[v6]:port`), lower-cased, or None
    when the header is malformed."""
    value = value.strip().lower()
    if not value:
        return None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[: end + 1], value[end + 1 :]
    else:
        name, _, port = value.partition(":")
        rest = f":{port}" if port else ""
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return None
    return name or None


def is_loopback(name: str) -> bool:
    """`localhost`, `*.localhost` (RFC 6761: never sent to DNS), 127.0.0.0/8 and `[::1]`."""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def _names(hosts: Iterable[str]) -> frozenset[str]:
    out = set()
    for host in hosts:
        host = host.strip().lower()
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # a bare IPv6 address, as given to --host
        out.add(host)
    return frozenset(out)


class HostCheck:
    """Whether a `Host` header names this server: a loopback name or one of `allowed_hosts`
    (the `--host` the user chose). Anything else may be a DNS-rebinding name, which would make an
    attacker's page same-origin with this server. Used by `Guard` and, for the pages of
    `mkdocs serve`, by mkdocs_plugin/serve.py."""

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.allowed = _names(allowed_hosts)

    def __call__(self, raw_host: str) -> bool:
        name = host_name(raw_host)
        return name is not None and (is_loopback(name) or name in self.allowed)

    @staticmethod
    def refusal(raw_host: str) -> str:
        return (
            f"Host {raw_host!r} is not allowed: use a loopback address such as 127.0.0.1 or "
            "localhost, or the host the server was started with (--host, mkdocs serve -a)"
        )


class Identify:
    """Who a request is from, in team mode (docs/team.md, "Identity").

    In this order: the identity header (`header`, e.g. `X-Forwarded-Email`) when the direct peer
    is one of `trusted` (addresses or networks) — from any other peer it is refused, never
    trusted, even beside a valid token; a personal token in `Authorization: Bearer`; the sign-in
    cookie. `verify(token)` gives the token's person (`Store.person_for_token`); header names in
    `maintainers` are maintainers, the others reviewers.

    With `live` (`People.live`), a token's person is remembered once verified: the Guard's next
    request with it goes on at once and leaves a `tokencheck.Check` for the request's first
    round trip to carry (`carried`: the backend does, PostgreSQL), or for the route to make in
    its own thread-pool call, so no request waits for a thread of its own to read the token.
    """

    def __init__(
        self,
        verify: Callable[[str], Person | None],
        *,
        header: str | None = None,
        trusted: Iterable[str] = DEFAULT_PROXIES,
        maintainers: Iterable[str] = (),
        secure: bool = False,
        live: Callable[[str], bool] | None = None,
        carried: bool = False,
    ) -> None:
        """`secure`: browsers reach the server over https (an https `--public-url`), where only
        the `__Host-` cookie counts."""
        self.verify = verify
        self.live = live
        self.carried = carried
        # Token SHA-256 -> its person: a live token's hash always names the same one.
        self._known: dict[str, Person] = {}
        self.header = header.strip() if header else None
        self.trusted = tuple(trusted_network(a) for a in trusted)
        self.maintainers = frozenset(unicodedata.normalize("NFC", m) for m in maintainers)
        self.secure = secure

    def trusted_peer(self, scope: Scope) -> bool:
        client = scope.get("client")
        try:
            ip = ipaddress.ip_address(client[0]) if client else None
        except ValueError:
            return False  # a Unix socket, a test client: no address to trust
        if ip is None:
            return False
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
            ip = ip.ipv4_mapped
        return any(ip in net for net in self.trusted)

    def spoofed(self, scope: Scope, headers: Headers) -> tuple[Any, ...] | None:
        """403 when the identity header comes from a peer that is not a trusted proxy."""
        if self.header and self.header in headers and not self.trusted_peer(scope):
            client = scope.get("client")
            peer = client[0] if client else "an unknown peer"
            return (
                403,
                FORBIDDEN,
                f"The {self.header} header is only accepted from a trusted proxy "
                f"(--trusted-proxy); this request came from {peer}",
            )
        return None

    async def __call__(
        self, scope: Scope, headers: Headers, *, remembered: bool = False
    ) -> Person | tuple[Any, ...] | None:
        """The person, a refusal (401), or None when the request names nobody. `remembered`:
        a token verified before is taken at once, its check left to the request (see above)."""
        if self.header and self.header in headers:
            found = self._from_header(headers.getlist(self.header))
            if found is not None:
                return found
        sent = headers.get("authorization")
        if sent is not None:
            scheme, _, token = sent.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                return (401, UNAUTHORIZED, "Authorization must be 'Bearer' and a personal token")
            found = await self._token(token.strip(), remembered)
            if found is None:
                # Never the token itself: error answers end up in logs.
                return (401, UNAUTHORIZED, REVOKED)
            return found
        cookies = cookie_parser(headers.get("cookie", ""))
        # Over https only the `__Host-` cookie: the plain one can be set by a sibling subdomain
        # or a plain-http page of this host, which would sign the browser in as someone else.
        https = self.secure or scope.get("scheme") in ("https", "wss")
        for name in COOKIES[:1] if https else COOKIES:
            if cookies.get(name):
                return await self._token(cookies[name], remembered)
        return None

    async def _token(self, token: str, remembered: bool) -> Person | None:
        if self.live is None:
            return await run_in_threadpool(self.verify, token)
        digest = hash_token(token)
        person = self._known.get(digest) if remembered else None
        if person is not None:
            tokencheck.PENDING.set(
                tokencheck.Check(digest, self.live, self._forget, carried=self.carried)
            )
            return person
        found = await run_in_threadpool(self.verify, token)
        if found is None:
            self._forget(digest)
        else:
            if len(self._known) >= KNOWN_MAX:
                self._known.clear()  # one call: `_forget` may run in a thread meanwhile
            self._known[digest] = found
        return found

    def _forget(self, digest: str) -> None:
        self._known.pop(digest, None)

    def _from_header(self, values: list[str]) -> Person | tuple[Any, ...] | None:
        """The person the identity header names, a refusal, or None when it is blank."""
        if len(values) > 1 or any("," in v for v in values):
            # A proxy that adds the header instead of replacing it passes the client's own
            # beside its own: choosing either would let a client name itself (issue #32).
            return (
                401,
                UNAUTHORIZED,
                f"The {self.header} header holds more than one value: the proxy must replace "
                "it, not add to it",
            )
        if not values[0].strip():
            return None
        try:
            # Header bytes arrive as latin-1 text (ASGI); names are UTF-8 (`jörg@example.com`).
            value = values[0].encode("latin-1").decode("utf-8")
        except UnicodeDecodeError:
            return (401, UNAUTHORIZED, f"The {self.header} header is not UTF-8")
        try:
            name = unicodedata.normalize("NFC", person_name(value, self.header or "header"))
        except ValidationError as e:
            return (401, UNAUTHORIZED, e.message)
        return Person(name, "maintainer" if name in self.maintainers else "reviewer")


def trusted_network(address: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """An address or a network (`10.0.0.0/8`) given to `--trusted-proxy`."""
    try:
        return ipaddress.ip_network(address.strip().strip("[]"), strict=False)
    except ValueError:
        raise ValidationError(
            f"--trusted-proxy {address!r} is not an IP address or network (e.g. 127.0.0.1, "
            "10.0.0.0/8)",
            "trusted-proxy",
        ) from None


def allow_header(methods: Iterable[str]) -> str:
    """The `Allow` value for `methods`, in a fixed order (HEAD wherever GET is)."""
    names = set(methods)
    if "GET" in names:
        names.add("HEAD")
    return ", ".join(m for m in METHOD_ORDER if m in names)


class Guard:
    """The checks of the module docstring, as pure ASGI middleware (it must see the raw body)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: Callable[[], str],
        read_only: bool = False,
        allowed_hosts: Iterable[str] = (),
        methods: Callable[[str], Iterable[str] | None],
        identify: Identify | None = None,
        allowed_origins: Iterable[str] = (),
    ) -> None:
        """`methods(path)`: the methods the API route at `path` takes, None when there is none.
        `identify`: team mode (people instead of the project token). `allowed_origins`: origins
        accepted besides the server's own (the public URL in front of it, docs/team.md)."""
        self.app = app
        self.token = token
        self.read_only = read_only
        self.host_ok = HostCheck(allowed_hosts)
        self.methods = methods
        self.identify = identify
        self.origins = frozenset(o.strip().lower().rstrip("/") for o in allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        refusal = self._refuse(scope, headers)
        path = scope["path"]
        is_api = path.startswith(API_PREFIX) or path == API_PREFIX[:-1]
        if scope["type"] == "http":
            # The caller, for the routes (docs/team.md): None in single-user mode.
            scope.setdefault("state", {})["person"] = None
            if refusal is None and self.identify is not None:
                refusal = await self._person(scope, headers, is_api)
        if refusal is None and scope["type"] == "http" and is_api:
            refusal = self._refuse_api(scope, headers)
            if refusal is None and scope["method"] in BODY_METHODS:
                limit = ANCHOR_BODY_LIMIT if scope["path"] == ANCHOR_PATH else BODY_LIMIT
                body = await read_body(receive, headers, limit)
                if body is None:
                    refusal = (
                        413,
                        TOO_LARGE,
                        f"Request body is larger than the limit of {limit // (1024 * 1024)} MB",
                    )
                else:
                    receive = replay(body, receive)
        if refusal is None:
            person = scope.get("state", {}).get("person") if scope["type"] == "http" else None
            if person is not None and scope["method"] in READ_METHODS:
                send = self._recheck(scope, headers, send)
            if person is not None and tokencheck.due() is not None:
                send = _checked(scope, send)
            await self.app(scope, receive, send)
            return
        status, code, message, *extra = refusal
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        response = error_response(status, code, message, *extra)
        if status == 413:
            # The rest of the body was not read: do not keep the connection for another request.
            response.headers["Connection"] = "close"
        await response(scope, receive, send)

    def _recheck(self, scope: Scope, headers: Headers, send: Send) -> Send:
        """`send` for a read that may answer long after it was let in (a long poll of the change
        feed, directly or through `chat_api`): the caller is identified again before an answer
        that comes RECHECK_AFTER_S or more after the request, and a token revoked meanwhile gets
        401 instead (issue #32). Writes are not re-checked: their answer reports what was done."""
        assert self.identify is not None
        identify = self.identify
        started = time.monotonic()
        refused = False

        async def checked(message: Message) -> None:
            nonlocal refused
            if refused:
                return
            if (
                message["type"] == "http.response.start"
                and time.monotonic() - started >= RECHECK_AFTER_S
            ):
                try:
                    found: Any = await identify(scope, headers)
                except AnnotateError as e:
                    found = (e.http_status, e.code, e.public)
                if not isinstance(found, Person):
                    refused = True
                    status, code, text, *extra = (
                        found if isinstance(found, tuple) else (401, UNAUTHORIZED, REVOKED)
                    )
                    await error_response(status, code, text, *extra)(scope, _no_body, send)
                    return
            await send(message)

        return checked

    def _refuse(self, scope: Scope, headers: Headers) -> tuple[Any, ...] | None:
        raw_host = headers.get("host", "")
        if not self.host_ok(raw_host):
            return (403, FORBIDDEN_HOST, HostCheck.refusal(raw_host))
        origin = headers.get("origin")
        if origin is not None:
            own = {f"http://{raw_host.strip().lower()}"}
            if scope.get("scheme") in ("https", "wss"):
                own.add(f"https://{raw_host.strip().lower()}")
            if origin.strip().lower() not in own | self.origins:
                return (
                    403,
                    FORBIDDEN_ORIGIN,
                    f"Origin {origin!r} is not allowed: requests must come from pages of this "
                    "server",
                )
        return None

    async def _person(self, scope: Scope, headers: Headers, is_api: bool) -> tuple[Any, ...] | None:
        """Team mode: put the caller on the scope, or refuse (see `Identify`)."""
        assert self.identify is not None
        path = scope["path"]
        refusal = self.identify.spoofed(scope, headers)
        if refusal is not None:
            return refusal
        try:
            # A page is identified again each time: a refused one goes to the sign-in page.
            found = await self.identify(scope, headers, remembered=is_api)
        except AnnotateError as e:
            # The token lookup failed (PostgreSQL down: StoreUnreachableError): the answer the
            # routes give for it, 503, rather than a 500 and a traceback for every request.
            log.error("%s %s: %s", scope["method"], path, e)
            return (e.http_status, e.code, e.public)
        if isinstance(found, tuple):
            return found
        if found is not None:
            scope["state"]["person"] = found
            return None
        if path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX):
            return None
        if not is_api and scope["method"] in READ_METHODS:
            # A page: to the sign-in page, which comes back here.
            target = path + (
                "?" + scope["query_string"].decode("latin-1") if scope.get("query_string") else ""
            )
            where = f"{SIGNIN_PATH}?next={quote(target, safe='/')}"
            return (303, UNAUTHORIZED, "Sign in first", {"Location": where})
        return (
            401,
            UNAUTHORIZED,
            "Sign in: send a personal token as 'Authorization: Bearer TOKEN', or sign in at "
            f"{SIGNIN_PATH}",
        )

    def _refuse_api(self, scope: Scope, headers: Headers) -> tuple[Any, ...] | None:
        if headers.get("sec-fetch-site") == "cross-site":
            return (403, FORBIDDEN_ORIGIN, "Cross-site requests are not allowed")
        query = scope.get("query_string", b"")
        if b"%00" in query or b"\x00" in query:
            # No filter matches a NUL, and PostgreSQL's text cannot hold one: refused alike on
            # both backends (issue #32).
            for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
                if "\x00" in name + value:
                    return (400, INVALID, f"{name.strip(chr(0)) or 'a parameter'} must not "
                            "contain NUL characters")  # fmt: skip
        if self.identify is None:
            sent = headers.get(TOKEN_HEADER)
            if sent is None:
                return (401, UNAUTHORIZED, f"Missing {TOKEN_HEADER} header")
            # Header values arrive as latin-1; compare bytes in constant time.
            if not hmac.compare_digest(sent.encode("latin-1"), self.token().encode("latin-1")):
                return (
                    401,
                    UNAUTHORIZED,
                    f"Wrong {TOKEN_HEADER}: reload the page to get the new one",
                )
        method, path = scope["method"], scope["path"]
        allowed = self.methods(path)
        if allowed is None:
            return (404, NOT_FOUND, f"No route {path}")
        allowed = frozenset(allowed)
        if method not in allowed and not (method == "HEAD" and "GET" in allowed):
            return (
                405,
                METHOD_NOT_ALLOWED,
                f"Method {method} is not allowed on {path}",
                {"Allow": allow_header(allowed)},
            )
        if self.read_only and method in WRITE_METHODS and path not in READ_ONLY_POSTS:
            return (
                405,
                READ_ONLY,
                "This server is read-only (--read-only): notes cannot be changed here",
                {"Allow": allow_header(allowed & frozenset(READ_METHODS))},
            )
        if method in BODY_METHODS and (method != "DELETE" or _has_body(headers)):
            content_type = headers.get("content-type", "")
            media, _, params = content_type.partition(";")
            if method == "PUT" and path.endswith(SCREENSHOT_SUFFIX):
                # A note's screenshot is sent as the image (issue #30); not a "simple" request
                # type either, so a cross-site page cannot send one without a preflight.
                if media.strip().lower() == "image/webp":
                    return None
                return (
                    415,
                    UNSUPPORTED_MEDIA_TYPE,
                    f"A screenshot is sent as image/webp, got {content_type or 'none'!r}",
                )
            charset = params.strip().lower().replace(" ", "")
            if media.strip().lower() != "application/json" or charset not in (
                "",
                "charset=utf-8",
                'charset="utf-8"',
            ):
                shown = content_type or "none"
                return (
                    415,
                    UNSUPPORTED_MEDIA_TYPE,
                    f"Request bodies must be application/json (UTF-8), got {shown!r}",
                )
        return None


async def in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` in the thread pool, with the request's token check
    (annotate/tokencheck.py) in the same call: before `fn` unless its first round trip carries
    it, after it when none did. The routes' one thread-pool call a request (annotate/web/app.py):
    a hop of its own for the check would cost as much CPU again as the query (issue #31)."""
    check = tokencheck.due()
    if check is None:
        return await run_in_threadpool(fn, *args, **kwargs)

    def checked() -> Any:
        if not check.carried:
            check.run()
        answer = fn(*args, **kwargs)
        check.run()  # nothing when a round trip of `fn` made it
        return answer

    return await run_in_threadpool(checked)


def _checked(scope: Scope, send: Send) -> Send:
    """`send` that makes the request's token check before its answer when no round trip of the
    route carried it (a page, a route that read nothing): 401 instead when it is refused."""
    refused = False

    async def checked(message: Message) -> None:
        nonlocal refused
        if refused:
            return
        check = tokencheck.due()
        if message["type"] == "http.response.start" and check is not None:
            try:
                await run_in_threadpool(check.run)
            except AnnotateError as e:
                refused = True
                await error_response(e.http_status, e.code, e.public)(scope, _no_body, send)
                return
        await send(message)

    return checked


async def _no_body() -> Message:
    return {"type": "http.disconnect"}


def _has_body(headers: Headers) -> bool:
    return "transfer-encoding" in headers or headers.get("content-length", "0") not in ("", "0")


async def read_body(receive: Receive, headers: Headers, limit: int) -> bytes | None:
    """The whole body, or None when it is over `limit` (then up to DRAIN_LIMIT more is dropped)."""
    declared = headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        await _drain(receive, int(declared))
        return None
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            # Counted as it streams: a Content-Length that lies or is missing changes nothing.
            if message.get("more_body", False):
                await _drain(receive, DRAIN_LIMIT)
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _drain(receive: Receive, up_to: int) -> None:
    if up_to > DRAIN_LIMIT:
        return
    dropped = 0
    while dropped <= up_to:
        message = await receive()
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def replay(body: bytes, receive: Receive) -> Receive:
    """`receive` that first hands over `body`, already read (`read_body`), as one message."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


class CatchAll:
    """Any exception a route did not expect: logged here, answered with a bare 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except ClientDisconnect:
            return
        except Exception:
            log.exception("Error while answering %s %s", scope.get("method"), scope.get("path"))
            if not started:
                response = error_response(500, INTERNAL, "internal error")
                await response(scope, receive, send)
