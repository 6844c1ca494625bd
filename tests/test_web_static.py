"""Static sites with the overlay injected, the overlay's files, and the review page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from annotate.store import Store
from annotate.web import app as web_app
from annotate.web import create_app, inject
from annotate.web.static import OVERLAY_SOURCES, find_overlay_dir

from .conftest import element_note, text_note

TOKEN = "test-token-0123456789abcdef"
BASE = "http://127.0.0.1:8000"
CONFIG = re.compile(r'<script type="application/json" id="annotate-config">(.*?)</script>')


@pytest.fixture
def site(tmp_path: Path) -> Path:
    root = tmp_path / "site"
    (root / "guide").mkdir(parents=True)
    (root / "assets").mkdir()
    (root / "index.html").write_text("<html><body><p>Home</p></body></html>")
    (root / "guide" / "index.html").write_text(
        "<html><BODY><script>var s = '</body>';</script><p>Guide</p></BODY></html>"
    )
    (root / "assets" / "site.css").write_text("body { color: red }")
    (root / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (root / "plain.htm").write_text("no body tag at all")
    return root


@pytest.fixture
def client(store: Store, site: Path) -> TestClient:
    return TestClient(create_app(store, token=TOKEN, site_dir=site), base_url=BASE)


def test_html_gets_the_overlay(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"] == "text/html; charset=utf-8"
    assert r.headers["cache-control"] == "no-store"
    assert r.text.startswith("<html><body><p>Home</p>")
    assert r.text.endswith(
        '<link rel="stylesheet" href="/__annotate/overlay/annotate.css">\n'
        '<script src="/__annotate/overlay/annotate.js" defer></script>\n'
        "</body></html>"
    )
    config = json.loads(CONFIG.search(r.text)[1])
    assert config == {
        "token": TOKEN,
        "api": "/__annotate/api/",
        "readOnly": False,
        "version": config["version"],
        "tokenHeader": "X-Annotate-Token",
    }


def test_injected_before_the_last_body_end_tag(client: TestClient) -> None:
    r = client.get("/guide/")
    before, _, after = r.text.partition('<script type="application/json"')
    assert "var s = '</body>';" in before and "<p>Guide</p>" in before
    assert after.endswith("</BODY></html>")


def test_html_without_body_gets_it_appended(client: TestClient) -> None:
    r = client.get("/plain.htm")
    assert r.text.startswith("no body tag at all<script")


def test_directories(client: TestClient) -> None:
    r = client.get("/guide", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (301, "/guide/")
    r = client.get("/guide?x=1", follow_redirects=False)
    assert r.headers["location"] == "/guide/?x=1"
    assert "<p>Guide</p>" in client.get("/guide/index.html").text


def test_other_files_are_served_as_they_are(client: TestClient, site: Path) -> None:
    r = client.get("/assets/site.css")
    assert r.headers["content-type"].startswith("text/css")
    assert r.text == "body { color: red }"
    r = client.get("/assets/logo.png")
    assert (r.headers["content-type"], r.content) == ("image/png", b"\x89PNG\r\n\x1a\n")
    assert client.head("/assets/logo.png").status_code == 200


def test_404(client: TestClient, site: Path) -> None:
    r = client.get("/missing/")
    assert r.status_code == 404
    assert "404 Not found" in r.text and 'id="annotate-config"' in r.text
    (site / "404.html").write_text("<html><body>Lost?</body></html>")
    r = client.get("/missing/")
    assert r.status_code == 404
    assert r.text.startswith("<html><body>Lost?<script")


def test_read_only_pages_say_so(store: Store, site: Path) -> None:
    client = TestClient(
        create_app(store, token=TOKEN, site_dir=site, read_only=True), base_url=BASE
    )
    assert json.loads(CONFIG.search(client.get("/").text)[1])["readOnly"] is True
    assert "Read-only" in client.get("/__annotate/").text


def test_no_site_means_no_pages(store: Store) -> None:
    client = TestClient(create_app(store, token=TOKEN), base_url=BASE)
    r = client.get("/index.html")
    assert (r.status_code, r.json()["code"]) == (404, "not_found")


def test_inject_works_on_bytes_in_any_case() -> None:
    assert inject(b"<p>\xe9</p></Body>", "<x>") == b"<p>\xe9</p><x></Body>"


# -- overlay files ------------------------------------------------------------------------------


def write_overlay(root: Path, script: str, css: str = ":host{}") -> Path:
    """An overlay folder: `script` as its last source file, the others empty."""
    src = root / "overlay" / "src"
    src.mkdir(parents=True)
    for name in OVERLAY_SOURCES:
        (src / name).write_text("")
    (src / OVERLAY_SOURCES[-1]).write_text(script)
    (src / "shadow.css").write_text(css)
    (root / "overlay" / "annotate.css").write_text("::highlight(annotate) {\n  color: red;\n}\n")
    return root / "overlay"


def test_overlay_files(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    overlay = write_overlay(
        tmp_path, "// a comment\nconsole.log( 'hi' ) ;\n", ".a {\n  color: red;\n}\n"
    )
    monkeypatch.setattr(web_app, "find_overlay_dir", lambda: overlay)
    client = TestClient(create_app(store, token=TOKEN), base_url=BASE)
    r = client.get("/__annotate/overlay/annotate.js", headers={"Accept-Encoding": "identity"})
    assert r.headers["content-type"].startswith("text/javascript")
    assert "content-encoding" not in r.headers
    # The sources joined in one closure after the shadow stylesheet, minified.
    assert r.text == '(()=>{"use strict";const SHADOW_CSS=".a{color:red}";console.log(\'hi\');})();'
    assert r.headers["cache-control"] == "no-cache"
    css = client.get("/__annotate/overlay/annotate.css")
    assert css.headers["content-type"].startswith("text/css")
    assert css.text == "::highlight(annotate){color:red}"
    for missing in ("missing.js", "src/start.js", "README.md"):
        r = client.get(f"/__annotate/overlay/{missing}")
        assert (r.status_code, r.json()["code"]) == (404, "not_found")


def test_overlay_files_are_gzipped_and_revalidated(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    overlay = write_overlay(tmp_path, "const greeting = 'hello';\n" * 200)
    script = overlay / "src" / OVERLAY_SOURCES[-1]
    monkeypatch.setattr(web_app, "find_overlay_dir", lambda: overlay)
    client = TestClient(create_app(store, token=TOKEN), base_url=BASE)
    url = "/__annotate/overlay/annotate.js"
    r = client.get(url, headers={"Accept-Encoding": "gzip, deflate"})
    assert (r.headers["content-encoding"], r.headers["vary"]) == ("gzip", "Accept-Encoding")
    assert int(r.headers["content-length"]) < 200  # sent compressed
    assert "const greeting='hello';" * 200 in r.text  # httpx unpacks it
    assert (
        client.get(url, headers={"Accept-Encoding": "gzip;q=0"}).headers.get("content-encoding")
        is None
    )
    etag = r.headers["etag"]
    again = client.get(url, headers={"If-None-Match": etag})
    assert (again.status_code, again.content) == (304, b"")
    # A new version of a source file is served at once, under a new ETag.
    script.write_text("const greeting = 'bye';\n")
    newer = client.get(url, headers={"If-None-Match": etag})
    assert newer.status_code == 200 and "const greeting='bye';" in newer.text
    assert newer.headers["etag"] != etag


def test_the_served_overlay_is_the_minified_sources(store: Store) -> None:
    client = TestClient(create_app(store, token=TOKEN), base_url=BASE)
    src = find_overlay_dir() / "src"
    sources = "".join((src / name).read_text() for name in OVERLAY_SOURCES)
    served = client.get("/__annotate/overlay/annotate.js").text
    assert len(served) < 0.8 * len(sources)
    # No comment is left, and every string the overlay shows is: e.g. the toggle's label, and
    # the panel's in its chunk (loaded when the panel is first opened, issue #31).
    assert "// -- state" in sources and "// -- state" not in served
    assert "Review panel" in served
    panel = client.get("/__annotate/overlay/panel.js").text
    for label in ("Add page note", "Copy as Markdown", "Send to agent"):
        assert label in panel and label not in served
    # One closure: nothing the sources declare becomes a global of the page.
    assert served.startswith("(()=>{") and served.endswith("})();")


def test_overlay_folder_is_found_in_a_checkout() -> None:
    found = find_overlay_dir()
    assert found is not None and found.name == "overlay"


# -- the review page ----------------------------------------------------------------------------


def test_review_page(client: TestClient, store: Store) -> None:
    a = store.add_annotation(text_note())
    store.add_agent_reply(a.id, "Added a pipx line.")
    store.address_annotation(a.id)
    e = store.add_annotation(element_note(pageUrl="/other/", pageTitle="Other page"))
    n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Split this page"})
    done = store.add_annotation(text_note(note="Old news"))
    store.accept(done.id)

    r = client.get("/__annotate/")
    assert r.status_code == 200
    page = r.text
    assert '<li class="s-open">2 open</li>' in page
    assert '<li class="s-addressed">1 addressed</li>' in page
    assert '<li class="s-resolved">1 resolved</li>' in page
    assert '<a href="/guide/install/">Install</a>' in page
    assert '<a href="/other/">Other page</a>' in page
    for item in (a, e, n):
        assert item.id in page
    assert "Added a pipx line." in page
    assert done.id not in page  # resolved: only when asked for

    page = client.get("/__annotate/?status=resolved").text
    assert done.id in page and a.id not in page
    page = client.get("/__annotate/?page=/other/&status=open").text
    assert e.id in page and a.id not in page and n.id not in page
    page = client.get("/__annotate/?type=page").text
    assert n.id in page and a.id not in page
    page = client.get("/__annotate/?q=PIPX").text
    assert a.id in page and e.id not in page
    page = client.get("/__annotate/?anchor=orphaned").text
    assert "No notes match these filters." in page
    r = client.get("/__annotate", follow_redirects=False)
    assert (r.status_code, r.headers["location"]) == (301, "/__annotate/")
