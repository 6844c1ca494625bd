"""One declaration per field of an annotation, a page note and a reply.

A `Field` names the JSON key, the column, the type, the size limit, whether it may be null, whether a
client sends it (and may edit it) and whether the Markdown export reads it. From these tables, once
at import, come:

- `to_dict` of `models.Annotation`, `PageNote` and `Reply` (`Table.to_dict`);
- the row decoders `store._annotation`, `_page_note`, `_reply` (`Table.decoder`);
- the JSON SQLite writes for listings, `sqljson.ANNOTATION_JSON` (`Field.sql`);
- the OpenAPI schemas of answers and of create bodies (annotate/web/openapi.py);
- the limits and the field sets of annotate/validation.py (`limit`, `input`, `editable`);
- the rows of the Markdown export: their columns (`Table.select`) and names (`Table.row`, which
  the parameters of `export._annotation` and `export._page_note` repeat; a test compares them).

Both the generated functions and the SQL are plain code once built (a dict display, a constructor
call, one `json_object(...)`), as fast as the hand-written ones they replace; tests/test_fields.py
adds a field to a copy of the tables and checks that every piece picks it up, and
tests/test_fields_pinned.py pins every answer byte for byte.

A field whose value is not one column (the quote, the source, …) spells its pieces out: `decode`
(Python over the row `r`), `encode` (Python over `self`), `sql` (SQL over the row `a`), `ref` (its
OpenAPI schema) and `outline` (its columns in the export rows).
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["ANNOTATION", "PAGE_NOTE", "REPLY", "SELECTION", "Field", "Table"]

T = TypeVar("T")

STATUSES = ("open", "in_progress", "addressed", "resolved")
INTENTS = ("comment", "delete", "replace", "insert")
# `removed`: the agent deleted the text as the note asked; re-anchoring leaves such a note be.
ANCHOR_STATES = ("anchored", "stale", "orphaned", "removed")
ROLES = ("reviewer", "agent")
KINDS = ("text", "element")

# Types of a one-column field: its JSON type, and how the OpenAPI schema of an answer spells it.
TYPES = ("string", "integer", "number", "boolean", "timestamp", "enum", "object", "list")


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


@dataclass(frozen=True)
class Field:
    """One field: its JSON key, and what each surface needs to know about it."""

    key: str
    type: str = "string"
    nullable: bool = False
    # The longest value a client may send (validation.text, the OpenAPI `maxLength`).
    limit: int | None = None
    enum: tuple[str, ...] = ()
    # Sent by a client when creating (others the server sets), editable afterwards, required.
    input: bool = False
    editable: bool = False
    required: bool = False
    # In the JSON answer (False: input only, kept in a column, e.g. `inCode`).
    answer: bool = True
    # What a NULL column reads as (a page title stored NULL is "").
    blank: str | None = None
    # Read by the Markdown export: a column of the export row named after the attribute.
    export: bool = False
    # The schema version that adds its column (annotate/schema.py generates that migration);
    # 0 for the columns of the hand-written migrations.
    since: int = 0
    # Spelled out when the value is not one column (see the module docstring).
    column: str = ""
    decode: str = ""
    encode: str = ""
    sql: str = ""
    ref: str = ""
    outline: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"Field {self.key!r}: type must be one of {', '.join(TYPES)}")

    @property
    def attr(self) -> str:
        """The Python attribute (snake_case)."""
        return _snake(self.key)

    @property
    def col(self) -> str:
        return self.column or self.attr

    def decode_py(self) -> str:
        if self.decode:
            return self.decode
        value = f"r[{self.col!r}]"
        return f"{value} or {self.blank!r}" if self.blank is not None else value

    def encode_py(self) -> str:
        if self.encode:
            return self.encode
        if self.type == "object":
            return f"self.{self.attr}.to_dict() if self.{self.attr} else None"
        return f"self.{self.attr}"

    def sql_expr(self, alias: str = "a.") -> str:
        """The JSON value in SQL, over the row `a` (`alias=""`: over the table, unaliased)."""
        if self.sql:
            return self.sql
        value = f"{alias}{self.col}"
        return f"coalesce({value}, {_quote_sql(self.blank)})" if self.blank is not None else value

    def outline_columns(self) -> tuple[tuple[str, str, str], ...]:
        """(name in the export row, SQL over the table, Python over the object `a`)."""
        if self.outline:
            return self.outline
        return ((self.attr, self.sql_expr(""), f"a.{self.attr}"),) if self.export else ()


def _quote_sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class Table:
    """The fields of one kind of item, in the order of its JSON answer."""

    def __init__(
        self,
        name: str,
        sql_table: str,
        fields: tuple[Field, ...],
        *,
        decoder_args: str,
        decoder_prelude: str = "",
    ) -> None:
        self.name = name
        self.sql_table = sql_table
        self.fields = fields
        self.by_key = {f.key: f for f in fields}
        self.decoder_args = decoder_args
        self.decoder_prelude = decoder_prelude
        outline = [c for f in fields for c in f.outline_columns()]
        # The rows of the Markdown export: `select` reads them straight from the table, in the
        # order of `row`'s names. mypy only models a namedtuple whose name and fields are literals
        # (error code misc); these come from the table.
        self.row: Any = namedtuple(  # type: ignore[misc]
            f"{name}Row", [name for name, _, _ in outline]
        )
        self.select = ", ".join(sql for _, sql, _ in outline)
        self._outline = outline

    def __getitem__(self, key: str) -> Field:
        return self.by_key[key]

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    @property
    def answer(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.answer)

    @property
    def input_keys(self) -> frozenset[str]:
        return frozenset(f.key for f in self.fields if f.input)

    @property
    def editable_keys(self) -> frozenset[str]:
        return frozenset(f.key for f in self.fields if f.editable)

    @property
    def server_set(self) -> frozenset[str]:
        """Keys of the answer the store sets: accepted in a create body, never taken from it."""
        return frozenset(f.key for f in self.answer if not f.input)

    def to_dict(self) -> Callable[[Any], dict[str, Any]]:
        """`to_dict(self)` as one dict display, in the order of the table."""
        body = ", ".join(f"{f.key!r}: {f.encode_py()}" for f in self.answer)
        return _compile(f"def to_dict(self):\n    return {{{body}}}\n", "to_dict", {})

    def decoder(self, cls: type[T], namespace: Mapping[str, Any]) -> Callable[..., T]:
        """`cls` from a row `r` of the table (one constructor call); its parameters are
        `decoder_args`, which the caller's annotation spells out."""
        args = ", ".join(f"{f.attr}={f.decode_py()}" for f in self.answer)
        prelude = f"    {self.decoder_prelude}\n" if self.decoder_prelude else ""
        source = f"def decode({self.decoder_args}):\n{prelude}    return cls({args})\n"
        return _compile(source, "decode", {**namespace, "cls": cls})

    def row_of(self) -> Callable[[Any], tuple[Any, ...]]:
        """The export row of an object (what `select` reads from the table)."""
        args = ", ".join(py for _, _, py in self._outline)
        source = f"def row_of(a):\n    return row({args})\n"
        return _compile(source, "row_of", {"row": self.row})


def _compile(source: str, name: str, namespace: dict[str, Any]) -> Callable[..., Any]:
    exec(compile(source, f"<annotate.fields {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def _object_sql(*pairs: tuple[str, str]) -> str:
    """`json_object('key', value, …)`."""
    return "json_object(" + ", ".join(f"'{key}', {value}" for key, value in pairs) + ")"


def _element_sql(key: str) -> str:
    return f"coalesce(json_extract(a.element_selector, '$.{key}'), '')"


LIFECYCLE = (
    Field("author", nullable=True, limit=200, input=True),
    Field("createdAt", type="timestamp"),
    Field("updatedAt", type="timestamp"),
    Field("inProgressAt", type="timestamp", nullable=True),
    Field("addressedAt", type="timestamp", nullable=True),
    Field("resolvedAt", type="timestamp", nullable=True),
)
REPLIES = Field(
    "replies",
    type="list",
    ref="Reply",
    decode="replies",
    encode="[r.to_dict() for r in self.replies]",
    # json(): a subquery's result loses the mark that makes json_object embed it as JSON.
    # `{reply}`: annotate/sqljson.py puts a reply's JSON (from REPLY) there.
    sql="json((SELECT json_group_array({reply}) FROM "
    "(SELECT * FROM replies WHERE parent_id = a.id ORDER BY rowid) AS r))",
)

# Issue #20: the build a note was made on (annotate/build.py), and for an annotation the commit
# of a newer build of the same branch its source was located in again (`anchoredOn`). Columns only;
# the answer is the one object `build`.
BUILD_SINCE = 7
LINES_SINCE = 8
BUILD_COLUMNS = (
    Field("buildBranch", nullable=True, answer=False, since=BUILD_SINCE),
    Field("buildCommit", nullable=True, answer=False, since=BUILD_SINCE),
)
_BUILD_DECODE = (
    'Build(b, c{more}) if ((b := r["build_branch"]), (c := r["build_commit"])) != (None, None) '
    "else None"
)
_BUILD_SQL = "CASE WHEN a.build_branch IS NOT NULL OR a.build_commit IS NOT NULL THEN {object} END"
_BUILD_OBJECT = _object_sql(("branch", "a.build_branch"), ("commit", "a.build_commit"))


def _build_field(anchored: bool) -> Field:
    """`build`: `{branch, commit}` or null; an annotation adds `anchoredOn` once it was located
    again on a newer build of its branch (only then: a key that says nothing costs tokens)."""
    build = _BUILD_OBJECT
    if anchored:
        # json_patch drops a key whose patch value is null (RFC 7396): `anchoredOn` only when set.
        build = f"json_patch({build}, json_object('anchoredOn', a.anchored_on))"
    return Field(
        "build",
        type="object",
        nullable=True,
        ref="Build",
        decode=_BUILD_DECODE.format(more=', r["anchored_on"]' if anchored else ""),
        sql=_BUILD_SQL.format(object=build),
        # The Markdown export names a note's build where that tells something (annotate/build.py
        # `named`).
        outline=(
            ("build_branch", "build_branch", "a.build.branch if a.build else None"),
            ("build_commit", "build_commit", "a.build.commit if a.build else None"),
        ),
    )


REPLY = Table(
    "Reply",
    "replies",
    (
        Field("id"),
        Field("role", type="enum", enum=ROLES),
        Field("author", nullable=True, limit=200),
        Field("message", limit=10_000),
        Field("createdAt", type="timestamp"),
    ),
    decoder_args="r",
)

ANNOTATION = Table(
    "Annotation",
    "annotations",
    (
        Field("id", export=True),
        Field("type", type="enum", enum=KINDS, input=True, export=True),
        Field("pageUrl", limit=2_048, input=True, required=True, export=True),
        Field("pageTitle", limit=1_000, input=True, editable=True, blank="", export=True),
        Field("note", limit=10_000, input=True, editable=True, export=True),
        Field("status", type="enum", enum=STATUSES, export=True),
        Field("intent", type="enum", enum=INTENTS, input=True, editable=True, export=True),
        Field("suggestion", nullable=True, limit=10_000, input=True, editable=True, export=True),
        Field("selectedText", nullable=True, limit=10_000, input=True, export=True),
        Field(
            "quote",
            type="object",
            nullable=True,
            input=True,
            ref="Quote",
            decode='TextQuote(r["quote_exact"] or "", r["quote_prefix"] or "", '
            'r["quote_suffix"] or "") if text else None',
            sql="CASE WHEN a.type = 'text' THEN "
            + _object_sql(
                ("exact", "coalesce(a.quote_exact, '')"),
                ("prefix", "coalesce(a.quote_prefix, '')"),
                ("suffix", "coalesce(a.quote_suffix, '')"),
            )
            + " END",
        ),
        Field(
            "position",
            type="object",
            nullable=True,
            input=True,
            ref="Position",
            decode='TextPosition(start, r["position_end"]) if text and '
            '(start := r["position_start"]) is not None else None',
            sql="CASE WHEN a.type = 'text' AND a.position_start IS NOT NULL THEN "
            + _object_sql(("start", "a.position_start"), ("end", "a.position_end"))
            + " END",
        ),
        Field("replacedText", nullable=True, limit=10_000, export=True),
        Field(
            "elementSelector",
            type="object",
            nullable=True,
            input=True,
            ref="ElementSelector",
            # Stored as validated JSON with every field (validation.element_selector).
            decode='element(e) if not text and (e := r["element_selector"]) else None',
            sql="CASE WHEN a.type != 'text' AND a.element_selector != '' THEN "
            + _object_sql(
                ("cssSelector", _element_sql("cssSelector")),
                ("xpath", _element_sql("xpath")),
                ("tagName", _element_sql("tagName")),
                ("description", _element_sql("description")),
                (
                    "attributes",
                    "json(coalesce(json_extract(a.element_selector, '$.attributes'), '{}'))",
                ),
                ("outerHtmlPreview", _element_sql("outerHtmlPreview")),
            )
            + " END",
            outline=(
                (
                    "css_selector",
                    "json_extract(element_selector, '$.cssSelector')",
                    "a.element_selector.css_selector if a.element_selector else None",
                ),
                (
                    "outer_html_preview",
                    "json_extract(element_selector, '$.outerHtmlPreview')",
                    "a.element_selector.outer_html_preview if a.element_selector else None",
                ),
            ),
        ),
        Field(
            "source",
            type="object",
            nullable=True,
            ref="Source",
            decode='Source(path, r["source_line_start"], r["source_line_end"], '
            'r["source_excerpt"] or "", kind=r["source_kind"], object=r["source_object"], '
            'last_known=r["anchor_state"] != "anchored") if (path := r["source_path"]) else None',
            # kind, object and lastKnown only when they say something, as Source.to_dict
            # writes them.
            sql="CASE WHEN a.source_path != '' THEN json_patch("
            + _object_sql(
                ("path", "a.source_path"),
                ("lineStart", "a.source_line_start"),
                ("lineEnd", "a.source_line_end"),
                ("excerpt", "coalesce(a.source_excerpt, '')"),
            )
            + ", json_object('kind', nullif(a.source_kind, ''), 'object', "
            "nullif(a.source_object, ''), 'lastKnown', CASE WHEN a.anchor_state != 'anchored' "
            "THEN json('true') END)) END",
            outline=(
                ("source_path", "source_path", "a.source.path if a.source else None"),
                ("line_start", "source_line_start", "a.source.line_start if a.source else None"),
                ("line_end", "source_line_end", "a.source.line_end if a.source else None"),
            ),
        ),
        Field(
            "originalSource",
            type="object",
            nullable=True,
            ref="Source",
            decode='Source(was, r["original_line_start"], r["original_line_end"], '
            'r["original_excerpt"] or "") if (was := r["original_path"]) else None',
            sql="CASE WHEN a.original_path != '' THEN "
            + _object_sql(
                ("path", "a.original_path"),
                ("lineStart", "a.original_line_start"),
                ("lineEnd", "a.original_line_end"),
                ("excerpt", "coalesce(a.original_excerpt, '')"),
            )
            + " END",
            outline=(
                (
                    "original_excerpt",
                    "original_excerpt",
                    "a.original_source.excerpt if a.original_source else None",
                ),
                ("source_excerpt", "source_excerpt", "a.source.excerpt if a.source else None"),
            ),
        ),
        Field("anchorState", type="enum", enum=ANCHOR_STATES, export=True),
        Field(
            "anchorScore",
            type="number",
            nullable=True,
            # 17 significant digits: json_object's 15 would not read back as the same float.
            sql="CASE WHEN a.anchor_score IS NOT NULL THEN "
            "json(printf('%!.17g', a.anchor_score)) END",
        ),
        _build_field(anchored=True),
        REPLIES,
        *LIFECYCLE,
        # Where the selection was on the page: it starts inside <pre>/<code>, and which
        # occurrence of the quote (among those of the same kind) it is.
        Field("inCode", type="boolean", nullable=True, input=True, answer=False),
        Field("occurrence", type="integer", nullable=True, input=True, answer=False),
        *BUILD_COLUMNS,
        Field("anchoredOn", nullable=True, answer=False, since=BUILD_SINCE),
        # Issue #26: the Markdown file's lines (a short hash of each, annotate/reconcile.py) when
        # the note was last located there, so a note that goes stale has its last known lines
        # carried through a line diff to the file as it is.
        Field("sourceLines", nullable=True, answer=False, since=LINES_SINCE),
    ),
    decoder_args="r, replies",
    # A row's names are looked up one by one: each column is read once.
    decoder_prelude='text = r["type"] == "text"',
)

# Where a text annotation was selected on its page (input only, in no answer): which copy of a
# repeated quote the Markdown locator takes (`reconcile.locate_source`). `annotate mcp --remote`
# asks the team server for them (`Store.selections`) to locate notes in its checkout alike.
SELECTION = (ANNOTATION["inCode"], ANNOTATION["occurrence"])

PAGE_NOTE = Table(
    "PageNote",
    "page_notes",
    (
        Field("id", export=True),
        Field("pageUrl", limit=2_048, input=True, required=True, export=True),
        Field("pageTitle", limit=1_000, input=True, editable=True, blank="", export=True),
        Field("note", limit=10_000, input=True, editable=True, required=True, export=True),
        Field("status", type="enum", enum=STATUSES, export=True),
        Field(
            "source",
            type="object",
            nullable=True,
            ref="PageSource",
            # The page's Markdown file, from the plugin's page record or mkdocs.yml.
            decode="PageSource(source) if source else None",
        ),
        _build_field(anchored=False),
        REPLIES,
        *LIFECYCLE,
        *BUILD_COLUMNS,
    ),
    decoder_args="r, replies, source=None",
)
