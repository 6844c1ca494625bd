"""Validation: limits and rules that name the field, unknown fields refused, nothing stored."""

from __future__ import annotations

from typing import Any

import pytest

import annotate
from annotate import validation
from annotate.store import Store

from .conftest import element_note, text_note

# Each test using the `store` fixture runs on both (tests/conftest.py).
BACKENDS = ("sqlite", "postgresql")


def refused(store: Store, data: Any, field: str, message: str) -> None:
    with pytest.raises(annotate.ValidationError) as e:
        store.add_annotation(data)
    assert e.value.field == field
    assert message in str(e.value)
    assert store.list_annotations(include_resolved=True) == []


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"note": "x" * 10_001}, "note", "note is 10,001 characters long; the limit is 10,000"),
        ({"selectedText": "x" * 10_001}, "selectedText", "selectedText is 10,001 characters"),
        ({"intent": "replace", "suggestion": "x" * 10_001}, "suggestion", "suggestion is 10,001"),
        ({"note": ""}, "note", "note must not be empty"),
        ({"note": None}, "note", "note is required"),
        ({"note": 42}, "note", "note must be a string"),
        ({"selectedText": "   "}, "selectedText", "selectedText must not be empty"),
        ({"pageUrl": None}, "pageUrl", "pageUrl is required"),
        ({"pageUrl": "guide/"}, "pageUrl", 'must be a site path starting with "/"'),
        ({"pageUrl": "https://evil.example/"}, "pageUrl", "site path"),
        ({"pageUrl": "//evil.example/x"}, "pageUrl", "site path"),
        ({"pageUrl": "/a/../../etc/"}, "pageUrl", '".." segments'),
        ({"pageUrl": "/a/?q=1"}, "pageUrl", "without query"),
        ({"pageUrl": "/a b/"}, "pageUrl", "spaces"),
        ({"pageUrl": "/" + "a" * 2048}, "pageUrl", "limit is 2,048"),
        ({"type": "comment"}, "type", "type must be 'text' or 'element'"),
        ({"intent": "rewrite"}, "intent", "intent must be one of comment, delete, replace, insert"),
        ({"intent": "replace"}, "suggestion", "suggestion is required for intent 'replace'"),
        ({"intent": "insert", "suggestion": " "}, "suggestion", "suggestion is required"),
        ({"suggestion": "foo"}, "suggestion", "only used with intent 'replace' or 'insert'"),
        ({"bogus": 1}, "bogus", 'Unknown field "bogus" in annotation'),
        ({"quote": {"exact": "x", "context": "y"}}, "quote.context", 'Unknown field "context"'),
        ({"quote": "pip"}, "quote", "quote must be an object"),
        ({"quote": {"prefix": "x" * 1001}}, "quote.prefix", "limit is 1,000"),
        ({"position": {"start": -1, "end": 3}}, "position.start", "between 0 and"),
        ({"position": {"start": "1", "end": 3}}, "position.start", "must be an integer"),
        ({"position": {"start": True, "end": 3}}, "position.start", "must be an integer"),
        ({"position": {"start": 5, "end": 3}}, "position.end", "must not be before"),
        (
            {"elementSelector": {"cssSelector": "p"}},
            "elementSelector",
            "only used with type 'element'",
        ),
        ({"pageTitle": "t" * 1001}, "pageTitle", "limit is 1,000"),
        ({"author": "a" * 201}, "author", "limit is 200"),
        ({"note": "a\x00b"}, "note", "NUL"),
    ],
)
def test_text_annotation_rules(store: Store, overrides: dict, field: str, message: str) -> None:
    refused(store, text_note(**overrides), field, message)


def sel(**overrides: Any) -> dict[str, Any]:
    return element_note(elementSelector={**element_note()["elementSelector"], **overrides})


@pytest.mark.parametrize(
    ("data", "field", "message"),
    [
        (element_note(elementSelector=None), "elementSelector", "elementSelector is required"),
        (element_note(elementSelector="div"), "elementSelector", "must be an object"),
        (sel(cssSelector=""), "elementSelector.cssSelector", "must not be empty"),
        (sel(cssSelector=None), "elementSelector.cssSelector", "is required"),
        (sel(cssSelector=["div"]), "elementSelector.cssSelector", "must be a string"),
        (sel(cssSelector="d" * 2001), "elementSelector.cssSelector", "limit is 2,000"),
        (sel(xpath="/" * 2001), "elementSelector.xpath", "limit is 2,000"),
        (sel(tagName="<script>"), "elementSelector.tagName", "must be an element name"),
        (sel(outerHtmlPreview="x" * 5001), "elementSelector.outerHtmlPreview", "limit is 5,000"),
        (sel(onclick="alert(1)"), "elementSelector.onclick", 'Unknown field "onclick"'),
        (sel(attributes=["a"]), "elementSelector.attributes", "must be an object"),
        (
            sel(attributes={f"a{i}": "v" for i in range(51)}),
            "elementSelector.attributes",
            "51 entries",
        ),
        (sel(attributes={"src": 5}), "elementSelector.attributes.src", "must be a string"),
        (sel(attributes={"src": "x" * 2001}), "elementSelector.attributes.src", "limit is 2,000"),
        (element_note(selectedText="x"), "selectedText", "only used with type 'text'"),
    ],
)
def test_element_selector_rules(store: Store, data: dict, field: str, message: str) -> None:
    refused(store, data, field, message)


def test_limits_are_inclusive(store: Store) -> None:
    a = store.add_annotation(
        text_note(
            note="n" * 10_000, selectedText="s" * 10_000, intent="replace", suggestion="x" * 10_000
        )
    )
    assert len(a.note) == len(a.selected_text) == len(a.suggestion) == 10_000


def test_intents_without_note(store: Store) -> None:
    # The intent says what to do, so the note may be empty.
    a = store.add_annotation(text_note(note="", intent="delete"))
    assert (a.intent, a.note) == ("delete", "")
    b = store.add_annotation(text_note(note="", intent="insert", suggestion="See also: pipx."))
    assert b.suggestion == "See also: pipx."


def test_not_an_object(store: Store) -> None:
    with pytest.raises(annotate.ValidationError, match="annotation must be an object"):
        store.add_annotation(["pageUrl", "/"])  # type: ignore[arg-type]


def test_html_is_stored_as_text(store: Store) -> None:
    evil = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    a = store.add_annotation(text_note(note=evil, selectedText=evil, pageTitle=evil))
    got = store.get_annotation(a.id)
    assert (got.note, got.selected_text, got.page_title) == (evil, evil, evil)


TEXT = {"pageUrl": "/p/", "note": "n", "selectedText": "sel"}
ELEMENT = {"type": "element", "pageUrl": "/p/", "note": "n"}


@pytest.mark.parametrize(
    ("data", "message", "field"),
    [
        ({**TEXT, "quote": {"exact": "x", "bogus": 1}}, 'Unknown field "bogus" in quote', "quote.bogus"),
        ({**TEXT, "quote": {"exact": ""}}, "quote.exact must not be empty", "quote.exact"),
        ({**TEXT, "quote": {"exact": "x" * 10_001}}, "quote.exact is 10,001 characters long; the limit is 10,000", "quote.exact"),
        ({**TEXT, "quote": {"suffix": "x" * 1_001}}, "quote.suffix is 1,001 characters long; the limit is 1,000", "quote.suffix"),
        ({**TEXT, "quote": "x"}, "quote must be an object", "quote"),
        ({**TEXT, "position": {"start": 1, "end": 2, "middle": 3}}, 'Unknown field "middle" in position', "position.middle"),
        ({**TEXT, "position": {"end": 2}}, "position.start must be an integer", "position.start"),
        ({**TEXT, "position": {"start": 1, "end": 100_000_001}}, "position.end must be between 0 and 100,000,000", "position.end"),
        ({**TEXT, "position": [1, 2]}, "position must be an object", "position"),
        ({**ELEMENT, "elementSelector": {"cssSelector": "p", "zeta": 1, "alpha": 2}}, 'Unknown field "alpha" in elementSelector', "elementSelector.alpha"),
        ({**ELEMENT, "elementSelector": {"cssSelector": ""}}, "elementSelector.cssSelector must not be empty", "elementSelector.cssSelector"),
        ({**ELEMENT, "elementSelector": {"cssSelector": "p", "xpath": "x" * 2_001}}, "elementSelector.xpath is 2,001 characters long; the limit is 2,000", "elementSelector.xpath"),
        ({**ELEMENT, "elementSelector": {"cssSelector": "p", "tagName": "x" * 65}}, "elementSelector.tagName is 65 characters long; the limit is 64", "elementSelector.tagName"),
        ({**ELEMENT, "elementSelector": {"cssSelector": "p", "description": "x" * 1_001}}, "elementSelector.description is 1,001 characters long; the limit is 1,000", "elementSelector.description"),
        ({**ELEMENT, "elementSelector": {"cssSelector": "p", "outerHtmlPreview": "x" * 5_001}}, "elementSelector.outerHtmlPreview is 5,001 characters long; the limit is 5,000", "elementSelector.outerHtmlPreview"),
        ({**ELEMENT, "elementSelector": {"cssSelector": "p", "tagName": "1a"}}, "elementSelector.tagName must be an element name, got '1a'", "elementSelector.tagName"),
        ({**ELEMENT, "elementSelector": "p"}, "elementSelector must be an object", "elementSelector"),
    ],
)  # fmt: skip
def test_composite_fields_refused_word_for_word(
    data: dict[str, Any], message: str, field: str
) -> None:
    """The composites' checks come from their part tables (annotate/fields.py): each message and
    field exactly as the hand-written checks said them (issue #28, item 4)."""
    with pytest.raises(annotate.ValidationError) as e:
        validation.annotation_input(data)
    assert (str(e.value), e.value.field) == (message, field)


def test_composite_fields_taken_as_before() -> None:
    columns = ("quote_exact", "quote_prefix", "quote_suffix", "position_start", "position_end")
    read = validation.annotation_input
    assert [read(TEXT)[c] for c in columns] == ["sel", "", "", None, None]
    given = {
        **TEXT,
        "quote": {"exact": "q", "prefix": "a", "suffix": "b"},
        "position": {"start": 3, "end": 4},
    }
    assert [read(given)[c] for c in columns] == ["q", "a", "b", 3, 4]
    element = read(
        {
            **ELEMENT,
            "elementSelector": {
                "cssSelector": "p",
                "tagName": "P",
                "attributes": {"k": "v"},
                "xpath": "/p",
            },
        }
    )
    # In this key order: the stored JSON text is written from it.
    assert list(element["element_selector"].items()) == [
        ("cssSelector", "p"), ("xpath", "/p"), ("tagName", "P"), ("description", ""),
        ("outerHtmlPreview", ""), ("attributes", {"k": "v"}),
    ]  # fmt: skip
