"""The anchor route's answer for a page whose quotes all stand where they were selected (issue
#31): checked with one `startswith` per note instead of a search, and byte for byte the answer the
full path (`locate_many`) gives, whatever the text and the selectors."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

import annotate
from annotate.anchoring import pageindex
from annotate.anchoring.pagecache import Anchors, _Held

WORDS = [
    "the",
    "tool",
    "isolated",
    "from",
    "your",
    "other",
    "packages",
    "with",
    "pipx",
    "and",
    "uv",
    "run",
    "it",
    "in",
    "a",
    "shell",
]


class Rows:
    """A page's selector rows as `Store.text_selector_rows` gives them."""

    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows

    def text_selector_rows(self, page_url: str, *, include_resolved: bool = False) -> list[Any]:
        return self.rows


def _page(rng: random.Random) -> str:
    return "\n".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 25))) for _ in range(30)
    )


def _rows(text: str, rng: random.Random) -> list[tuple[Any, ...]]:
    rows = []
    for n in range(25):
        start = rng.randrange(0, len(text) - 40)
        end = start + rng.randint(1, 30)
        exact = text[start:end]
        prefix, suffix = text[max(0, start - 32) : start], text[end : end + 32]
        rows.append((f"a_{n}", exact, prefix, suffix, start, end, None))
    return rows


def _odd(rows: list[tuple[Any, ...]], rng: random.Random) -> list[tuple[Any, ...]]:
    """One selector that `locate_many` does not take at its position as it stands."""
    i = rng.randrange(len(rows))
    id, exact, prefix, suffix, start, end, replaced = rows[i]
    odd = rng.choice(
        [
            (id, exact, prefix, suffix, None, None, replaced),  # no position
            (id, exact, prefix, suffix, start, end + 1, replaced),  # position and quote disagree
            (id, exact, "x" * (start + 1), suffix, start, end, replaced),  # prefix before 0
            (id, "  ", prefix, suffix, start, start + 2, replaced),  # whitespace only
            (id, exact, prefix, suffix + "zz", start, end, replaced),  # suffix not there
            (id, exact, prefix, suffix, start, end, "its replacement"),
        ]
    )
    return [*rows[:i], odd, *rows[i + 1 :]]


def _texts(text: str, rng: random.Random) -> list[str]:
    """The page as a reload, a rebuild, edits and emoji leave it."""
    lines = text.split("\n")
    k = rng.randrange(len(lines))
    return [
        text,
        text + "\n1",
        text + "\n2",
        "A new first line.\n" + text,
        "\n".join([*lines[:k], lines[k].upper(), *lines[k + 1 :]]),
        text.replace(" ", "  ", 3),
        "📁 " + text,
        text + "\n📁",
        text,
    ]


@pytest.mark.parametrize("seed", range(30))
def test_held_answers_are_those_of_the_full_path(seed: int) -> None:
    rng = random.Random(seed)
    text = _page(rng)
    rows = _rows(text, rng)
    if seed % 2:
        rows = _odd(rows, rng)
    store = Rows(rows)
    warm = Anchors(store)  # keeps what it learns from one text to the next
    for version in _texts(text, rng):
        for resolved in (False, True):
            answer, _ = warm.locate("/p/", version, resolved)
            fresh, remembered = Anchors(store).locate("/p/", version, resolved)
            assert not remembered
            assert answer == fresh, (seed, version[:40])


def test_a_rebuilt_page_with_every_quote_in_place_is_not_searched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = random.Random(7)
    text = _page(rng)
    anchors = Anchors(Rows(_rows(text, rng)))
    searched: list[int] = []
    real = pageindex.PageIndex.locate_many

    def counted(self: pageindex.PageIndex, text: str, selectors: Any) -> Any:
        searched.append(len(text))
        return real(self, text, selectors)

    monkeypatch.setattr(pageindex.PageIndex, "locate_many", counted)
    first, remembered = anchors.locate("/p/", text, False)
    assert (searched, remembered) == ([len(text)], False)
    # A rebuild that added a line at the end: every quote where it was, no search.
    again, remembered = anchors.locate("/p/", text + "\nMore.", False)
    assert (again, remembered, searched) == (first, False, [len(text)])
    # The same text once more: a reload, remembered.
    assert anchors.locate("/p/", text + "\nMore.", False) == (first, True)
    # A quote gone from its place: searched.
    moved = "A new first line.\n" + text
    anchors.locate("/p/", moved, False)
    assert searched == [len(text), len(moved)]


def test_a_page_url_written_another_way_reads_the_pages_notes(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: Test\n")
    (tmp_path / "docs").mkdir()
    with annotate.open(tmp_path) as store:
        a = store.add_annotation(
            {
                "pageUrl": "/guide/install/",
                "note": "Check.",
                "selectedText": "pipx",
                "quote": {"exact": "pipx", "prefix": "Use ", "suffix": " when"},
                "position": {"start": 4, "end": 8},
            }
        )
        for written in ("/guide/install/", "/guide/install", "guide/install/index.html"):
            rows = store.text_selector_rows(written)
            assert [r[0] for r in rows] == [a.id], written
        assert store.text_selector_rows("/guide/other/") == []


def test_a_text_with_characters_outside_the_bmp_is_left_to_the_full_path() -> None:
    # The overlay counts UTF-16 units, the text here code points: past such a character the
    # stored offsets are not this text's, and only the full path converts them.
    held = _Held.of([("a_1", "pipx", "Use ", "", 4, 8, None)], b"{}", "Use pipx")
    assert held is not None and held.holds("Use pipx now")
    assert not held.holds("Use pipx now 📁")


def test_a_note_added_or_gone_is_never_answered_from_the_last_selectors() -> None:
    rng = random.Random(3)
    text = _page(rng)
    rows = _rows(text, rng)
    store = Rows(rows)
    anchors = Anchors(store)
    anchors.locate("/p/", text, False)
    for changed in (rows[:-1], [*rows, (*rows[0][:1], "x", *rows[0][2:])], rows):
        store.rows = changed
        answer, _ = anchors.locate("/p/", text + "\nNew.", False)
        assert answer == Anchors(store).locate("/p/", text + "\nNew.", False)[0]
        assert len(json.loads(answer)["anchors"]) == len(changed)
