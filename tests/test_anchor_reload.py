"""The anchor route on a reload (issue #31): a page reloaded unchanged is answered from memory
without reading its Markdown again; a new text of it, or a note changed on it, is prepared again;
the answers are those of a first load."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

import annotate
from annotate.anchoring import matching
from annotate.anchoring.pagecache import PREPARED_S, Anchors
from annotate.web import create_app

from .conftest import write_install_page

BACKENDS = ("sqlite", "postgresql")
TOKEN = "t" * 32
PAGE = "# Install\n\nUse pipx when you want the tool isolated from your other packages.\n"
TEXT = "Install\nUse pipx when you want the tool isolated from your other packages."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_install_page(tmp_path, PAGE)


class Counting:
    """`Store.prepare_page`, counted: what the route asks of the store after answering."""

    def __init__(self, store: annotate.Store) -> None:
        self.calls: list[str] = []
        real = store.prepare_page

        def prepare_page(page_url: str) -> bool:
            self.calls.append(page_url)
            return real(page_url)

        store.prepare_page = prepare_page  # type: ignore[method-assign]


@pytest.fixture
def served(project: Path, db_url: str | None) -> Iterator[tuple[TestClient, annotate.Store]]:
    store = annotate.open(project, db=db_url)
    with TestClient(create_app(store, token=TOKEN), base_url="http://127.0.0.1") as client:
        yield client, store
    store.close()


def anchor(client: TestClient, text: str = TEXT) -> Any:
    answer = client.post(
        "/__annotate/api/anchor",
        json={"pageUrl": "/install/", "text": text},
        headers={"X-Annotate-Token": TOKEN},
    )
    assert answer.status_code == 200
    return answer.json()


def note(store: annotate.Store, exact: str) -> annotate.Annotation:
    start = TEXT.index(exact)
    return store.add_annotation(
        {
            "pageUrl": "/install/",
            "note": "Check this.",
            "selectedText": exact,
            "quote": {"exact": exact, "prefix": TEXT[max(0, start - 32) : start], "suffix": ""},
            "position": {"start": start, "end": start + len(exact)},
        }
    )


def test_a_reload_of_an_unchanged_page_is_not_prepared_again(
    served: tuple[TestClient, annotate.Store],
) -> None:
    client, store = served
    a = note(store, "the tool isolated")
    counted = Counting(store)
    first = anchor(client)
    assert counted.calls == ["/install/"]
    assert anchor(client) == first  # remembered: the same answer, no second preparation
    assert counted.calls == ["/install/"]
    at = TEXT.index("the tool isolated")
    assert first == {
        "anchors": [{"id": a.id, "start": at, "end": at + 17, "score": 100.0, "method": "position"}]
    }


def test_a_new_text_or_a_changed_note_is_prepared_again(
    served: tuple[TestClient, annotate.Store],
) -> None:
    client, store = served
    note(store, "the tool isolated")
    counted = Counting(store)
    anchor(client)
    anchor(client, TEXT + "\nA paragraph added by a rebuild.")  # a rebuild: its Markdown changed
    assert counted.calls == ["/install/"] * 2
    b = note(store, "your other packages")
    answer = anchor(client, TEXT + "\nA paragraph added by a rebuild.")
    assert counted.calls == ["/install/"] * 3  # the same text, another note: not remembered
    assert [x["id"] for x in answer["anchors"]][-1] == b.id


def test_due_forgets_a_preparation_after_a_while() -> None:
    anchors = Anchors(store=None)  # type: ignore[arg-type]  # `due` never reads the store
    assert anchors.due("/a/", remembered=True)  # never prepared
    assert not anchors.due("/a/", remembered=True)
    assert anchors.due("/a/", remembered=False)  # a new text
    anchors._prepared["/a/"] -= PREPARED_S + 1  # as if the last preparation were that old
    assert anchors.due("/a/", remembered=True)


def test_quotes_all_in_place_skip_the_search_and_answer_alike() -> None:
    # The all-in-place answer (no search, no chain of neighbours) is that of the full path: a
    # selector whose position is off by one goes through the search and lands on the same place.
    text = "One two three four five. Six seven eight nine ten. Eleven twelve thirteen."
    quotes = ["two three four", "seven eight nine", "twelve thirteen"]
    held = [
        {"exact": q, "prefix": text[: text.index(q)][-32:], "suffix": text[text.index(q) + len(q) :][:32],
         "start": text.index(q), "end": text.index(q) + len(q)}
        for q in quotes
    ]  # fmt: skip
    searched = [{**s, "start": s["start"] + 1, "end": s["end"] + 1} for s in held]
    fast, slow = matching.locate_many(text, held), matching.locate_many(text, searched)
    assert [(m.start, m.end) for m in fast if m] == [(m.start, m.end) for m in slow if m]
    assert [m.method for m in fast if m] == ["position"] * 3
    assert all(m is not None and m.score == 100 for m in fast)
