"""Annotations as JSON written by SQLite itself, for listings read on every page load.

`ANNOTATION_JSON` is the JSON shape of `Annotation.to_dict()` as one SQL expression over a row of
`annotations` (alias `a`), built from the field table (annotate/fields.py, `Field.sql`), so a
listing is one query with no Python work per row (benchmarks/api.py, "list the busiest page").
tests/test_sqljson.py pins the two to equal values for every kind of row.

Differences in bytes, never in values: scores are written with 17 significant digits (SQLite's
`json_object` keeps 15, which would not read back as the same float), so `87.33333333333333`
comes out as `87.333333333333329`; every JSON reader parses both to the same number.
"""

from __future__ import annotations

from ..fields import ANNOTATION, REPLY, Table

__all__ = ["ANNOTATION_JSON", "REPLY_JSON", "json_sql"]


def _object(*pairs: tuple[str, str]) -> str:
    return "json_object(" + ", ".join(f"'{key}', {value}" for key, value in pairs) + ")"


def json_sql(table: Table, alias: str) -> str:
    """One row of `table` (`FROM … AS <alias>`) as the JSON text of its `to_dict()`."""
    return _object(
        *((f.key, f.sql_expr(f"{alias}.").replace("{reply}", REPLY_JSON)) for f in table.answer)
    )


REPLY_JSON = _object(*((f.key, f.sql_expr("r.")) for f in REPLY.answer))
"""One reply row (`FROM replies AS r`) as the JSON text of `Reply.to_dict()`."""
ANNOTATION_JSON = json_sql(ANNOTATION, "a")
"""One annotation row (`FROM annotations AS a`) as the JSON text of `Annotation.to_dict()`."""
