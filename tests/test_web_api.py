"""Every route of the REST API (docs/http-api.md) through Starlette's TestClient (issue #4)."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

import annotate
from annotate.anchoring import Selector, locate_many
from annotate.store import Store
from annotate.web import create_app

from .conftest import element_note, text_note
from .test_lifecycle import TABLE as LIFECYCLE

# Each test using the `store` fixture runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")

TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
DOCS = Path(__file__).parent.parent / "docs"


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, token=TOKEN, changes_timeout=2.0, poll_interval=0.05)
    with TestClient(
        app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
    ) as c:
        yield c


def at(store: Store, status: str, **overrides: object) -> str:
    """An annotation brought to `status` through legal moves."""
    id = store.add_annotation(text_note(**overrides)).id
    if status == "in_progress":
        store.set_in_progress(id)
    elif status == "addressed":
        store.address_annotation(id)
    elif status == "resolved":
        store.accept(id)
    return id


# -- annotations --------------------------------------------------------------------------------


def test_create_text_annotation(client: TestClient, store: Store) -> None:
    r = client.post(f"{API}/annotations", json=text_note())
    assert r.status_code == 201
    body = r.json()
    assert r.headers["location"] == f"{API}/annotations/{body['id']}"
    assert body == store.get_annotation(body["id"]).to_dict()
    assert body["status"] == "open"
    assert body["quote"] == text_note()["quote"]


def test_create_ignores_server_set_fields(client: TestClient) -> None:
    r = client.post(
        f"{API}/annotations",
        json=text_note(id="a_mine", status="resolved", createdAt="1999-01-01T00:00:00Z"),
    )
    assert r.status_code == 201
    assert r.json()["id"] != "a_mine"
    assert r.json()["status"] == "open"


def test_create_element_annotation(client: TestClient) -> None:
    r = client.post(f"{API}/annotations", json=element_note())
    assert r.status_code == 201
    assert r.json()["type"] == "element"
    assert r.json()["elementSelector"] == element_note()["elementSelector"]


def test_get_annotation(client: TestClient, store: Store) -> None:
    id = at(store, "open")
    r = client.get(f"{API}/annotations/{id}")
    assert r.status_code == 200
    assert r.json() == store.get_annotation(id).to_dict()
    r = client.get(f"{API}/annotations/a_missing")
    assert r.status_code == 404
    assert r.json() == {"error": 'Annotation with ID "a_missing" not found', "code": "not_found"}


def test_list_annotations_filters(client: TestClient, store: Store) -> None:
    a = at(store, "open")
    b = at(store, "addressed", pageUrl="/other/")
    c = at(store, "resolved")
    e = store.add_annotation(element_note()).id

    def ids(query: str = "") -> list[str]:
        r = client.get(f"{API}/annotations{query}")
        assert r.status_code == 200, r.text
        return [x["id"] for x in r.json()["annotations"]]

    assert ids() == [a, b, e]
    assert ids("?page=/guide/install/") == [a, e]
    assert ids("?status=addressed") == [b]
    assert ids("?status=open&status=resolved") == [a, c, e]
    assert ids("?status=open,resolved") == [a, c, e]
    assert ids("?status=all") == [a, b, c, e]
    assert ids("?includeResolved=true") == [a, b, c, e]
    assert ids("?includeResolved=false") == [a, b, e]
    assert ids("?type=element") == [e]
    assert ids("?type=text&page=/guide/install/") == [a]
    # The element is in no Markdown (this project has none): never anchored without a source.
    assert ids("?anchorState=anchored") == [a, b]
    assert ids("?anchorState=stale,orphaned") == [e]


def test_patch_annotation(client: TestClient, store: Store) -> None:
    id = at(store, "open")
    r = client.patch(
        f"{API}/annotations/{id}",
        json={"note": "Say pipx", "intent": "replace", "suggestion": "pipx install x"},
    )
    assert r.status_code == 200
    assert (r.json()["note"], r.json()["intent"], r.json()["suggestion"]) == (
        "Say pipx",
        "replace",
        "pipx install x",
    )
    r = client.patch(f"{API}/annotations/{id}", json={"pageTitle": "Installing"})
    assert r.json()["pageTitle"] == "Installing"
    assert store.get_annotation(id).page_title == "Installing"


def test_delete_annotation(client: TestClient, store: Store) -> None:
    id = at(store, "open")
    store.add_agent_reply(id, "On it")
    r = client.delete(f"{API}/annotations/{id}")
    assert r.status_code == 204
    assert r.content == b""
    assert client.get(f"{API}/annotations/{id}").status_code == 404
    assert client.delete(f"{API}/annotations/{id}").status_code == 404


# -- replies and the lifecycle ------------------------------------------------------------------


def test_reply(client: TestClient, store: Store) -> None:
    id = at(store, "open")
    r = client.post(f"{API}/annotations/{id}/replies", json={"message": "Which section?"})
    assert r.status_code == 201
    assert [(x["role"], x["message"]) for x in r.json()["replies"]] == [
        ("reviewer", "Which section?")
    ]
    r = client.post(
        f"{API}/annotations/{id}/replies",
        json={"message": "The first", "role": "agent", "author": "claude"},
    )
    last = r.json()["replies"][-1]
    assert (last["role"], last["author"], last["message"]) == ("agent", "claude", "The first")
    assert len(store.get_annotation(id).replies) == 2


def test_reply_refusals(client: TestClient, store: Store) -> None:
    id = at(store, "resolved")
    # Replies are always allowed, even on a resolved note.
    assert client.post(f"{API}/annotations/{id}/replies", json={"message": "ok"}).status_code == 201
    r = client.post(f"{API}/annotations/{id}/replies", json={"message": "  "})
    assert r.json() == {"error": "Reply message must not be empty", "code": "invalid"}
    r = client.post(f"{API}/annotations/{id}/replies", json={"message": "x", "role": "admin"})
    assert r.status_code == 400
    assert "role" in r.json()["error"]
    r = client.post(f"{API}/annotations/{id}/replies", json={"message": "x", "mood": "happy"})
    assert r.json() == {"error": 'Unknown field "mood" in reply', "code": "invalid"}


# The status route's actions and the library calls behind them: the same table of moves applies
# (docs/workflow.md, "Statuses").
ROUTE_ACTIONS = {
    "start": "set_in_progress",
    "address": "address_annotation",
    "accept": "accept",
    "reopen": "reopen",
}
TRANSITIONS = {
    (route, status): result
    for route, call in ROUTE_ACTIONS.items()
    for (action, status), result in LIFECYCLE.items()
    if action == call
}


@pytest.mark.parametrize(("action", "status"), list(TRANSITIONS))
def test_status_transitions(client: TestClient, store: Store, action: str, status: str) -> None:
    id = at(store, status)
    before = store.get_annotation(id)
    r = client.post(f"{API}/annotations/{id}/status", json={"action": action})
    expected = TRANSITIONS[(action, status)]
    if expected is None:
        assert r.status_code == 409
        assert r.json()["code"] == "invalid_transition"
        assert id in r.json()["error"]
        assert store.get_annotation(id) == before
    else:
        assert r.status_code == 200, r.text
        assert r.json()["status"] == expected
        assert r.json() == store.get_annotation(id).to_dict()


def test_address_with_replaced_text_and_reopen_with_note(client: TestClient, store: Store) -> None:
    id = at(store, "in_progress")
    r = client.post(
        f"{API}/annotations/{id}/status",
        json={"action": "address", "replacedText": "pipx install mkdocs-annotate"},
    )
    assert r.json()["status"] == "addressed"
    assert r.json()["replacedText"] == "pipx install mkdocs-annotate"
    r = client.post(
        f"{API}/annotations/{id}/status", json={"action": "reopen", "note": "Also uv, please."}
    )
    assert r.json()["status"] == "open"
    assert [(x["role"], x["message"]) for x in r.json()["replies"]] == [
        ("reviewer", "Also uv, please.")
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "action must be one of start, address, accept, reopen, got None"),
        (
            {"action": "finish"},
            "action must be one of start, address, accept, reopen, got 'finish'",
        ),
        ({"action": "accept", "note": "x"}, "note is only used with action 'reopen'"),
        (
            {"action": "start", "replacedText": "x"},
            "replacedText is only used with action 'address'",
        ),
        ({"action": "address", "replacedText": " "}, "replacedText must not be empty"),
        ({"action": "start", "by": "me"}, 'Unknown field "by" in status change'),
    ],
)
def test_status_refusals(client: TestClient, store: Store, body: dict, message: str) -> None:
    id = at(store, "open")
    r = client.post(f"{API}/annotations/{id}/status", json=body)
    assert (r.status_code, r.json()) == (400, {"error": message, "code": "invalid"})
    assert store.get_annotation(id).status == "open"


# -- page notes ---------------------------------------------------------------------------------


def test_page_notes(client: TestClient, store: Store) -> None:
    r = client.post(f"{API}/page-notes", json={"pageUrl": "/guide/", "note": "Too long"})
    assert r.status_code == 201
    id = r.json()["id"]
    assert r.headers["location"] == f"{API}/page-notes/{id}"
    client.post(f"{API}/page-notes", json={"pageUrl": "/other/", "note": "Typo"})
    assert [n["note"] for n in client.get(f"{API}/page-notes").json()["pageNotes"]] == [
        "Too long",
        "Typo",
    ]
    listed = client.get(f"{API}/page-notes?page=/guide/").json()["pageNotes"]
    assert [n["id"] for n in listed] == [id]
    assert client.get(f"{API}/page-notes/{id}").json() == store.get_page_note(id).to_dict()
    r = client.patch(f"{API}/page-notes/{id}", json={"note": "Far too long"})
    assert r.json()["note"] == "Far too long"

    r = client.post(
        f"{API}/page-notes/{id}/replies", json={"message": "Split it?", "role": "agent"}
    )
    assert r.status_code == 201
    assert r.json()["replies"][0]["role"] == "agent"
    for action, status in [
        ("start", "in_progress"),
        ("address", "addressed"),
        ("accept", "resolved"),
    ]:
        r = client.post(f"{API}/page-notes/{id}/status", json={"action": action})
        assert r.json()["status"] == status
    assert client.get(f"{API}/page-notes").json()["pageNotes"][0]["note"] == "Typo"
    assert len(client.get(f"{API}/page-notes?includeResolved=true").json()["pageNotes"]) == 2
    assert len(client.get(f"{API}/page-notes?status=resolved").json()["pageNotes"]) == 1
    # The annotation routes take a page note's id as well, as the store's lifecycle methods do.
    r = client.post(f"{API}/annotations/{id}/status", json={"action": "reopen"})
    assert r.json()["status"] == "open"

    assert client.delete(f"{API}/page-notes/{id}").status_code == 204
    r = client.get(f"{API}/page-notes/{id}")
    assert r.json() == {"error": f'Page note with ID "{id}" not found', "code": "not_found"}


def test_page_note_routes_refuse_annotation_ids(client: TestClient, store: Store) -> None:
    id = at(store, "open")
    for path, body in [("replies", {"message": "x"}), ("status", {"action": "start"})]:
        r = client.post(f"{API}/page-notes/{id}/{path}", json=body)
        assert r.status_code == 404
    assert store.get_annotation(id).status == "open"
    assert store.get_annotation(id).replies == ()


# -- reviews ------------------------------------------------------------------------------------


def test_reviews(client: TestClient, store: Store) -> None:
    a = at(store, "open")
    r = client.post(f"{API}/reviews", json={"mode": "review", "message": "Answer first"})
    assert r.status_code == 201
    review = r.json()
    assert (review["mode"], review["message"], review["status"]) == (
        "review",
        "Answer first",
        "pending",
    )
    assert [x["id"] for x in review["annotations"]] == [a]
    assert r.headers["location"] == f"{API}/reviews/{review['id']}"
    assert client.get(f"{API}/reviews/{review['id']}").json() == review
    assert [x["id"] for x in client.get(f"{API}/reviews").json()["reviews"]] == [review["id"]]
    store.claim_review()
    assert client.get(f"{API}/reviews?pending=true").json() == {"reviews": []}
    # Nothing new since: refused, with the reason.
    r = client.post(f"{API}/reviews", json={"mode": "edit"})
    assert r.status_code == 400
    assert r.json()["error"].startswith("Nothing to send")
    assert client.get(f"{API}/reviews/rv_missing").status_code == 404


# -- anchor -------------------------------------------------------------------------------------

PAGE_TEXT = "Install\nRun pip install mkdocs-annotate in a shell. Then serve the site."


def test_anchor(client: TestClient, store: Store) -> None:
    moved = at(store, "open")
    gone = at(
        store,
        "open",
        selectedText="a sentence that was deleted",
        quote={"exact": "a sentence that was deleted", "prefix": "", "suffix": ""},
    )
    resolved = at(store, "resolved")
    store.add_annotation(element_note())  # element annotations are not text-anchored
    store.add_annotation(text_note(pageUrl="/other/"))
    r = client.post(f"{API}/anchor", json={"pageUrl": "/guide/install/", "text": PAGE_TEXT})
    assert r.status_code == 200
    anchors = r.json()["anchors"]
    start = PAGE_TEXT.index("pip install")
    assert anchors == [
        {
            "id": moved,
            "start": start,
            "end": start + len("pip install mkdocs-annotate"),
            "score": 100.0,
            "method": "exact",
        },
        {"id": gone, "start": None, "end": None, "score": None, "method": None},
    ]
    r = client.post(
        f"{API}/anchor",
        json={"pageUrl": "/guide/install/", "text": PAGE_TEXT, "includeResolved": True},
    )
    assert [x["id"] for x in r.json()["anchors"]] == [moved, gone, resolved]


def test_anchor_answers_follow_every_change(client: TestClient, store: Store) -> None:
    # Answers are remembered per (page, text, selectors): any change must give a fresh answer.
    id = at(store, "open")

    def anchor(text: str) -> dict:
        r = client.post(f"{API}/anchor", json={"pageUrl": "/guide/install/", "text": text})
        return r.json()["anchors"][0]

    assert anchor(PAGE_TEXT)["method"] == "exact"
    assert anchor(PAGE_TEXT) == anchor(PAGE_TEXT)
    edited = PAGE_TEXT.replace("pip install mkdocs-annotate", "pipx install mkdocs-annotate")
    assert anchor(edited)["start"] is None or anchor(edited)["method"] == "fuzzy"
    store.update_annotation_target(id, "pipx install mkdocs-annotate")
    found = anchor(edited)
    assert (found["method"], found["start"]) == ("replaced", edited.index("pipx"))
    store.accept(id)
    r = client.post(f"{API}/anchor", json={"pageUrl": "/guide/install/", "text": edited})
    assert r.json() == {"anchors": []}


def test_anchor_versions_of_a_page_answer_as_a_fresh_search(
    client: TestClient, store: Store
) -> None:
    # The route keeps each page's word-pair index from one version of its text to the next.
    rng = random.Random(7)
    words = [
        "the",
        "a",
        "page",
        "note",
        "review",
        "anchor",
        "quote",
        "agent",
        "site",
        "build",
        "serve",
        "file",
    ]
    lines = [" ".join(rng.choice(words) for _ in range(40)) + f" n{i}." for i in range(60)]
    text = "\n".join(lines)
    for i in range(0, 60, 4):
        start = text.index(lines[i]) + 20
        store.add_annotation(
            text_note(
                selectedText=text[start : start + 60],
                quote={
                    "exact": text[start : start + 60],
                    "prefix": text[start - 20 : start],
                    "suffix": text[start + 60 : start + 92],
                },
                position={"start": start, "end": start + 60},
            )
        )
    selectors = [Selector(*row[1:]) for row in store.text_selector_rows("/guide/install/")]
    for version in range(6):
        edited = list(lines)
        edited.insert(0, f"A new first line, version {version}.")
        del edited[1 + 4 * version]  # a quoted line gone
        edited[3 + 4 * version] = edited[3 + 4 * version].replace(" the ", " one ", 3)
        edited.append(f"last line {version}")
        page = "\n".join(edited)
        r = client.post(f"{API}/anchor", json={"pageUrl": "/guide/install/", "text": page})
        fresh = locate_many(page, selectors)
        assert [(a["start"], a["end"]) for a in r.json()["anchors"]] == [
            (None, None) if m is None else (m.start, m.end) for m in fresh
        ]
        assert sum(m is None for m in fresh) >= 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"text": "x"}, "pageUrl"),
        ({"pageUrl": "https://evil.example/", "text": "x"}, "pageUrl"),
        ({"pageUrl": "/", "text": 5}, "text"),
        ({"pageUrl": "/", "text": "x", "includeResolved": "yes"}, "includeResolved"),
        ({"pageUrl": "/", "text": "x", "path": "../etc/passwd"}, "path"),
    ],
)
def test_anchor_refusals(client: TestClient, body: dict, field: str) -> None:
    r = client.post(f"{API}/anchor", json=body)
    assert r.status_code == 400
    assert field in r.json()["error"]


# -- export, changes, summary -------------------------------------------------------------------


def test_export(client: TestClient, store: Store) -> None:
    id = at(store, "addressed")
    r = client.get(f"{API}/export")
    assert r.headers["content-type"] == "text/markdown; charset=utf-8"
    assert r.text.startswith("# Review feedback")
    assert id in r.text and "🔧 [Addressed]" in r.text
    r = client.get(f"{API}/export?format=json")
    assert r.headers["content-type"] == "application/json"
    assert [a["id"] for a in r.json()["annotations"]] == [id]
    r = client.get(f"{API}/export?format=w3c")
    assert r.headers["content-type"].startswith("application/ld+json")
    assert r.json()["@context"] == "http://www.w3.org/ns/anno.jsonld"
    store.accept(id)
    assert id not in client.get(f"{API}/export").text
    assert id in client.get(f"{API}/export?includeResolved=true").text
    assert client.get(f"{API}/export?format=json&includeResolved=false").json()["annotations"] == []
    r = client.get(f"{API}/export?format=pdf")
    assert r.json() == {
        "error": "format must be one of markdown, json, w3c, got 'pdf'",
        "code": "invalid",
    }


def test_changes(client: TestClient, store: Store) -> None:
    first = client.get(f"{API}/changes").json()
    assert first == {"events": [], "cursor": 0}
    id = at(store, "open")
    r = client.get(f"{API}/changes?since=0").json()
    assert [(e["kind"], e["id"], e["action"]) for e in r["events"]] == [
        ("annotation", id, "created")
    ]
    assert r["events"][0]["pageUrl"] == "/guide/install/"
    assert client.get(f"{API}/changes").json() == {"events": [], "cursor": r["cursor"]}
    # Nothing new: waits for the timeout, then answers with no events and the same cursor.
    started = time.monotonic()
    assert client.get(f"{API}/changes?since={r['cursor']}&timeout=0.3").json() == {
        "events": [],
        "cursor": r["cursor"],
    }
    assert 0.25 < time.monotonic() - started < 1.5


def test_changes_long_poll_wakes_on_write(
    client: TestClient, store: Store, db_url: str | None
) -> None:
    id = at(store, "open")
    cursor = client.get(f"{API}/changes").json()["cursor"]
    # Another connection writes while the request waits (another process is in test_web_server).
    other = annotate.open(store.project_dir, db=db_url)  # the same store, its own connections
    writer = threading.Timer(0.3, lambda: other.add_agent_reply(id, "Done"))
    started = time.monotonic()
    writer.start()
    r = client.get(f"{API}/changes?since={cursor}")
    elapsed = time.monotonic() - started
    writer.join()
    assert [(e["id"], e["action"]) for e in r.json()["events"]] == [(id, "agent_reply")]
    assert r.json()["cursor"] > cursor
    assert 0.25 < elapsed < 1.0
    other.close()


@pytest.mark.parametrize(
    ("query", "field"),
    [("since=-1", "since"), ("since=x", "since"), ("since=1&timeout=99", "timeout")],
)
def test_changes_refusals(client: TestClient, query: str, field: str) -> None:
    r = client.get(f"{API}/changes?{query}")
    assert r.status_code == 400
    assert r.json()["error"].startswith(field)


def test_summary(client: TestClient, store: Store) -> None:
    at(store, "open")
    at(store, "addressed", pageUrl="/other/")
    r = client.get(f"{API}/summary")
    assert r.json() == store.summary().to_dict()
    assert r.json()["annotations"]["addressed"] == 1
    assert r.json()["pages"] == 2


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=finished", "status"),
        ("type=image", "type"),
        ("anchorState=lost", "anchorState"),
        ("includeResolved=maybe", "includeResolved"),
        ("page=/guide/../secret/", "page"),
        ("pageUrl=/guide/", "Unknown query parameter 'pageUrl'"),
    ],
)
def test_list_refusals(client: TestClient, query: str, field: str) -> None:
    r = client.get(f"{API}/annotations?{query}")
    assert r.status_code == 400
    assert r.json()["error"].startswith(field)


def test_unknown_query_parameters_are_refused(client: TestClient, store: Store) -> None:
    id = at(store, "open")
    r = client.post(f"{API}/annotations/{id}/status?force=1", json={"action": "accept"})
    assert r.json() == {
        "error": "Unknown query parameter 'force'; this route takes none",
        "code": "invalid",
    }
    assert store.get_annotation(id).status == "open"


def test_page_sources_locate_notes_in_markdown(store: Store) -> None:
    # The Markdown file of a page comes from the server side (the plugin), never from the browser.
    docs = store.project_dir / "docs" / "guide"
    docs.mkdir(parents=True)
    (docs / "setup.md").write_text("# Install\n\nRun pip install mkdocs-annotate in a shell.\n")
    app = create_app(store, token=TOKEN, page_sources={"/guide/install/": "docs/guide/setup.md"})
    client = TestClient(app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN})
    r = client.post(f"{API}/annotations", json=text_note())
    assert r.json()["source"]["path"] == "docs/guide/setup.md"
    assert (r.json()["source"]["lineStart"], r.json()["source"]["lineEnd"]) == (3, 3)


# -- health, openapi, HEAD ----------------------------------------------------------------------


def test_health_needs_no_token(store: Store) -> None:
    client = TestClient(create_app(store, token=TOKEN), base_url="http://localhost:8000")
    assert client.get("/__annotate/health").json() == {"ok": True, "version": annotate.__version__}


def test_head(client: TestClient, store: Store) -> None:
    at(store, "open")
    r = client.head(f"{API}/annotations")
    assert r.status_code == 200
    assert r.content == b""


def test_openapi_describes_every_route(client: TestClient, store: Store) -> None:
    spec = client.get("/__annotate/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    app = create_app(store, token=TOKEN)
    routes = {
        (r.path.replace("{id:str}", "{id}"), m.lower())
        for r in app.routes
        if isinstance(r, Route) and r.path.startswith("/__annotate/api/")
        for m in r.methods or ()
        if m != "HEAD"
    }
    described = {(p, m) for p, ops in spec["paths"].items() for m in ops}
    assert routes <= described
    assert described - routes == {("/__annotate/health", "get")}


def test_http_api_doc_lists_every_route(client: TestClient) -> None:
    doc = (DOCS / "http-api.md").read_text()
    for path, ops in client.get("/__annotate/openapi.json").json()["paths"].items():
        for method in ops:
            assert f"{method.upper()} {path}" in doc, f"{method.upper()} {path} is undocumented"


@pytest.mark.parametrize(
    "query",
    [
        "annotations?status=",
        "annotations?status=open,",
        "annotations?type=",
        "annotations?page=",
        "annotations?includeResolved=",
        "changes?since=",
        "changes?since=1&timeout=",
        "export?format=",
        "reviews?pending=",
    ],
)
def test_empty_query_values_are_refused(client: TestClient, query: str) -> None:
    r = client.get(f"{API}/{query}")
    assert (r.status_code, r.json()["code"]) == (400, "invalid")
