"""The two gaps issue #13 measured on real sites after its first round: a deleted passage with
a one-word look-alike nearby must anchor nowhere (a wrong line is worse than none), and one-word
edits next to near-identical copies keep the note anchored in the Markdown where the page's
highlight follows it (the stored `anchorState` and the highlight agree)."""

from __future__ import annotations

from annotate.sourcemap import locate_in_markdown

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
