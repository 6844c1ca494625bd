"""`Store.list_annotations(as_json=True)` (JSON written by SQLite) equals `to_dict()` of every listed note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import annotate
from tests.conftest import element_note, text_note

# Any text the store accepts: everything but lone surrogates and NUL, which validation refuses
# (SQLite's JSON functions would also cut a string at a NUL).
texts = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=40)
some_text = st.one_of(st.none(), texts)


def listed(store: annotate.Store, **filters: Any) -> tuple[list[dict[str, Any]], list[dict]]:
    from_sql = json.loads(store.list_annotations(**filters, as_json=True))
    from_objects = [a.to_dict() for a in store.list_annotations(**filters)]
    return from_sql, from_objects


INSTALL = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"


def install_page(project: Path, markdown: str = INSTALL) -> Path:
    """The Markdown file of `/guide/install/` (the page `text_note()` quotes), written."""
    md = project / "docs" / "guide" / "install.md"
    md.parent.mkdir(parents=True)
    md.write_text(markdown)
    return md


def test_every_field_of_every_kind(tmp_path: Path) -> None:
    install_page(tmp_path)
    store = annotate.open(tmp_path)
    located = store.add_annotation(text_note(intent="replace", suggestion="pipx install it"))
    assert located.source is not None  # a source object, lines and a score
    element = store.add_annotation(element_note())
    bare = store.add_annotation(
        text_note(pageUrl="/elsewhere/", pageTitle="", position=None, quote=None)
    )
    store.add_agent_reply(located.id, "Done: <b>pipx</b> ✓")
    store.add_reply(located.id, "Thanks\nand a second line", role="reviewer", author="Ada")
    store.address_annotation(located.id, "pipx install mkdocs-annotate")
    store.set_in_progress(element.id)
    store.accept(bare.id)

    sql, objects = listed(store, include_resolved=True)
    assert sql == objects
    assert [a["id"] for a in sql] == [located.id, element.id, bare.id]
    assert sql[0]["source"]["path"] == "docs/guide/install.md"
    assert isinstance(sql[0]["anchorScore"], float)
    assert [r["role"] for r in sql[0]["replies"]] == ["agent", "reviewer"]
    assert sql[1]["elementSelector"]["attributes"] == {"src": "panel.png", "alt": "Review panel"}
    assert sql[1]["quote"] is None and sql[2]["position"] is None


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"page_url": "/guide/install/"},
        {"status": "addressed"},
        {"status": ["open", "resolved"]},
        {"type": "element"},
        {"anchor_state": "orphaned"},
        {"include_resolved": True},
    ],
)
def test_filters_match_list_annotations(store: annotate.Store, filters: dict[str, Any]) -> None:
    ids = [store.add_annotation(text_note()).id for _ in range(3)]
    store.add_annotation(element_note(pageUrl="/other/"))
    store.address_annotation(ids[0])
    store.accept(ids[1])
    sql, objects = listed(store, **filters)
    assert sql == objects


def test_bad_filters_are_refused_alike(store: annotate.Store) -> None:
    with pytest.raises(annotate.ValidationError, match="type must be"):
        store.list_annotations(as_json=True, type="image")
    with pytest.raises(annotate.ValidationError, match="status must be one of"):
        store.list_annotations(as_json=True, status="done")


def test_a_changed_markdown_file_is_reconciled_first(tmp_path: Path) -> None:
    md = install_page(tmp_path)
    store = annotate.open(tmp_path)
    store.add_annotation(text_note())
    md.write_text("# Install\n\nA new paragraph.\n\nRun pip install mkdocs-annotate in a shell.\n")
    (note,) = json.loads(store.list_annotations(as_json=True))
    assert note["source"]["lineStart"] == 5
    md.unlink()
    (note,) = json.loads(store.list_annotations(as_json=True))
    assert note["anchorState"] == "orphaned"


rows = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["text", "element"]),
        "page_title": some_text,
        "note": texts,
        "suggestion": some_text,
        "selected_text": some_text,
        "quote_exact": some_text,
        "quote_prefix": some_text,
        "quote_suffix": some_text,
        "position_start": st.one_of(st.none(), st.integers(0, 2**40)),
        "replaced_text": some_text,
        "source_path": some_text,
        "source_line_start": st.integers(1, 10**6),
        "source_excerpt": some_text,
        "original_path": some_text,
        "original_line_start": st.integers(1, 10**6),
        "original_excerpt": some_text,
        "source_kind": st.sampled_from([None, "", "generated"]),
        "source_object": some_text,
        "anchor_state": st.sampled_from(["anchored", "stale", "orphaned", "removed"]),
        "anchor_score": st.one_of(st.none(), st.floats(0, 100)),
        "author": some_text,
        "attributes": st.dictionaries(texts, texts, max_size=3),
        "description": texts,
        "replies": st.lists(st.tuples(st.sampled_from(["agent", "reviewer"]), texts, some_text)),
    }
)


# No deadline: each example opens a new store (a migration), whose time on a loaded machine
# is no part of what this test checks (speed is measured in benchmarks/).
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(row=rows)
def test_any_stored_row(tmp_path: Path, row: dict[str, Any]) -> None:
    """Rows as an import or an older release may leave them, nulls and odd text included."""
    store = annotate.Store(tmp_path / f"{abs(hash(json.dumps(row, default=str)))}.db")
    replies = row.pop("replies")
    attributes, description = row.pop("attributes"), row.pop("description")
    element = {
        "cssSelector": "p",
        "xpath": "/p",
        "tagName": "p",
        "description": description,
        "outerHtmlPreview": "<p>",
        "attributes": attributes,
    }
    annotation = {
        **row,
        "id": "a_0123456789",
        "page_url": "/p/",
        "status": "open",
        "intent": "comment",
        "position_end": None if row["position_start"] is None else row["position_start"] + 5,
        "source_line_end": row["source_line_start"] + 1,
        "original_line_end": row["original_line_start"],
        "element_selector": json.dumps(element) if row["type"] == "element" else None,
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
    }
    store.insert_raw(
        [annotation],
        [],
        [
            {
                "id": f"r_{i:010d}",
                "parent_id": "a_0123456789",
                "role": role,
                "message": message,
                "author": author,
                "created_at": "2026-01-02T00:00:00Z",
            }
            for i, (role, message, author) in enumerate(replies)
        ],
    )
    sql, objects = listed(store)
    # Field by field, so that a failure names the field.
    assert [
        {k: v for k, v in a.items() if b.get(k) != v} for a, b in zip(sql, objects, strict=True)
    ] == [{}]
    assert sql == objects
    store.close()


def test_a_nul_in_the_markdown_is_stored_as_a_replacement_character(tmp_path: Path) -> None:
    install_page(tmp_path, INSTALL.replace("shell.", "shell.\x00 Then serve."))
    store = annotate.open(tmp_path)
    store.add_annotation(text_note())
    sql, objects = listed(store)
    assert sql == objects
    assert sql[0]["source"]["excerpt"].endswith("shell.\ufffd Then serve.")
