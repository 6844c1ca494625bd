"""Annotations as JSON written by SQLite itself, for listings read on every page load.

`Annotation.to_dict()` is the authority on the JSON shape (SPEC §3); `ANNOTATION_JSON` is the same
shape as one SQL expression over a row of `annotations` (alias `a`), so a listing is one query with
no Python work per row: 200 notes in ~1.7 ms instead of ~4.6 ms for rows → objects → dicts → JSON
(benchmarks/api.py, "list the busiest page"). tests/test_sqljson.py pins the two to equal values
for every kind of row.

Differences in bytes, never in values: scores are written with 17 significant digits (SQLite's
`json_object` keeps 15, which would not read back as the same float), so `87.33333333333333`
comes out as `87.333333333333329`; every JSON reader parses both to the same number.
"""

from __future__ import annotations

__all__ = ["ANNOTATION_JSON"]


def _object(*pairs: tuple[str, str]) -> str:
    return "json_object(" + ", ".join(f"'{key}', {value}" for key, value in pairs) + ")"


_REPLY = _object(
    ("id", "r.id"),
    ("role", "r.role"),
    ("author", "r.author"),
    ("message", "r.message"),
    ("createdAt", "r.created_at"),
)

_ELEMENT = "json_extract(a.element_selector, '$.{}')"

ANNOTATION_JSON = _object(
    ("id", "a.id"),
    ("type", "a.type"),
    ("pageUrl", "a.page_url"),
    ("pageTitle", "coalesce(a.page_title, '')"),
    ("note", "a.note"),
    ("status", "a.status"),
    ("intent", "a.intent"),
    ("suggestion", "a.suggestion"),
    ("selectedText", "a.selected_text"),
    (
        "quote",
        "CASE WHEN a.type = 'text' THEN "
        + _object(
            ("exact", "coalesce(a.quote_exact, '')"),
            ("prefix", "coalesce(a.quote_prefix, '')"),
            ("suffix", "coalesce(a.quote_suffix, '')"),
        )
        + " END",
    ),
    (
        "position",
        "CASE WHEN a.type = 'text' AND a.position_start IS NOT NULL THEN "
        + _object(("start", "a.position_start"), ("end", "a.position_end"))
        + " END",
    ),
    ("replacedText", "a.replaced_text"),
    (
        "elementSelector",
        # Stored as validated JSON with every field (validation.element_selector).
        "CASE WHEN a.type != 'text' AND a.element_selector != '' THEN "
        + _object(
            ("cssSelector", f"coalesce({_ELEMENT.format('cssSelector')}, '')"),
            ("xpath", f"coalesce({_ELEMENT.format('xpath')}, '')"),
            ("tagName", f"coalesce({_ELEMENT.format('tagName')}, '')"),
            ("description", f"coalesce({_ELEMENT.format('description')}, '')"),
            (
                "attributes",
                "json(coalesce(json_extract(a.element_selector, '$.attributes'), '{}'))",
            ),
            ("outerHtmlPreview", f"coalesce({_ELEMENT.format('outerHtmlPreview')}, '')"),
        )
        + " END",
    ),
    (
        "source",
        # kind, object and lastKnown only when they say something, as Source.to_dict writes them.
        "CASE WHEN a.source_path != '' THEN json_patch("
        + _object(
            ("path", "a.source_path"),
            ("lineStart", "a.source_line_start"),
            ("lineEnd", "a.source_line_end"),
            ("excerpt", "coalesce(a.source_excerpt, '')"),
        )
        + ", json_object('kind', nullif(a.source_kind, ''), 'object', nullif(a.source_object, ''), "
        "'lastKnown', CASE WHEN a.anchor_state != 'anchored' THEN json('true') END)) END",
    ),
    (
        "originalSource",
        "CASE WHEN a.original_path != '' THEN "
        + _object(
            ("path", "a.original_path"),
            ("lineStart", "a.original_line_start"),
            ("lineEnd", "a.original_line_end"),
            ("excerpt", "coalesce(a.original_excerpt, '')"),
        )
        + " END",
    ),
    ("anchorState", "a.anchor_state"),
    (
        "anchorScore",
        "CASE WHEN a.anchor_score IS NOT NULL THEN json(printf('%!.17g', a.anchor_score)) END",
    ),
    (
        "replies",
        # json(): a subquery's result loses the mark that makes json_object embed it as JSON.
        f"json((SELECT json_group_array({_REPLY}) FROM "
        "(SELECT * FROM replies WHERE parent_id = a.id ORDER BY rowid) AS r))",
    ),
    ("author", "a.author"),
    ("createdAt", "a.created_at"),
    ("updatedAt", "a.updated_at"),
    ("inProgressAt", "a.in_progress_at"),
    ("addressedAt", "a.addressed_at"),
    ("resolvedAt", "a.resolved_at"),
)
"""One annotation row (`FROM annotations AS a`) as the JSON text of `Annotation.to_dict()`."""
