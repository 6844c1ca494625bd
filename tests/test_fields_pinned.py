"""The JSON and Markdown every surface answers, byte for byte (key order included).

Recorded from main before annotate/fields.py generated the decoders, `to_dict`, the SQL JSON
writer and the export rows from one field table: it fails if the table changes a byte of what a
client reads. Ids and timestamps are replaced by placeholders; everything else is compared as text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import annotate
from annotate.models import Build
from annotate.web import create_app

from .conftest import element_note, text_note, write_project

TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
STAMP = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?Z| UTC)")
MADE, SERVED = "0b105a0c1d2e", "def5678abcde"
# Every answer the same on both backends (issue #28).
BACKENDS = ("sqlite", "postgresql")
INSTALL = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n\nThen build the site.\n"


@pytest.fixture
def client(tmp_path: Path, db_url: str | None) -> Iterator[tuple[TestClient, list[str]]]:
    """A store with every kind of field filled in, and the ids in order of creation."""
    # Issue #20: two notes made on a build of `main` (the others on none); served from a newer
    # build of `main`, the located one says where it was located again (`build.anchoredOn`).
    store = annotate.open(
        write_project(tmp_path, INSTALL), db=db_url, build={"branch": "main", "commit": MADE}
    )
    located = store.add_annotation(
        text_note(intent="replace", suggestion="pipx install it\n  (indented)", author="Ada")
    )
    store.build = None
    element = store.add_annotation(element_note(author="Lin"))
    bare = store.add_annotation(
        text_note(pageUrl="/elsewhere/", pageTitle="", position=None, quote=None, note="x")
    )
    gone = store.add_annotation(
        text_note(
            intent="delete",
            note="",
            selectedText="Then build the site.",
            quote={"exact": "Then build the site.", "prefix": "a shell.\n\n", "suffix": ""},
            position=None,
        )
    )
    store.build = Build("main", MADE)
    page = store.add_page_note(
        {"pageUrl": "/guide/install/", "pageTitle": "Install", "note": "Too long.", "author": "Ada"}
    )
    store.add_agent_reply(located.id, 'Done: <b>pipx</b> ✓ "quoted"')
    store.add_reply(located.id, "Thanks\nand a second line", role="reviewer", author="Ada")
    store.add_agent_reply(page.id, "Shortened.")
    store.create_review({"mode": "edit", "message": "Please fix", "author": "Ada"})
    store.address_annotation(located.id, "pipx install mkdocs-annotate")
    store.set_in_progress(element.id)
    store.accept(bare.id)
    store.address_annotation(gone.id, deleted=True)
    # The agent's edit, so that the source moved on from the original one.
    (tmp_path / "docs" / "guide" / "install.md").write_text(INSTALL.replace("pip ", "pipx "))
    ids = [located.id, element.id, bare.id, gone.id, page.id]
    store.build = Build("main", SERVED)
    app = create_app(store, token=TOKEN, changes_timeout=0.1, poll_interval=0.05)
    with TestClient(
        app, base_url="http://127.0.0.1:8000", headers={"X-Annotate-Token": TOKEN}
    ) as c:
        yield c, ids
    store.close()


PATHS = [
    "/annotations?includeResolved=true",
    "/annotations/<id0>",
    "/annotations/<id1>",
    "/annotations/<id2>",
    "/annotations/<id3>",
    "/page-notes?includeResolved=true",
    "/page-notes/<id4>",
    "/reviews",
    "/export?format=markdown",
    "/export?format=json",
    "/export?format=w3c",
]

# The OpenAPI schemas the field table writes (annotate/web/openapi.py).
SCHEMAS = [
    "Reply",
    "Quote",
    "Position",
    "ElementSelector",
    "Source",
    "Build",
    "Annotation",
    "PageNote",
    "AnnotationInput",
    "AnnotationPatch",
    "PageNoteInput",
    "PageNotePatch",
]


def answers(client: TestClient, ids: list[str]) -> str:
    """Every answer in PATHS, ids and timestamps replaced, one block per path."""
    out = []
    for path in PATHS:
        for i, id in enumerate(ids):
            path = path.replace(f"<id{i}>", id)
        r = client.get(f"{API}{path}")
        assert r.status_code == 200, r.text
        text = r.content.decode()
        for i, id in enumerate(ids):
            text = text.replace(id, f"<id{i}>")
        text = re.sub(r"\b(rv|r)_[0-9a-f]{10}\b", r"<\1>", text)
        text = STAMP.sub("<at>", text)
        # The W3C export's ids are UUIDs derived from the note's id.
        text = re.sub(r"urn:uuid:[0-9a-f-]{36}", "<urn>", text)
        for i, id in enumerate(ids):
            path = path.replace(id, f"<id{i}>")
        out.append(f"== {path}\n{text}")
    schemas = client.get("/__annotate/openapi.json").json()["components"]["schemas"]
    pinned = {name: schemas[name] for name in SCHEMAS}
    out.append(f"== openapi.json components/schemas\n{json.dumps(pinned, indent=1)}")
    return "\n".join(out) + "\n"


def test_answers_are_byte_identical(client: tuple[TestClient, list[str]]) -> None:
    expected = (Path(__file__).parent / "fixtures" / "pinned_answers.txt").read_text()
    assert answers(*client) == expected
