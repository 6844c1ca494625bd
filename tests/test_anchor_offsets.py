"""The anchor route answers in the overlay's offsets (issue #26): a JavaScript string counts UTF-16
units, so a character outside the BMP (an emoji drawing a folder tree, as in mkdocstrings' docs)
is two of them, and one code point in Python. Every note below one was highlighted a character
off per emoji above it, on the page the note was made on."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from annotate.store import Store
from annotate.web import create_app

from .conftest import text_note

BACKENDS = ("sqlite",)  # the route's arithmetic, not the store's
TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
QUOTE = "pip install mkdocs-annotate"
PAGE_TEXT = f"Layout\n📁 docs/\n├── 📁 guide/\n└── 📄 index.md\nRun {QUOTE} in a shell."


def units(text: str) -> int:
    """The length of `text` in UTF-16 units, as the overlay measures it."""
    return len(text.encode("utf-16-le")) // 2


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    app = create_app(store, token=TOKEN)
    with TestClient(
        app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
    ) as c:
        yield c


def anchor(client: TestClient, text: str) -> dict:
    r = client.post(f"{API}/anchor", json={"pageUrl": "/guide/install/", "text": text})
    assert r.status_code == 200
    return r.json()["anchors"][0]


def test_anchor_offsets_count_utf16_units_past_an_emoji(client: TestClient, store: Store) -> None:
    start = units(PAGE_TEXT[: PAGE_TEXT.index(QUOTE)])
    assert start == PAGE_TEXT.index(QUOTE) + 3  # three emoji above the quote
    store.add_annotation(text_note(position={"start": start, "end": start + len(QUOTE)}))
    # Where the overlay selected it: the stored position holds, in its units.
    found = anchor(client, PAGE_TEXT)
    assert (found["start"], found["end"], found["method"]) == (
        start,
        start + len(QUOTE),
        "position",
    )
    # Another emoji above it: found by its words, and answered in units again.
    edited = "🙂 " + PAGE_TEXT
    found = anchor(client, edited)
    assert (found["start"], found["end"]) == (start + 3, start + 3 + len(QUOTE))
