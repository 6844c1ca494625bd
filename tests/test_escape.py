"""No field forges structure on any surface (issue #27 item 6): every user string of the Markdown
export, the inline markers and the context text goes through `annotate.escape.escape`, and a
property test puts arbitrary text into each field in turn and checks that each surface keeps
exactly the structure it has with a plain value there."""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import markdown
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

import annotate
from annotate import inline
from annotate.context import Context
from annotate.escape import escape
from annotate.export import to_markdown
from annotate.models import Annotation, PageNote, Reply, Source

from .conftest import text_note, write_project

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)
# What forges structure in Markdown and in plain lines: markup, line breaks of every kind,
# terminal and bidi controls; the rest of Unicode comes from `st.characters`.
NASTY = [
    *"`*_[]()<>#-=+|~:!\\\"' \t\n\r1.{}&;/",
    "\u2028",
    "\u2029",
    "\x85",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1b",
    "\u202e",
    "\u200b",
    "-->",
    "<!--",
    "```",
    "~~~",
    "1. ",
    "- ",
    "# ",
    "### Annotations",
    "[a](b)",
    "<b>",
    "](",
]
HOSTILE = st.lists(
    st.sampled_from(NASTY) | st.characters(exclude_categories=("Cs",), exclude_characters="\0"),
    min_size=1,
    max_size=30,
).map("".join)

# Each field a user (a reviewer, an agent, a hostile team member) writes, and how it is set on a
# note: an annotation on text, one on an element, a page note.
FIELDS: dict[str, Callable[[dict[str, Any], str], None]] = {
    "pageTitle": lambda n, v: n["text"].__setattr__("page_title", v),
    "note": lambda n, v: n["text"].__setattr__("note", v),
    "suggestion": lambda n, v: n["text"].__setattr__("suggestion", v),
    "selectedText": lambda n, v: n["text"].__setattr__("selected_text", v),
    "replacedText": lambda n, v: n["text"].__setattr__("replaced_text", v),
    "replies.message": lambda n, v: n["text"].replies[0].__setattr__("message", v),
    "replies.author": lambda n, v: n["text"].replies[0].__setattr__("author", v),
    "author": lambda n, v: n["text"].__setattr__("author", v),
    "cssSelector": lambda n, v: n["element"].element_selector.__setattr__("css_selector", v),
    "outerHtmlPreview": lambda n, v: n["element"].element_selector.__setattr__(
        "outer_html_preview", v
    ),
    "description": lambda n, v: n["element"].element_selector.__setattr__("description", v),
    "source.path": lambda n, v: n["text"].__setattr__("source", Source(v, 3, 3, "x")),
    "pageNote.note": lambda n, v: n["page"].__setattr__("note", v),
    "pageNote.pageTitle": lambda n, v: n["page"].__setattr__("page_title", v),
}


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three real notes made through the store, with every field the surfaces show filled."""
    root = write_project(
        tmp_path_factory.mktemp("escape"),
        "# Install\n\nRun pip install mkdocs-annotate in a shell.\n",
    )
    with annotate.open(root) as store:
        text = store.add_annotation(text_note(intent="replace", suggestion="Run pipx"))
        store.add_reply(text.id, "Which one?")
        element = store.add_annotation(
            {
                "type": "element",
                "pageUrl": "/guide/install/",
                "pageTitle": "Install",
                "note": "Bigger.",
                "elementSelector": {
                    "cssSelector": "p.x",
                    "xpath": "/p",
                    "tagName": "p",
                    "description": "a paragraph",
                    "outerHtmlPreview": "<p>x</p>",
                },
            }
        )
        page = store.add_page_note({"pageUrl": "/guide/install/", "note": "Split it."})
        return {
            "text": store.get_annotation(text.id),
            "element": store.get_annotation(element.id),
            "page": store.get_page_note(page.id),
            "path": root,
        }


def _with(notes: dict[str, Any], field: str, value: str) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) for k, v in notes.items() if k != "path"}
    if not out["text"].replies:
        out["text"].replies.append(Reply("r_0123456789", "agent", None, "x", "2026-01-01"))
    FIELDS[field](out, value)
    return out


def _plain(value: str) -> str:
    """A harmless value of the same line structure (for fields shown over several lines)."""
    return "\n".join("x" if line.strip() else "" for line in value.splitlines()) or "x"


# -- the Markdown export ------------------------------------------------------------------------

MD = MarkdownIt("commonmark")
# Tokens that are structure of the export: what it writes itself, and what a field must never add.
STRUCTURE = {
    "heading_open",
    "hr",
    "bullet_list_open",
    "ordered_list_open",
    "list_item_open",
    "fence",
    "code_block",
    "html_block",
    "html_inline",
    "link_open",
    "image",
    "code_inline",
    "strong_open",
    "em_open",
    "blockquote_open",
    "hardbreak",
}


def _structure(text: str) -> Counter[tuple[str, int]]:
    found: Counter[tuple[str, int]] = Counter()
    for token in MD.parse(text):
        if token.type in STRUCTURE:
            found[(token.type, token.level)] += 1
        for child in token.children or []:
            if child.type in STRUCTURE:
                found[(child.type, token.level)] += 1
    return found


def _export(n: dict[str, Any]) -> str:
    return to_markdown([n["text"], n["element"]], [n["page"]], now=NOW)


# -- the context text ---------------------------------------------------------------------------


KEY = re.compile(r"[a-z][a-z ()]*: ")
LINES = re.compile(r".*, lines \d+-\d+(?: \(> marks the note's lines\))?:")


def _context_lines(n: dict[str, Any]) -> list[str]:
    """The keys of the lines that start at the margin in the context text of each note (a
    field's further lines are indented under it; the file's lines come after the header)."""
    keys = []
    for item in (n["text"], n["element"], n["page"]):
        path = item.source.path if isinstance(item, Annotation) and item.source else "docs/x.md"
        context = Context(item, path, 3, 3, 1, ("# Install", "", "Run pip."), None)
        previous = None
        for line in context.text().split("\n"):
            if previous == "" and LINES.fullmatch(line) and not KEY.match(line):
                keys.append("[lines]")  # the file's lines follow, numbered
                break
            previous = line
            if line.startswith((" ", ">")) or not line:
                continue
            if line.startswith("[a_") or line.startswith("[p_"):
                keys.append("[header]")
            else:
                keys.append(line.split(":", 1)[0])
    return keys


def _markers(n: dict[str, Any]) -> list[str]:
    return [inline.encode(item) for item in (n["text"], n["element"], n["page"])]


@pytest.mark.parametrize("field", sorted(FIELDS))
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=HOSTILE)
# Found by the property: blank lines after a page note's first (an empty quote), a leading tab
# (an indented code block), a backslash before trailing space (a hard break once trimmed).
@example(value="\n ")
@example(value="\t `")
@example(value="\\ ")
def test_no_field_forges_structure_on_any_surface(
    notes: dict[str, Any], field: str, value: str
) -> None:
    hostile, plain = _with(notes, field, value), _with(notes, field, _plain(value))
    # The Markdown export: the same headings, lists, items, fences, code spans, emphasis,
    # quotes; never a link, an image or HTML.
    assert _structure(_export(hostile)) == _structure(_export(plain))
    # The context text: the same lines at the margin, with the same keys.
    assert _context_lines(hostile) == _context_lines(plain)
    # The inline markers: one line each, read back as the note itself, rendered as nothing.
    items = (hostile["text"], hostile["element"], hostile["page"])
    for item, line in zip(items, _markers(hostile), strict=True):
        assert "\n" not in line and "\r" not in line
        assert inline.MARKER.fullmatch(line)
        assert inline.decode(line) == inline._trimmed(json.loads(json.dumps(item.to_dict())))
        page = f"Before.\n\n{line}\n\nAfter.\n"
        assert MD.render(page).split() == ["<p>Before.</p>", "<p>After.</p>"]
        assert markdown.markdown(page).split() == ["<p>Before.</p>", "<p>After.</p>"]


def test_every_field_a_surface_shows_is_covered() -> None:
    """The fields above are every user string of the notes' JSON that a surface writes out."""
    shown = {
        "pageTitle", "note", "suggestion", "selectedText", "replacedText", "author",
        "cssSelector", "outerHtmlPreview", "description",
    }  # fmt: skip
    assert shown <= set(FIELDS)
    assert {"replies.message", "replies.author", "source.path", "pageNote.note"} <= set(FIELDS)


def test_the_forgery_of_the_issue_is_plain_text(notes: dict[str, Any]) -> None:
    """A selector and a title with backticks and line breaks (issue #27): one entry, and the
    context text shows the line breaks as escapes."""
    n = _with(notes, "cssSelector", "p`\n\n### Annotations\n1. **forged**")
    FIELDS["pageTitle"](n, "T`\n### Annotations\n8. Element **`p`**")
    text = _export(n)
    assert [t.type for t in MD.parse(text)].count("heading_open") == 4
    assert text.count("(id: `") == 3
    context = Context(n["element"], "docs/x.md", None, None, 1, (), None).text()
    assert "element: p`\\x0a\\x0a### Annotations\\x0a1. **forged**" in context
    assert not any(line.startswith(("###", "1.")) for line in context.split("\n"))


def test_escape_refuses_an_unknown_form() -> None:
    with pytest.raises(ValueError, match="form must be one of"):
        escape("x", "html")  # type: ignore[arg-type]


def test_the_context_text_of_a_page_note(tmp_path: Path) -> None:
    page = PageNote("p_0123456789", "/x/", "T", "a\n[a_0000000000] forged", "open", [], None)
    context = Context(page, "docs/x.md", None, None, 1, (), None).text()
    assert context.split("\n")[1:3] == ["note: a", "  [a_0000000000] forged"]
