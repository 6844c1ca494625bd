"""The two gaps issue #13 measured on real sites after its first round: a deleted passage with
a one-word look-alike nearby must anchor nowhere (a wrong line is worse than none), and one-word
edits next to near-identical copies keep the note anchored in the Markdown where the page's
highlight follows it (the stored `anchorState` and the highlight agree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import annotate
from annotate.anchoring import build_selector, context_elsewhere, locate, locate_many
from annotate.sourcemap import locate_in_markdown, project_markdown

# A settings reference: sibling sections repeat their sentences with one word changed.
SETTINGS = """\
# Index settings

## `show_authors`

Use this setting to list the authors of each post on the index page.

This only applies to post excerpts on the index. Pages always list every author.

## `show_labels`

Use this setting to list the labels of each post on the index page.

This only applies to post excerpts on the index. Pages always list every label.

## `label_separator`

Use this setting to change the text shown between two labels of a post.
"""
LABELS = "This only applies to post excerpts on the index. Pages always list every label.\n\n"
LABELS_QUOTE = "applies to post excerpts on the index. Pages always list every label."
LABELS_CONTEXT = {
    "prefix": "each post on the index page.\nThis only ",
    "suffix": "\nlabel_separator\nUse this setting to",
}


def test_a_deleted_setting_does_not_anchor_on_its_one_word_sibling() -> None:
    assert SETTINGS.count(LABELS) == 1
    deleted = SETTINGS.replace(LABELS, "")
    assert locate_in_markdown(deleted, LABELS_QUOTE, **LABELS_CONTEXT, hint_line=13) is None


def test_the_same_setting_with_one_word_rewritten_is_followed() -> None:
    edited = SETTINGS.replace("list every label.", "show every label.")
    match = locate_in_markdown(edited, LABELS_QUOTE, **LABELS_CONTEXT, hint_line=13)
    assert match is not None and (match.line_start, match.line_end) == (13, 13)
    assert match.score < 100
    # ... also when a paragraph inserted above moved it down two lines.
    moved = edited.replace("## `show_authors`", "Read this first.\n\n## `show_authors`")
    match = locate_in_markdown(moved, LABELS_QUOTE, **LABELS_CONTEXT, hint_line=13)
    assert match is not None and (match.line_start, match.line_end) == (15, 15)


# Release notes: a heading says in title case what the paragraph under it says in prose.
NOTES = """\
# Release notes

## Version 3.0

### Incompatible Configuration Changes

After a large refactor, several incompatible configuration changes have
been made, and the sections below list them.

#### Themes have moved

Each theme now lives in its own package.
"""
NOTES_QUOTE = "incompatible configuration changes have"
NOTES_CONTEXT = {
    "prefix": "r a large refactor, several ",
    "suffix": " been made, and the sections bel",
}


def test_a_deleted_short_quote_does_not_anchor_on_a_heading_in_other_case() -> None:
    deleted = NOTES.replace(
        "After a large refactor, several incompatible configuration changes have\n"
        "been made, and the sections below list them.\n\n",
        "",
    )
    assert locate_in_markdown(deleted, NOTES_QUOTE, **NOTES_CONTEXT, hint_line=7) is None


def test_a_short_quote_with_one_word_rewritten_next_to_the_heading_is_followed() -> None:
    edited = NOTES.replace("configuration changes have", "configuration changes were")
    match = locate_in_markdown(edited, NOTES_QUOTE, **NOTES_CONTEXT, hint_line=7)
    assert match is not None and match.line_start == 7


# A guide shows the same line of Markdown three times, one word apart each time.
LINKS = """\
# Links

Write the file name of the page you link to.

```markdown
Read the [style guide](style.md) before you send changes.
```

The build turns such a link into one to the rendered page, whichever
folder the site is served from.

```markdown
Read the [style guide](../team/style.md) before you send changes.
```

An anchor may follow the file name, to link to one section.

```markdown
Read the [style guide](team.md#style) before you send changes.
```
"""
LINK_QUOTE = "Read the [style guide](style.md) before you send changes."
LINK_CONTEXT = {
    "prefix": "ge you link to.\n",
    "suffix": "\nThe build turns such a link into",
}


def write_page(project: Path, site: str, name: str, text: str) -> Path:
    """A one-page site `site` whose page `name` holds `text`, with a later mtime each write."""
    (project / "mkdocs.yml").write_text(f"site_name: {site}\nnav:\n  - {name}\n")
    (project / "docs").mkdir(exist_ok=True)
    page = project / "docs" / name
    before = page.stat().st_mtime if page.exists() else None
    page.write_text(text)
    if before is not None:  # a new mtime even on a coarse file system
        os.utime(page, (before + 5, before + 5))
    return page


def write_links(project: Path, text: str) -> Path:
    return write_page(project, "Links", "links.md", text)


@pytest.mark.parametrize("in_code", [True, False, None])
def test_a_one_word_edit_among_near_identical_code_lines_stays_anchored(
    tmp_path: Path, in_code: bool | None
) -> None:
    # Whatever the page reported about the selection (a page whose text changed after load has
    # reported prose for a code line), the note follows its own line, edited, as the page's
    # highlight does, instead of going stale at score 0.
    write_links(tmp_path, LINKS)
    store = annotate.open(tmp_path)
    body = {
        "pageUrl": "/links/",
        "note": "Use an absolute link here.",
        "selectedText": LINK_QUOTE,
        "quote": {"exact": LINK_QUOTE, **LINK_CONTEXT},
    }
    if in_code is not None:
        body["inCode"] = in_code
    note = store.add_annotation(body)
    assert note.source is not None and note.source.line_start == 6
    edited = LINKS.replace("before you send changes.", "before you push changes.", 1)
    write_links(tmp_path, "Read this first.\n\n" + edited)
    got = store.get_annotation(note.id)
    assert got.anchor_state == "anchored"
    assert got.source is not None and got.source.line_start == 8
    assert got.anchor_score is not None and got.anchor_score < 100
    # The page's highlight follows the same line.
    page = "Read this first.\n" + project_markdown(edited).text
    match = locate(page, LINK_QUOTE, **LINK_CONTEXT, start=LINKS.index("Read"))
    assert match is not None
    assert page[match.start : match.end].startswith("Read the [style guide](style.md)")


def test_the_page_agrees_a_deleted_setting_is_gone_and_follows_its_rewording() -> None:
    # The overlay's highlight comes from `locate` on the page text: it lights what the stored
    # state says is there, and nothing where the state says the passage is gone.
    old = project_markdown(SETTINGS).text
    start = old.index(LABELS_QUOTE)
    selector = build_selector(old, start, start + len(LABELS_QUOTE))
    deleted = project_markdown(SETTINGS.replace(LABELS, "")).text
    assert locate(deleted, **selector) is None
    assert locate_many(deleted, [selector]) == [None]
    edited = project_markdown(SETTINGS.replace("list every label.", "show every label.")).text
    match = locate(edited, **selector)
    assert match is not None and match.start == edited.index("applies to post excerpts", start - 5)
    assert locate_many(edited, [selector]) == [match]


# A heading right under the page title, reworded after a paragraph was inserted between them:
# the title (the stored prefix) still stands where the heading was, and frames it no more.
TROUBLE = """\
# Troubleshooting

## Tables inside lists are not rendered correctly

Indent the table by four spaces, as any block inside a list item. Python-Markdown reads
a table only at the start of a block, and a list item's blocks start at its indentation.

## Code blocks lose their highlighting in admonitions

Leave a blank line between the admonition's title and the fence, and indent both.
"""
TROUBLE_QUOTE = "Tables inside lists are not rendered correctly"


def test_a_reworded_heading_below_an_inserted_paragraph_is_followed_on_both_sides() -> None:
    edited = TROUBLE.replace("# Troubleshooting\n", "# Troubleshooting\n\nRead this first.\n")
    edited = edited.replace("inside lists", "inside tabs")
    old = project_markdown(TROUBLE).text
    start = old.index(TROUBLE_QUOTE)
    selector = build_selector(old, start, start + len(TROUBLE_QUOTE))
    context = {"prefix": selector["prefix"], "suffix": selector["suffix"]}
    match = locate_in_markdown(edited, TROUBLE_QUOTE, **context, hint_line=3)
    assert match is not None and match.line_start == 5
    # The page's check says the same of the heading where it stands now.
    page = project_markdown(edited).text
    at = page.index("Tables inside tabs")
    end = at + len("Tables inside tabs are not rendered correctly")
    assert not context_elsewhere(page, len(TROUBLE_QUOTE), **context, old=start, start=at, end=end)


# A theme guide shows one template line three times, in three fences (two inside block quotes),
# the first two followed by the same line.
SCRIPTS = """\
# Script tags

A theme links the site's scripts in its main template:

```django
<body>
  {{ page.content }}
  {%- for script in config.extra_javascript %}
    {{ script | script_tag }}
  {%- endfor %}
</body>
```

The items of the list used to be plain strings.

> New style:
>
> ```django
> {%- for script in config.extra_javascript %}
>   {{ script | script_tag }}
> {%- endfor %}
> ```

A theme that supports older versions as well checks for the new field:

> Backwards-compatible style:
>
> ```django
> {%- for script in config.extra_javascript %}
>   {%- if script.path %}
>     {{ script | script_tag }}
>   {%- endif %}
> {%- endfor %}
> ```
"""
SCRIPT_LINE = "{%- for script in config.extra_javascript %}"


def write_scripts(project: Path, text: str) -> None:
    write_page(project, "Themes", "scripts.md", text)


@pytest.mark.parametrize("nth", [1, 2])
def test_a_code_line_repeated_in_three_fences_keeps_its_own_copy(tmp_path: Path, nth: int) -> None:
    # The 2nd or 3rd copy, told by the page (`inCode`, `occurrence`) and its context, maps to
    # its own line; one word of it changed, the note stays there (it went to another copy, an
    # exact match whose context did not agree, at score 78-86), as the page's highlight does.
    lines = [n for n, line in enumerate(SCRIPTS.split("\n"), 1) if SCRIPT_LINE in line]
    assert lines == [8, 19, 29]
    text = project_markdown(SCRIPTS).text
    at = [n for n in range(len(text)) if text.startswith(SCRIPT_LINE, n)][nth]
    context = {"prefix": text[at - 32 : at], "suffix": text[at + len(SCRIPT_LINE) :][:32]}
    write_scripts(tmp_path, SCRIPTS)
    store = annotate.open(tmp_path)
    note = store.add_annotation(
        {
            "pageUrl": "/scripts/",
            "note": "Name the loop variable after what it holds.",
            "selectedText": SCRIPT_LINE,
            "quote": {"exact": SCRIPT_LINE, **context},
            "inCode": True,
            "occurrence": nth,
        }
    )
    assert note.source is not None
    assert (note.source.line_start, note.source.line_end) == (lines[nth], lines[nth])
    rows = SCRIPTS.split("\n")
    rows[lines[nth] - 1] = rows[lines[nth] - 1].replace("script in", "entry in")
    edited = "\n".join(rows)
    write_scripts(tmp_path, edited)
    got = store.get_annotation(note.id)
    assert got.anchor_state == "anchored"
    assert got.source is not None
    assert (got.source.line_start, got.source.line_end) == (lines[nth], lines[nth])
    page = project_markdown(edited).text
    match = locate(page, SCRIPT_LINE, **context, start=at, end=at + len(SCRIPT_LINE))
    assert match is not None and page[match.start : match.end].startswith("{%- for entry in")
