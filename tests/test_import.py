"""Import: astro-inline-review's inline-review.json and our own JSON export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import annotate
from annotate.export import JSON_FORMAT, render
from annotate.importing import import_file
from annotate.store import Store

from .conftest import element_note, text_note

# Each test using the `store` fixture runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")

FIXTURE = Path(__file__).parent / "fixtures" / "inline-review.json"


def test_inline_review_file(store: Store) -> None:
    counts = import_file(store, FIXTURE)
    assert counts == {"annotations": 4, "pageNotes": 1, "replies": 3, "reviews": 0, "skipped": 0}

    a = store.get_annotation("m3k9x2p1a")
    assert (a.type, a.page_url, a.page_title) == ("text", "/", "Home | Example Site")
    assert a.selected_text == "Astro is a web framework"
    # Their long context strings become our 32-character prefix and suffix.
    assert a.quote == annotate.TextQuote(
        "Astro is a web framework",
        "ample site. This paragraph introduces the project. "[-32:],
        " for building fast, content-focused websites."[:32],
    )
    assert len(a.quote.prefix) == 32
    assert a.status == "addressed"
    assert (a.created_at, a.in_progress_at, a.addressed_at) == (
        "2026-02-20T10:15:00.000Z", "2026-02-20T10:58:00.000Z", "2026-02-20T11:02:00.000Z",
    )  # fmt: skip
    assert a.replaced_text == "Astro is a content-driven web framework"
    assert [(r.role, r.message) for r in a.replies] == [
        ("agent", "Changed to 'content-driven web framework'."),
        ("reviewer", "Good, but keep it short."),
    ]

    e = store.get_annotation("m3k9x5q7b")
    assert e.status == "in_progress"
    assert e.element_selector == annotate.ElementSelector(
        css_selector="header > img.logo",
        xpath="/html[1]/body[1]/header[1]/img[1]",
        tag_name="img",
        description="Site logo",
        attributes={"class": "logo", "src": "/logo.png", "alt": "Logo"},
        outer_html_preview='<img class="logo" src="/logo.png" alt="Logo">',
    )

    # An old record without status but with resolvedAt was resolved; a reply without role came
    # from their MCP tool, so it is the agent's.
    old = store.get_annotation("m3k9x8r2c")
    assert old.status == "resolved"
    assert [r.role for r in old.replies] == ["agent"]

    note = store.get_page_note("m3k9z0t5e")
    assert (note.page_url, note.note, note.status) == (
        "/about",
        "Add a section about the team.",
        "open",
    )

    # The imported notes work with every tool.
    store.set_in_progress("m3k9y1s4d")
    assert [x.id for x in store.list_annotations("/about")] == ["m3k9x5q7b"]


def test_import_twice_changes_nothing(store: Store) -> None:
    import_file(store, FIXTURE)
    before = render(store, "json", include_resolved=True)
    counts = import_file(store, FIXTURE)
    assert counts == {"annotations": 0, "pageNotes": 0, "replies": 0, "reviews": 0, "skipped": 8}
    after = render(store, "json", include_resolved=True)
    strip = lambda s: {k: v for k, v in json.loads(s).items() if k != "exportedAt"}  # noqa: E731
    assert strip(before) == strip(after)


def test_our_json_round_trips(store: Store, tmp_path: Path) -> None:
    a = store.add_annotation(text_note(intent="replace", suggestion="pipx install mkdocs-annotate"))
    e = store.add_annotation(element_note(author="ana"))
    n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add troubleshooting."})
    store.create_review({"mode": "review", "message": "Questions first"})
    store.set_in_progress(a.id)
    store.address_annotation(a.id, replaced_text="pipx install mkdocs-annotate")
    store.add_agent_reply(a.id, "Switched to pipx.")
    store.add_reply(n.id, "Also cover Windows.", author="ana")
    store.accept(e.id)
    store.conn.execute(
        "UPDATE annotations SET source_path='docs/guide/install.md', source_line_start=12, "
        "source_line_end=14, source_excerpt='Run `pip install`', anchor_score=97.5 WHERE id=?",
        (a.id,),
    )
    exported = render(store, "json")
    path = tmp_path / "export.json"
    path.write_text(exported)

    other = Store(tmp_path / "other.db")
    counts = import_file(other, path)
    assert counts == {"annotations": 2, "pageNotes": 1, "replies": 2, "reviews": 1, "skipped": 0}
    again = json.loads(render(other, "json"))
    original = json.loads(exported)
    for key in ("annotations", "pageNotes", "reviews"):
        assert again[key] == original[key]
    assert other.get_annotation(a.id).source == annotate.Source(
        "docs/guide/install.md", 12, 14, "Run `pip install`"
    )


def _sourced(source: str) -> str:
    """An export of one text annotation with `source` (JSON text of its keys) added."""
    return (
        f'{{"format": "{JSON_FORMAT}", "version": 1, "annotations": [{{"type": "text", '
        f'"pageUrl": "/", "note": "x", "selectedText": "ok", {source}}}]}}'
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "is not valid JSON"),
        ("[1, 2]", "An import must be a JSON object"),
        ('{"hello": "world"}', "Not an export of mkdocs-annotate nor an astro-inline-review"),
        ('{"format": "mkdocs-annotate", "version": 9}', "version 9"),
        ('{"version": 1, "annotations": "nope"}', "annotations must be a list"),
        (
            '{"version": 1, "annotations": [{"type": "text", "pageUrl": "/", "note": "x", '
            '"selectedText": "ok"}, {"type": "element", "pageUrl": "/", "note": "x", '
            '"elementSelector": {"cssSelector": "p", "evil": 1}}]}',
            'annotations[1]: Unknown field "evil" in elementSelector',
        ),
        (
            '{"version": 1, "annotations": [{"id": "../../x", "type": "text", "pageUrl": "/", '
            '"selectedText": "ok"}]}',
            "is not a valid id",
        ),
        # The source composites, checked part by part from the field table (annotate/fields.py).
        (_sourced('"source": "docs/x.md"'), "annotations[0]: source must be an object"),
        (_sourced('"source": {"lineStart": 1, "lineEnd": 2}'), "source.path is required"),
        (
            _sourced('"originalSource": {"path": "x.md", "lineStart": 0, "lineEnd": 2}'),
            "annotations[0]: originalSource lines must be positive integers",
        ),
        (
            _sourced('"source": {"path": "x.md", "lineStart": 1, "lineEnd": true}'),
            "source lines must be positive integers",
        ),
        (
            _sourced('"source": {"path": 7, "lineStart": "a", "lineEnd": 2}'),
            "source.path must be a string",
        ),
        (
            _sourced(
                '"originalSource": {"path": "x.md", "lineStart": 1, "lineEnd": 2, '
                f'"excerpt": "{"x" * 10_001}"}}'
            ),
            "originalSource.excerpt is 10,001 characters long; the limit is 10,000",
        ),
    ],
)
def test_bad_files_import_nothing(store: Store, tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "in.json"
    path.write_text(content)
    with pytest.raises(annotate.ImportFormatError) as e:
        import_file(store, path)
    assert message in str(e.value)
    assert str(path) in str(e.value)
    assert store.list_annotations(include_resolved=True) == []


def test_missing_file(store: Store, tmp_path: Path) -> None:
    with pytest.raises(annotate.ImportFormatError, match="does not exist"):
        import_file(store, tmp_path / "nope.json")
