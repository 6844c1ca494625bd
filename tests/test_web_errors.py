"""One error shape for every failure: exactly `{"error", "code"}` with the right status
(docs/http-api.md), as datasette's tests/test_error_shape.py pins its own."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.testclient import TestClient

import annotate
from annotate.store import Store
from annotate.web import create_app

from .conftest import text_note

TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
GOOD = {"X-Annotate-Token": TOKEN}
JSON = {**GOOD, "Content-Type": "application/json"}


@pytest.fixture
def app_client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, token=TOKEN, changes_timeout=0.2)
    with TestClient(app, base_url="http://127.0.0.1:8000") as c:
        yield c


@pytest.fixture
def read_only_client(store: Store) -> TestClient:
    return TestClient(
        create_app(store, token=TOKEN, read_only=True), base_url="http://127.0.0.1:8000"
    )


# (method, path, headers, body) -> (status, code). `{id}` is an existing open annotation.
CASES: dict[str, tuple[str, str, dict[str, str], Any, int, str]] = {
    "no token": ("GET", f"{API}/annotations", {}, None, 401, "unauthorized"),
    "wrong token": (
        "GET",
        f"{API}/summary",
        {"X-Annotate-Token": "x" * 27},
        None,
        401,
        "unauthorized",
    ),
    "foreign origin": (
        "POST",
        f"{API}/annotations",
        {**JSON, "Origin": "https://evil.example"},
        b"{}",
        403,
        "forbidden_origin",
    ),
    "rebinding host": (
        "GET",
        f"{API}/summary",
        {**GOOD, "Host": "evil.example"},
        None,
        403,
        "forbidden_host",
    ),
    "unknown route": ("GET", f"{API}/nothing", GOOD, None, 404, "not_found"),
    "unknown prefix route": ("GET", "/__annotate/nothing", GOOD, None, 404, "not_found"),
    "unknown annotation": ("GET", f"{API}/annotations/a_nope", GOOD, None, 404, "not_found"),
    "invalid id": ("GET", f"{API}/annotations/%3Cscript%3E", GOOD, None, 404, "not_found"),
    "unknown page note": (
        "PATCH",
        f"{API}/page-notes/p_nope",
        JSON,
        b'{"note":"x"}',
        404,
        "not_found",
    ),
    "unknown review": ("GET", f"{API}/reviews/rv_nope", GOOD, None, 404, "not_found"),
    "wrong method": ("PUT", f"{API}/summary", JSON, b"{}", 405, "method_not_allowed"),
    "wrong method, no body": (
        "DELETE",
        f"{API}/annotations",
        GOOD,
        None,
        405,
        "method_not_allowed",
    ),
    "transition": (
        "POST",
        f"{API}/annotations/{{id}}/status",
        JSON,
        b'{"action":"reopen"}',
        409,
        "invalid_transition",
    ),
    "too large": (
        "POST",
        f"{API}/annotations",
        JSON,
        b"[" + b" " * 1024 * 1024 + b"]",
        413,
        "too_large",
    ),
    "text/plain": (
        "POST",
        f"{API}/annotations",
        {**GOOD, "Content-Type": "text/plain"},
        b"{}",
        415,
        "unsupported_media_type",
    ),
    "no content type": ("POST", f"{API}/reviews", GOOD, b"{}", 415, "unsupported_media_type"),
    "latin-1 json": (
        "POST",
        f"{API}/reviews",
        {**GOOD, "Content-Type": "application/json; charset=latin-1"},
        b"{}",
        415,
        "unsupported_media_type",
    ),
    "broken json": ("POST", f"{API}/annotations", JSON, b'{"pageUrl": ', 400, "invalid_json"),
    "NaN": (
        "POST",
        f"{API}/annotations",
        JSON,
        b'{"position": {"start": NaN}}',
        400,
        "invalid_json",
    ),
    "not utf-8": ("POST", f"{API}/page-notes", JSON, b'{"note": "\xff"}', 400, "invalid_json"),
    "lone surrogate": (
        "POST",
        f"{API}/page-notes",
        JSON,
        b'{"pageUrl": "/", "note": "\\ud800"}',
        400,
        "invalid_json",
    ),
    "deep nesting": (
        "POST",
        f"{API}/page-notes",
        JSON,
        b"[" * 100_000 + b"]" * 100_000,
        400,
        "invalid_json",
    ),
    "huge number": (
        "POST",
        f"{API}/annotations",
        JSON,
        b'{"position": {"start": 1' + b"0" * 5000 + b"}}",
        400,
        "invalid_json",
    ),
    "not an object": ("POST", f"{API}/annotations", JSON, b"[1, 2]", 400, "invalid"),
    "validation": (
        "POST",
        f"{API}/annotations",
        JSON,
        b'{"pageUrl": "/", "selectedText": "x"}',
        400,
        "invalid",
    ),
    "bad query": ("GET", f"{API}/annotations?status=done", GOOD, None, 400, "invalid"),
    "bad format": ("GET", f"{API}/export?format=pdf", GOOD, None, 400, "invalid"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_error_shape(app_client: TestClient, store: Store, case: str) -> None:
    method, path, headers, body, status, code = CASES[case]
    id = store.add_annotation(text_note()).id
    r = app_client.request(method, path.replace("{id}", id), headers=headers, content=body)
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.headers["x-content-type-options"] == "nosniff"
    data = r.json()
    assert set(data) == {"error", "code"}
    assert data["code"] == code
    assert isinstance(data["error"], str) and data["error"]
    assert "Traceback" not in r.text


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", f"{API}/annotations", text_note()),
        ("PATCH", f"{API}/annotations/{{id}}", {"note": "x"}),
        ("DELETE", f"{API}/annotations/{{id}}", None),
        ("POST", f"{API}/annotations/{{id}}/replies", {"message": "x"}),
        ("POST", f"{API}/annotations/{{id}}/status", {"action": "start"}),
        ("POST", f"{API}/page-notes", {"pageUrl": "/", "note": "x"}),
        ("POST", f"{API}/reviews", {"mode": "edit"}),
    ],
)
def test_read_only_refuses_every_write(
    read_only_client: TestClient, store: Store, method: str, path: str, body: Any
) -> None:
    id = store.add_annotation(text_note()).id
    before = store.all_items(), store.list_reviews(), store.changes(0)
    r = read_only_client.request(method, path.replace("{id}", id), headers=GOOD, json=body)
    assert (r.status_code, r.json()["code"]) == (405, "read_only")
    assert set(r.json()) == {"error", "code"}
    # What the route still takes on this server: nothing, for the POST-only routes (RFC 9110
    # §10.2.1: an empty Allow is a resource disabled by configuration).
    reads = "" if path.endswith(("/replies", "/status")) else "GET, HEAD"
    assert r.headers["allow"] == reads
    assert (store.all_items(), store.list_reviews(), store.changes(0)) == before


def test_read_only_still_reads_and_anchors(read_only_client: TestClient, store: Store) -> None:
    store.add_annotation(text_note())
    assert read_only_client.get(f"{API}/annotations", headers=GOOD).status_code == 200
    r = read_only_client.post(
        f"{API}/anchor", headers=GOOD, json={"pageUrl": "/guide/install/", "text": "x"}
    )
    assert r.status_code == 200


def test_unexpected_error_is_a_bare_500(
    app_client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret detail /home/me/.ssh")

    monkeypatch.setattr(Store, "summary", broken)
    with caplog.at_level(logging.ERROR, logger="annotate.web"):
        r = app_client.get(f"{API}/summary", headers=GOOD)
    assert (r.status_code, r.json()) == (500, {"error": "internal error", "code": "internal"})
    assert "secret" not in r.text
    assert "secret detail" in caplog.text  # logged on the server, not sent


def test_store_busy_is_503(app_client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    def busy(self: Store, *args: object, **kwargs: object) -> None:
        raise annotate.StoreBusyError(str(self.path))

    monkeypatch.setattr(Store, "add_page_note", busy)
    r = app_client.post(f"{API}/page-notes", headers=GOOD, json={"pageUrl": "/", "note": "x"})
    assert r.status_code == 503
    assert r.json()["code"] == "store_busy"
    assert r.json()["error"].endswith("is busy (another process is writing); try again")


def test_json_answers_are_what_the_standard_encoder_writes() -> None:
    import json
    import math

    from annotate.web.responses import JsonResponse

    from .conftest import text_note

    def standard(content: object) -> bytes:
        return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode()

    samples = [
        {"annotations": [text_note(note='Émoji 🎉, </script>, \u2028 and "quotes"')]},
        {"score": 87.5, "big": 10**20, "none": None, "list": [True, False]},
        {"note": "NaN and Infinity are words here"},
    ]
    for content in samples:
        assert JsonResponse(content).body == standard(content)
    # Exponents are spelled another way (1e-7, not 1e-07): the same number.
    assert json.loads(JsonResponse({"small": 1e-7}).body) == {"small": 1e-7}
    for number in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            JsonResponse({"anchorScore": number})
