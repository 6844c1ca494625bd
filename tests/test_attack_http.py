"""The attack suite, HTTP side (issue #17 "Must show"): every API route under every attack, on
`annotate serve`'s app and through a real `mkdocs serve` with the plugin.

Each attack asserts the exact answer (status and `{error, code}`) and that the store is unchanged:
no note, reply, status, review or change-feed row was written. The routes are read from
`openapi.json`, so a route added later is attacked too (`test_every_route_is_attacked`).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

import annotate
from annotate import __version__
from annotate.store import Store
from annotate.web import create_app
from annotate.web.openapi import openapi

from .conftest import element_note, text_note
from .test_plugin_serve import FIXTURE, DevServer, note_on_install

TOKEN = "attack-token-0123456789abcdef"
BASE = "http://127.0.0.1:8000"
API = "/__annotate/api"
MB = 1024 * 1024

# Every API route with a body that succeeds when nothing is wrong with the request: a refusal
# below is the attack's doing. {a}, {p}, {r}: an annotation, a page note and a review that exist.
SHOT = (Path(__file__).parent / "fixtures" / "screenshots" / "simple-lossy.webp").read_bytes()
ROUTES: list[tuple[str, str, dict[str, Any] | bytes | None]] = [
    ("GET", "/annotations", None),
    ("POST", "/annotations", text_note()),
    ("GET", "/annotations/{a}", None),
    ("PATCH", "/annotations/{a}", {"note": "changed"}),
    ("DELETE", "/annotations/{a}", None),
    ("POST", "/annotations/{a}/replies", {"message": "planted"}),
    ("POST", "/annotations/{a}/status", {"action": "start"}),
    ("GET", "/annotations/{a}/history", None),
    ("GET", "/page-notes", None),
    ("POST", "/page-notes", {"pageUrl": "/", "note": "planted"}),
    ("GET", "/page-notes/{p}", None),
    ("PATCH", "/page-notes/{p}", {"note": "changed"}),
    ("DELETE", "/page-notes/{p}", None),
    ("POST", "/page-notes/{p}/replies", {"message": "planted"}),
    ("POST", "/page-notes/{p}/status", {"action": "start"}),
    ("GET", "/page-notes/{p}/history", None),
    ("GET", "/reviews", None),
    ("POST", "/reviews", {"mode": "edit", "message": "planted"}),
    ("GET", "/reviews/{r}", None),
    ("GET", "/reviews/{r}/changes", None),
    ("POST", "/anchor", {"pageUrl": "/guide/install/", "text": "Run pip install it"}),
    ("GET", "/export", None),
    ("GET", "/changes", None),
    ("GET", "/summary", None),
    ("POST", "/shown", {"seq": 4, "viewer": "v1"}),  # seed's show_annotation: the 4th change
    # Issue #30: a note's screenshot, sent as the WebP image itself.
    ("GET", "/screenshots", None),
    ("GET", "/annotations/{a}/screenshot", None),
    ("PUT", "/annotations/{a}/screenshot", SHOT),
    ("DELETE", "/annotations/{a}/screenshot", None),
    ("GET", "/page-notes/{p}/screenshot", None),
    ("PUT", "/page-notes/{p}/screenshot", SHOT),
    ("DELETE", "/page-notes/{p}/screenshot", None),
]
WRITES = [route for route in ROUTES if route[0] != "GET"]
# Writes whose handler reads a JSON body (a DELETE's body is never read).
# The JSON-body attacks; a screenshot's body is the image (tests/test_screenshots.py).
BODY_ROUTES = [route for route in WRITES if isinstance(route[2], dict)]
ROUTE_IDS = [f"{method} {path}" for method, path, _ in ROUTES]


def ids_of(routes: list[tuple[str, str, Any]]) -> list[str]:
    return [f"{method} {path}" for method, path, _ in routes]


# -- fixtures -----------------------------------------------------------------------------------


def make_site(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "index.html").write_text("<html><body><p>Hello</p></body></html>")
    return root


def seed(store: Store) -> dict[str, str]:
    """One annotation, one page note, one review and one show_annotation: something for every
    `{id}` route, and the show the `shown` route acknowledges."""
    a = store.add_annotation(text_note())
    p = store.add_page_note({"pageUrl": "/guide/install/", "note": "Split it"})
    r = store.create_review({"mode": "edit"})
    store.show_annotation(a.id, wait=0)
    assert store.changes(0)[1] == 4
    store.screenshots.attach(a.id, SHOT)
    store.screenshots.attach(p.id, SHOT)
    return {"a": a.id, "p": p.id, "r": r.id}


# The attacks store nothing, which each test checks, so they share one store and app (opening one
# for each of over a thousand cases would be most of the module's run). The tests that write get a
# fresh one.


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    s = annotate.open(tmp_path_factory.mktemp("attacked"))
    yield s
    s.close()


@pytest.fixture(scope="module")
def seeded(store: Store) -> dict[str, str]:
    return seed(store)


@pytest.fixture(scope="module")
def client(store: Store, seeded: dict[str, str]) -> Iterator[TestClient]:
    site = make_site(store.project_dir / "site")
    with TestClient(create_app(store, token=TOKEN, site_dir=site), base_url=BASE) as c:
        yield c


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str]]]:
    (tmp_path / "fresh").mkdir()
    s = annotate.open(tmp_path / "fresh")
    site = make_site(tmp_path / "site")
    with TestClient(create_app(s, token=TOKEN, site_dir=site), base_url=BASE) as c:
        yield c, seed(s)
    s.close()


def snapshot(store: Store) -> tuple[Any, ...]:
    """Everything a write could change."""
    annotations, notes = store.all_items(include_resolved=True)
    return (
        [a.to_dict() for a in annotations],
        [n.to_dict() for n in notes],
        [r.to_dict() for r in store.list_reviews()],
        store.changes(0),
        store.screenshots.list(),
    )


def url(path: str, seeded: dict[str, str]) -> str:
    return API + path.format(**seeded)


def refused(response: httpx.Response, status: int, code: str, error: str | None = None) -> None:
    """The one error shape, with this status and code (and, when given, this exact message)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    data = response.json()
    assert set(data) == {"error", "code"}, data
    assert data["code"] == code, data
    if error is not None:
        assert data["error"] == error
    assert "Traceback" not in response.text


def send(
    client: TestClient | httpx.Client,
    method: str,
    path: str,
    body: dict[str, Any] | bytes | None,
    headers: dict[str, str],
    content: bytes | None = None,
) -> httpx.Response:
    if content is None and isinstance(body, bytes):
        content, headers = body, {"Content-Type": "image/webp", **headers}
    elif content is None and body is not None:
        content = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", **headers}
    return client.request(method, path, content=content, headers=headers)


GOOD = {"X-Annotate-Token": TOKEN}


def test_every_route_is_attacked() -> None:
    documented = {
        (method.upper(), path.removeprefix(API))
        for path, ops in openapi(__version__)["paths"].items()
        if path.startswith(API + "/")
        for method in ops
    }
    listed = {
        (m, p.replace("{a}", "{id}").replace("{p}", "{id}").replace("{r}", "{id}"))
        for m, p, _ in ROUTES
    }
    assert listed == documented


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_the_unattacked_request_succeeds(
    fresh: tuple[TestClient, dict[str, str]], method: str, path: str, body: Any
) -> None:
    client, seeded = fresh
    r = send(client, method, url(path, seeded), body, GOOD)
    assert 200 <= r.status_code < 300, r.text


# -- who may ask: token, Origin, Host, fetch metadata --------------------------------------------

TOKENS = {
    "missing": (None, "Missing X-Annotate-Token header"),
    "empty": ("", "Wrong X-Annotate-Token: reload the page to get the new one"),
    "wrong": ("x" * len(TOKEN), "Wrong X-Annotate-Token: reload the page to get the new one"),
    "prefix": (TOKEN[:-1], "Wrong X-Annotate-Token: reload the page to get the new one"),
    "upper": (TOKEN.upper(), "Wrong X-Annotate-Token: reload the page to get the new one"),
    "padded": (f"{TOKEN}x", "Wrong X-Annotate-Token: reload the page to get the new one"),
    "latin-1": (TOKEN[:-1] + "é", "Wrong X-Annotate-Token: reload the page to get the new one"),
}


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_token(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    token: str,
) -> None:
    sent, error = TOKENS[token]
    headers = {} if sent is None else {"X-Annotate-Token": sent}
    if token == "latin-1":
        headers = {"X-Annotate-Token": sent.encode("latin-1")}  # type: ignore[union-attr,dict-item]
    before = snapshot(store)
    refused(send(client, method, url(path, seeded), body, headers), 401, "unauthorized", error)
    assert snapshot(store) == before


ORIGINS = [
    "https://evil.example",
    "null",
    "http://127.0.0.1:9999",
    "http://localhost:8000",
    "https://127.0.0.1:8000",
    "http://127.0.0.1:8000.evil.example",
    "http://127.0.0.1:8000/",
    "",
]


@pytest.mark.parametrize("origin", ORIGINS)
@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_foreign_origin(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    origin: str,
) -> None:
    before = snapshot(store)
    r = send(client, method, url(path, seeded), body, {**GOOD, "Origin": origin})
    error = f"Origin {origin!r} is not allowed: requests must come from pages of this server"
    refused(r, 403, "forbidden_origin", error)
    assert snapshot(store) == before


HOSTS = [
    "attacker.example",
    "attacker.example:8000",
    "127.0.0.1.nip.io:8000",
    "localhost.attacker.example",
    "2130706433",  # 127.0.0.1 as a number: a browser's name, not ours
    "0x7f.1",
    "127.0.0.1:8000@attacker.example",
    "127.0.0.1:80x",
    "[::1",
    "",
]
HOST_ERROR = (
    "Host {!r} is not allowed: use a loopback address such as 127.0.0.1 or localhost, or the host "
    "the server was started with (--host, mkdocs serve -a)"
)


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_rebinding_host(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    host: str,
) -> None:
    before = snapshot(store)
    r = send(client, method, url(path, seeded), body, {**GOOD, "Host": host})
    refused(r, 403, "forbidden_host", HOST_ERROR.format(host))
    assert snapshot(store) == before


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize(
    "path", ["/", "/index.html", "/missing/", "/__annotate/", "/__annotate/overlay/annotate.js"]
)
def test_rebinding_host_gets_no_page(client: TestClient, path: str, host: str) -> None:
    r = client.get(path, headers={"Host": host})
    refused(r, 403, "forbidden_host", HOST_ERROR.format(host))
    assert TOKEN not in r.text


@pytest.mark.parametrize(("method", "path", "body"), ROUTES, ids=ROUTE_IDS)
def test_cross_site_fetch(
    client: TestClient, store: Store, seeded: dict[str, str], method: str, path: str, body: Any
) -> None:
    before = snapshot(store)
    r = send(client, method, url(path, seeded), body, {**GOOD, "Sec-Fetch-Site": "cross-site"})
    refused(r, 403, "forbidden_origin", "Cross-site requests are not allowed")
    assert snapshot(store) == before


# -- methods and routes -------------------------------------------------------------------------


def allowed_methods() -> dict[str, str]:
    """Path (with {id}) → the Allow header its 405 must carry, from openapi.json."""
    order = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
    out = {}
    for path, ops in openapi(__version__)["paths"].items():
        if path.startswith(API + "/"):
            methods = {m.upper() for m in ops} | ({"HEAD"} if "get" in ops else set())
            out[path.removeprefix(API)] = ", ".join(m for m in order if m in methods)
    return out


NOT_TAKEN = [
    (path, method)
    for path, allow in allowed_methods().items()
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
    if method not in allow.split(", ")
]


@pytest.mark.parametrize(("path", "method"), NOT_TAKEN)
def test_methods_a_route_does_not_take(
    client: TestClient, store: Store, seeded: dict[str, str], path: str, method: str
) -> None:
    allow = allowed_methods()[path]
    concrete = API + path.replace("{id}", seeded["p" if "page-notes" in path else "a"])
    before = snapshot(store)
    # A text/plain body too: the method is refused before the content type is looked at.
    r = client.request(
        method, concrete, content=b"x", headers={**GOOD, "Content-Type": "text/plain"}
    )
    error = f"Method {method} is not allowed on {concrete}"
    refused(r, 405, "method_not_allowed", error)
    assert r.headers["allow"] == allow
    assert snapshot(store) == before


@pytest.mark.parametrize("method", ["GET", "POST", "PUT", "DELETE"])
@pytest.mark.parametrize(
    "path", ["/nope", "/annotations/a/b/c", "/anchor/x", "/summary/", "/__annotate/api"]
)
def test_unknown_api_routes(client: TestClient, store: Store, path: str, method: str) -> None:
    target = path if path.startswith("/__annotate") else API + path
    before = snapshot(store)
    r = client.request(
        method, target, content=b"{}", headers={**GOOD, "Content-Type": "text/plain"}
    )
    refused(r, 404, "not_found", f"No route {target}")
    assert snapshot(store) == before
    # Without the token the answer says so first, and names no route.
    refused(client.request(method, target), 401, "unauthorized")


# -- what is sent: content types, sizes, malformed JSON ------------------------------------------

CONTENT_TYPES = [
    "text/plain",
    "text/plain;charset=UTF-8",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/json; charset=utf-16",
    "application/json; charset=iso-8859-1",
    "application/jsonx",
    "application/json-patch+json",
    "text/json",
    None,
]


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
@pytest.mark.parametrize(("method", "path", "body"), BODY_ROUTES, ids=ids_of(BODY_ROUTES))
def test_content_types(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    content_type: str | None,
) -> None:
    headers = dict(GOOD)
    if content_type is not None:
        headers["Content-Type"] = content_type
    before = snapshot(store)
    r = client.request(
        method, url(path, seeded), content=json.dumps(body).encode(), headers=headers
    )
    shown = content_type or "none"
    error = f"Request bodies must be application/json (UTF-8), got {shown!r}"
    refused(r, 415, "unsupported_media_type", error)
    assert snapshot(store) == before


def padded(body: dict[str, Any], size: int) -> bytes:
    """`body` with one more field that makes it `size` bytes: refused for its size, not its
    fields (the size is checked first)."""
    head = json.dumps(body)[:-1] + ', "pad": "'
    return (head + "x" * (size - len(head) - 2) + '"}').encode()


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize(("method", "path", "body"), BODY_ROUTES, ids=ids_of(BODY_ROUTES))
def test_oversized_bodies(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    streamed: bool,
) -> None:
    limit = 8 if path == "/anchor" else 1
    raw = padded(body, limit * MB + 1)
    content: Any = (
        iter([raw[i : i + 65536] for i in range(0, len(raw), 65536)]) if streamed else raw
    )
    before = snapshot(store)
    r = client.request(
        method,
        url(path, seeded),
        content=content,
        headers={**GOOD, "Content-Type": "application/json"},
    )
    refused(r, 413, "too_large", f"Request body is larger than the limit of {limit} MB")
    assert snapshot(store) == before


def test_a_body_at_the_limit_is_read(client: TestClient, store: Store) -> None:
    r = client.post(
        f"{API}/page-notes",
        content=padded({"pageUrl": "/", "note": "x"}, MB),
        headers={**GOOD, "Content-Type": "application/json"},
    )
    # Read whole and judged by its fields: the padding is an unknown field.
    refused(r, 400, "invalid", 'Unknown field "pad" in page note')


UTF8_ERROR = (
    "Request body must be UTF-8 (UTF-16, UTF-32 and encoded surrogates are refused): the byte "
    "0x{:02x} at offset {} is not valid UTF-8"
)
WIDE_ERROR = "Request body must be UTF-8 JSON without a byte order mark; this one looks like UTF-16 or UTF-32"
NOTE = '{"pageUrl": "/", "note": "'
MALFORMED: dict[str, tuple[bytes, str]] = {
    # name: (body, exact error); all are 400 invalid_json
    "empty": (b"", "Request body is not valid JSON: Expecting value: line 1 column 1 (char 0)"),
    "truncated": (
        b'{"note": "x"',
        "Request body is not valid JSON: Expecting ',' delimiter: line 1 column 13 (char 12)",
    ),
    "trailing data": (
        b'{"note": "x"} {}',
        "Request body is not valid JSON: Extra data: line 1 column 15 (char 14)",
    ),
    "single quotes": (
        b"{'note': 'x'}",
        "Request body is not valid JSON: Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1)",
    ),
    "deep nesting": (
        b'{"note": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        "Request body is nested too deeply",
    ),
    "NaN": (b'{"note": NaN}', "Request body is not valid JSON: NaN is not valid JSON"),
    "Infinity": (
        b'{"note": Infinity}',
        "Request body is not valid JSON: Infinity is not valid JSON",
    ),
    "-Infinity": (
        b'{"note": -Infinity}',
        "Request body is not valid JSON: -Infinity is not valid JSON",
    ),
    "overflowing float": (
        b'{"note": 1e999}',
        "Request body is not valid JSON: the number 1e999 is out of range",
    ),
    "huge integer": (
        b'{"note": ' + b"9" * 5000 + b"}",
        "Request body is not valid JSON: a number has more than 4300 digits",
    ),
    "duplicate keys": (
        b'{"note": "a", "note": "b"}',
        "Request body is not valid JSON: the key 'note' appears twice in one object",
    ),
    "nested duplicate keys": (
        b'{"quote": {"exact": "a", "exact": "b"}}',
        "Request body is not valid JSON: the key 'exact' appears twice in one object",
    ),
    "invalid UTF-8": (NOTE.encode() + b'\xff"}', UTF8_ERROR.format(0xFF, len(NOTE))),
    "truncated UTF-8": (NOTE.encode() + b'\xc3"}', UTF8_ERROR.format(0xC3, len(NOTE))),
    "overlong UTF-8": (NOTE.encode() + b'\xc0\xaf"}', UTF8_ERROR.format(0xC0, len(NOTE))),
    "surrogate bytes": (NOTE.encode() + b'\xed\xa0\x80"}', UTF8_ERROR.format(0xED, len(NOTE))),
    "escaped lone surrogate": (
        b'{"pageUrl": "/", "note": "x \\ud800 y"}',
        "Request body holds an unpaired surrogate (\\ud800-\\udfff)",
    ),
    "escaped low surrogate": (
        b'{"pageUrl": "/", "note": "\\udc00"}',
        "Request body holds an unpaired surrogate (\\ud800-\\udfff)",
    ),
    "UTF-16 with BOM": (
        '{"pageUrl": "/", "note": "x"}'.encode("utf-16"),
        UTF8_ERROR.format(0xFF, 0),
    ),
    "UTF-16LE": ('{"pageUrl": "/", "note": "x"}'.encode("utf-16-le"), WIDE_ERROR),
    "UTF-16BE": ('{"pageUrl": "/", "note": "x"}'.encode("utf-16-be"), WIDE_ERROR),
    "UTF-32": ('{"pageUrl": "/", "note": "x"}'.encode("utf-32"), UTF8_ERROR.format(0xFF, 0)),
    "UTF-32LE": ('{"pageUrl": "/", "note": "x"}'.encode("utf-32-le"), WIDE_ERROR),
    "UTF-8 BOM": (b"\xef\xbb\xbf" + b'{"pageUrl": "/", "note": "x"}', WIDE_ERROR),
    "raw control character": (
        NOTE.encode() + b'\x00"}',
        "Request body is not valid JSON: Invalid control character at: line 1 column "
        f"{len(NOTE) + 1} (char {len(NOTE)})",
    ),
}
NOT_OBJECTS = [b"[]", b'"note"', b"null", b"1", b"true"]


@pytest.mark.parametrize("case", MALFORMED)
@pytest.mark.parametrize(("method", "path", "body"), BODY_ROUTES, ids=ids_of(BODY_ROUTES))
def test_malformed_json(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    case: str,
) -> None:
    raw, error = MALFORMED[case]
    before = snapshot(store)
    r = client.request(
        method,
        url(path, seeded),
        content=raw,
        headers={**GOOD, "Content-Type": "application/json; charset=utf-8"},
    )
    refused(r, 400, "invalid_json", error)
    assert snapshot(store) == before


@pytest.mark.parametrize("raw", NOT_OBJECTS)
@pytest.mark.parametrize(("method", "path", "body"), BODY_ROUTES, ids=ids_of(BODY_ROUTES))
def test_json_that_is_not_an_object(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    raw: bytes,
) -> None:
    before = snapshot(store)
    r = client.request(
        method,
        url(path, seeded),
        content=raw,
        headers={**GOOD, "Content-Type": "application/json"},
    )
    refused(r, 400, "invalid", "Request body must be a JSON object")
    assert snapshot(store) == before


# -- hostile ids and page URLs ------------------------------------------------------------------

HOSTILE_IDS = [
    "%2e%2e",
    "a';DROP TABLE annotations;--",
    'a"b',
    "a" * 101,
    "%00",
    "é",
    "a%20b",
    "-x",
    "%2Fetc%2Fpasswd",
    "*",
    "%25",
]
ID_ROUTES = [route for route in ROUTES if "{" in route[1]]


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
@pytest.mark.parametrize(("method", "path", "body"), ID_ROUTES, ids=ids_of(ID_ROUTES))
def test_hostile_ids(
    client: TestClient,
    store: Store,
    seeded: dict[str, str],
    method: str,
    path: str,
    body: Any,
    hostile: str,
) -> None:
    target = API + path.replace("{a}", hostile).replace("{p}", hostile).replace("{r}", hostile)
    before = snapshot(store)
    r = send(client, method, target, body, GOOD)
    # No item has such an id (and "%2F" never reaches another route): 404, nothing touched.
    refused(r, 404, "not_found")
    assert snapshot(store) == before


HOSTILE_URLS: list[Any] = [
    "http://evil.example/",
    "//evil.example/x",
    "javascript:alert(1)",
    "/../../etc/passwd",
    "/guide/../../secret",
    "/a?b=1",
    "/a#b",
    "/a\\b",
    "/a b",
    "/a\nb",
    "/\x00",
    "",
    "   ",
    "/" + "a" * 2048,
    5,
    ["/"],
    None,
]


def _page_url_bodies(page_url: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("/annotations", text_note(pageUrl=page_url)),
        ("/annotations", element_note(pageUrl=page_url)),
        ("/page-notes", {"pageUrl": page_url, "note": "planted"}),
        ("/anchor", {"pageUrl": page_url, "text": "x"}),
    ]


@pytest.mark.parametrize(
    "index", range(4), ids=["text note", "element note", "page note", "anchor"]
)
@pytest.mark.parametrize("page_url", HOSTILE_URLS, ids=repr)
def test_hostile_page_urls(client: TestClient, store: Store, page_url: Any, index: int) -> None:
    path, body = _page_url_bodies(page_url)[index]
    before = snapshot(store)
    r = client.post(API + path, json=body, headers=GOOD)
    refused(r, 400, "invalid")
    assert "pageUrl" in r.json()["error"]
    assert snapshot(store) == before


# A filter takes a page written any way (issue #14): a full URL, a query or fragment, a path
# without its leading `/` name the page at their path, which is only read, never stored.
NAMES_A_PAGE = {
    "http://evil.example/": "/",
    "//evil.example/x": "/evil.example/x",
    "javascript:alert(1)": "/javascript:alert(1)",
    "/a?b=1": "/a",
    "/a#b": "/a",
}


@pytest.mark.parametrize("route", ["/annotations", "/page-notes"])
@pytest.mark.parametrize(
    "page_url",
    [u for u in HOSTILE_URLS if isinstance(u, str) and u and u not in NAMES_A_PAGE],
    ids=repr,
)
def test_hostile_page_filters(client: TestClient, route: str, page_url: str) -> None:
    r = client.get(API + route, params={"page": page_url}, headers=GOOD)
    refused(r, 400, "invalid")
    assert r.json()["error"].startswith("page ")


@pytest.mark.parametrize("route", ["/annotations", "/page-notes"])
@pytest.mark.parametrize("page_url", sorted(NAMES_A_PAGE), ids=repr)
def test_page_filters_written_as_urls_read_their_path(
    client: TestClient, store: Store, route: str, page_url: str
) -> None:
    r = client.get(API + route, params={"page": page_url}, headers=GOOD)
    assert r.status_code == 200, r.text
    key = "annotations" if route == "/annotations" else "pageNotes"
    wanted = NAMES_A_PAGE[page_url]
    assert all(item["pageUrl"] in (wanted, wanted + "/") for item in r.json()[key])


def test_page_urls_the_file_system_cannot_hold(
    fresh: tuple[TestClient, dict[str, str]], tmp_path: Path
) -> None:
    """A segment over 255 bytes is a valid page URL, but no file can have its name: looking for
    the page's Markdown file must find none, not fail (it answered 500 when docs/ existed)."""
    client, _ = fresh
    (tmp_path / "fresh" / "docs").mkdir()  # the project of `fresh`
    long = "/" + "a" * 300 + "/"
    for path, body in _page_url_bodies(long):
        assert client.post(API + path, json=body, headers=GOOD).status_code in (200, 201), path
    assert client.get(f"{API}/annotations", params={"page": long}, headers=GOOD).status_code == 200


# -- what comes back: script and markup in every field -------------------------------------------

PAYLOADS = [
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    '"><svg onload=alert(1)>',
    "'><iframe srcdoc='<script>alert(1)</script>'>",
    "javascript:alert(1)",
    "<!--<script>alert(1)</script>-->",
    "]]><script>alert(1)</script>",
    '<a href="javascript:alert(1)">click</a>',
    "<base href=//evil.example/>",
    '<meta http-equiv="refresh" content="0;url=//evil.example">',
    "<style>*{display:none}</style>",
    "<form action=//evil.example><button>Accept</button></form>",
    "&lt;script&gt;alert(1)&lt;/script&gt;",
    "{{constructor.constructor('alert(1)')()}}",
    "\u2028<script>\u2029",
]
# Page URLs are site paths (no spaces): what a hostile one can still hold.
URL_PAYLOAD = "/\"'><svg/onload=alert(1)>/</script>/"


def fill(client: TestClient, text: str, page_url: str) -> dict[str, str]:
    """One item of every kind, `text` in every field a client can write."""
    h = GOOD
    a = client.post(
        f"{API}/annotations",
        json=text_note(
            pageUrl=page_url,
            pageTitle=text,
            note=text,
            intent="replace",
            suggestion=text,
            selectedText=text,
            quote={"exact": text, "prefix": text, "suffix": text},
            author=text,
        ),
        headers=h,
    ).json()
    e = client.post(
        f"{API}/annotations",
        json=element_note(
            pageUrl=page_url,
            pageTitle=text,
            note=text,
            author=text,
            elementSelector={
                "cssSelector": text,
                "xpath": text,
                "tagName": "img",
                "description": text,
                "attributes": {text: text},
                "outerHtmlPreview": text,
            },
        ),
        headers=h,
    ).json()
    for id in (a["id"], e["id"]):
        client.post(
            f"{API}/annotations/{id}/replies", json={"message": text, "author": text}, headers=h
        )
    client.post(
        f"{API}/annotations/{a['id']}/status",
        json={"action": "address", "replacedText": text},
        headers=h,
    )
    client.post(
        f"{API}/annotations/{a['id']}/status", json={"action": "reopen", "note": text}, headers=h
    )
    p = client.post(
        f"{API}/page-notes",
        json={"pageUrl": page_url, "note": text, "pageTitle": text, "author": text},
        headers=h,
    ).json()
    client.post(
        f"{API}/page-notes/{p['id']}/replies",
        json={"message": text, "author": text, "role": "agent"},
        headers=h,
    )
    review = client.post(
        f"{API}/reviews", json={"mode": "edit", "message": text, "author": text}, headers=h
    )
    assert review.status_code == 201, review.text
    return {"a": a["id"], "e": e["id"], "p": p["id"]}


class Structure(HTMLParser):
    """A page's elements and attribute names in order, and its text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shape: list[tuple[str, tuple[str, ...]]] = []
        self.text: list[str] = []
        self.values: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.shape.append((tag, tuple(name for name, _ in attrs)))
        self.values += [v for _, v in attrs if v]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> Structure:
    parser = Structure()
    parser.feed(html)
    parser.close()
    return parser


REVIEW_PAGE = "/__annotate/?status=open&status=in_progress&status=addressed&status=resolved"


def review_pages(root: Path, text: str, page_url: str) -> tuple[httpx.Response, httpx.Response]:
    """The review page of a store filled with `text`, and the page with `text` as its filters."""
    root.mkdir()
    store = annotate.open(root)
    try:
        with TestClient(create_app(store, token=TOKEN), base_url=BASE) as c:
            fill(c, text, page_url)
            filters = {"q": text, "page": text, "type": text}
            return c.get(REVIEW_PAGE), c.get("/__annotate/", params=filters)
    finally:
        store.close()


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_payloads_in_every_field_stay_text_on_the_review_page(tmp_path: Path, payload: str) -> None:
    """The review page with the payload in every field has exactly the elements and attributes
    it has with a plain word there: nothing the payload holds became markup."""
    hostile, reflected = review_pages(tmp_path / "hostile", payload, URL_PAYLOAD)
    plain, plain_reflected = review_pages(tmp_path / "plain", "plain", "/plain/")
    assert hostile.status_code == 200
    page, baseline = parse(hostile.text), parse(plain.text)
    assert page.shape == baseline.shape
    shown = "".join(page.text)
    # Every field the page shows, shown verbatim.
    assert shown.count(payload) >= 10
    assert URL_PAYLOAD in shown
    assert URL_PAYLOAD in page.values  # the link's href, escaped
    assert parse(reflected.text).shape == parse(plain_reflected.text).shape
    # The search box keeps what was typed (trimmed).
    assert payload.strip() in parse(reflected.text).values
    assert hostile.headers["content-security-policy"].startswith("default-src 'none'")


@pytest.mark.parametrize("payload", PAYLOADS, ids=range(len(PAYLOADS)))
def test_payloads_come_back_unchanged_from_every_export(
    fresh: tuple[TestClient, dict[str, str]], payload: str
) -> None:
    client = fresh[0]
    fill(client, payload, URL_PAYLOAD)
    for fmt, media in (
        ("json", "application/json"),
        ("w3c", 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"'),
        ("markdown", "text/markdown; charset=utf-8"),
    ):
        r = client.get(f"{API}/export", params={"format": fmt}, headers=GOOD)
        assert r.status_code == 200
        assert r.headers["content-type"] == media
        # Opened in a browser, an export is never sniffed as HTML and runs nothing.
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"
        if fmt != "markdown":
            assert _strings(r.json()) >= {payload, URL_PAYLOAD}
    listing = client.get(f"{API}/annotations", params={"status": "all"}, headers=GOOD).json()
    text, element = listing["annotations"][1:]
    for key in ("pageTitle", "note", "suggestion", "selectedText", "author", "replacedText"):
        assert text[key] == payload, key
    assert text["quote"] == {"exact": payload, "prefix": payload, "suffix": payload}
    assert element["elementSelector"]["attributes"] == {payload: payload}
    assert element["elementSelector"]["outerHtmlPreview"] == payload


def _strings(data: Any) -> set[str]:
    if isinstance(data, str):
        return {data}
    if isinstance(data, dict):
        return set().union(*(_strings(v) | _strings(k) for k, v in data.items())) if data else set()
    if isinstance(data, list):
        return set().union(*(_strings(v) for v in data)) if data else set()
    return set()


# -- framing ------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/index.html", "/missing/"])
def test_pages_with_the_overlay_cannot_be_framed_by_other_sites(
    client: TestClient, path: str
) -> None:
    r = client.get(path)
    assert "annotate-config" in r.text
    assert r.headers["content-security-policy"] == "frame-ancestors 'self'"
    assert r.headers["x-frame-options"] == "SAMEORIGIN"


def test_review_page_and_answers_cannot_be_framed(client: TestClient) -> None:
    assert "frame-ancestors 'none'" in client.get("/__annotate/").headers["content-security-policy"]
    r = client.get(f"{API}/summary", headers=GOOD)
    assert "frame-ancestors 'none'" in r.headers["content-security-policy"]


# -- through a real `mkdocs serve` with the plugin ----------------------------------------------


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    root = tmp_path_factory.mktemp("attack") / "project"
    shutil.copytree(FIXTURE, root)
    server = DevServer(root)
    yield server
    assert server.stop() == 0


def dev_snapshot(dev: DevServer) -> tuple[Any, ...]:
    with annotate.open(dev.project) as store:
        return snapshot(store)


def dev_token(dev: DevServer) -> str:
    return str(dev.config("/")["token"])


def chunks(raw: bytes, size: int = 65536) -> Iterator[bytes]:
    for i in range(0, len(raw), size):
        yield raw[i : i + size]


@pytest.mark.parametrize("streamed", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize(
    ("path", "body", "limit"),
    [
        ("/annotations", note_on_install(), 1),
        ("/page-notes", {"pageUrl": "/", "note": "x"}, 1),
        ("/anchor", {"pageUrl": "/guide/install/", "text": "x"}, 8),
    ],
    ids=["annotation", "page note", "anchor"],
)
def test_plugin_oversized_bodies(
    dev: DevServer, path: str, body: dict[str, Any], limit: int, streamed: bool
) -> None:
    raw = padded(body, int(limit * MB * 1.2))
    before = dev_snapshot(dev)
    r = dev.http.post(
        API + path,
        content=chunks(raw) if streamed else raw,
        headers={"X-Annotate-Token": dev_token(dev), "Content-Type": "application/json"},
    )
    refused(r, 413, "too_large", f"Request body is larger than the limit of {limit} MB")
    assert dev_snapshot(dev) == before


def test_plugin_reads_chunked_bodies(dev: DevServer) -> None:
    raw = json.dumps({"pageUrl": "/", "note": "sent in chunks"}).encode()
    r = dev.http.post(
        f"{API}/page-notes",
        content=chunks(raw, 7),
        headers={"X-Annotate-Token": dev_token(dev), "Content-Type": "application/json"},
    )
    assert r.status_code == 201, r.text
    with annotate.open(dev.project) as store:
        assert store.get_page_note(r.json()["id"]).note == "sent in chunks"


@pytest.mark.parametrize(
    ("headers", "content", "status", "code"),
    [
        ({}, b'{"pageUrl": "/", "note": "x"}', 401, "unauthorized"),
        (
            {"Origin": "https://evil.example"},
            b'{"pageUrl": "/", "note": "x"}',
            403,
            "forbidden_origin",
        ),
        ({"Origin": "null"}, b'{"pageUrl": "/", "note": "x"}', 403, "forbidden_origin"),
        ({"Host": "attacker.example"}, b'{"pageUrl": "/", "note": "x"}', 403, "forbidden_host"),
        (
            {"Content-Type": "text/plain"},
            b'{"pageUrl": "/", "note": "x"}',
            415,
            "unsupported_media_type",
        ),
        ({}, MALFORMED["surrogate bytes"][0], 400, "invalid_json"),
        ({}, MALFORMED["UTF-16 with BOM"][0], 400, "invalid_json"),
        ({}, MALFORMED["deep nesting"][0], 400, "invalid_json"),
        ({}, MALFORMED["duplicate keys"][0], 400, "invalid_json"),
    ],
    ids=[
        "no token",
        "foreign origin",
        "null origin",
        "rebinding host",
        "text/plain",
        "surrogate bytes",
        "UTF-16",
        "deep nesting",
        "duplicate keys",
    ],
)
def test_plugin_refusals(
    dev: DevServer, headers: dict[str, str], content: bytes, status: int, code: str
) -> None:
    sent = {"Content-Type": "application/json", **headers}
    if status != 401:
        sent["X-Annotate-Token"] = dev_token(dev)
    before = dev_snapshot(dev)
    refused(dev.http.post(f"{API}/page-notes", content=content, headers=sent), status, code)
    assert dev_snapshot(dev) == before


def test_plugin_methods(dev: DevServer) -> None:
    h = {"X-Annotate-Token": dev_token(dev)}
    r = dev.http.put(
        f"{API}/annotations", content=b"x", headers={**h, "Content-Type": "text/plain"}
    )
    refused(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "GET, HEAD, POST"
    r = dev.http.get(f"{API}/anchor", headers=h)
    refused(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "POST"


@pytest.mark.parametrize("path", ["/", "/guide/install/", "/livereload/0/0", "/css/base.css"])
def test_plugin_rebinding_host_gets_403(dev: DevServer, path: str) -> None:
    r = dev.http.get(path, headers={"Host": "attacker.example:8000"})
    refused(r, 403, "forbidden_host", HOST_ERROR.format("attacker.example:8000"))


def test_plugin_pages_cannot_be_framed(dev: DevServer) -> None:
    page = dev.http.get("/guide/install/")
    assert "annotate-config" in page.text
    assert page.headers["content-security-policy"] == "frame-ancestors 'self'"
    assert page.headers["x-frame-options"] == "SAMEORIGIN"


def test_plugin_logs_no_warning_for_our_routes(dev: DevServer) -> None:
    """MkDocs logs every answer but a 200 as a warning; ours are logged at debug (issue #14)."""
    h = {"X-Annotate-Token": dev_token(dev)}
    created = dev.http.post(f"{API}/page-notes", json={"pageUrl": "/", "note": "x"}, headers=h)
    assert created.status_code == 201
    js = dev.http.get("/__annotate/overlay/annotate.js")
    assert (
        dev.http.get(
            "/__annotate/overlay/annotate.js", headers={"If-None-Match": js.headers["etag"]}
        ).status_code
        == 304
    )
    assert dev.http.get(f"{API}/nope", headers=h).status_code == 404
    assert dev.http.get("/missing-page/").status_code == 404  # the site's own: still a warning
    dev.wait_for('"GET /missing-page/ HTTP/1.1" code 404')
    ours = [line for line in dev.lines if "WARNING" in line and "/__annotate" in line]
    assert ours == []
