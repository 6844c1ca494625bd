"""One declaration per field of an annotation, a page note and a reply.

A `Field` names the JSON key, the column, the type, the size limit, whether it may be null, whether a
client sends it (and may edit it) and whether the Markdown export reads it. A field whose value is an
object of several columns (the quote, the source, the build, …) names a `Composite`: a small table
of `Part`s, one per key of the object, each with its column. From these tables, once at import, come:

- `to_dict` of `models.Annotation`, `PageNote` and `Reply` (`Table.to_dict`), and of the objects
  the composites read as (`TextQuote`, `Source`, …: `Composite.to_dict`);
- the row decoders `store.decode_annotation`, `decode_page_note`, `decode_reply` (`Table.decoder`);
- the JSON SQLite writes for listings, `backends/sqlite_json.ANNOTATION_JSON` (`Field.sql_expr`);
- the OpenAPI schemas of answers and of create bodies (annotate/web/openapi.py);
- the limits and the field sets of annotate/validation.py (`limit`, `input`, `editable`);
- the rows of the Markdown export: their columns (`Table.select`) and names (`Table.row`, which
  the parameters of `export._annotation` and `export._page_note` repeat; a test compares them);
- the store row of an answer's JSON (`Table.columns`, `annotate mcp --remote`) and of an imported
  source (`Composite.stored`, annotate/importing.py).

Nothing is compiled from strings: the functions are closures over `operator.itemgetter` and
`attrgetter` of the table's names, as fast as the constructor calls they replace
(benchmarks/store.py); tests/test_fields.py adds a field to a copy of the tables and checks that
every piece picks it up, and tests/test_fields_pinned.py pins every answer byte for byte.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import namedtuple
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, TypeVar

__all__ = [
    "ANNOTATION",
    "COMPOSITES",
    "PAGE_NOTE",
    "REPLY",
    "SELECTION",
    "Composite",
    "Field",
    "Part",
    "Table",
]

T = TypeVar("T")
Row = Any  # a store row: read by column name (sqlite3.Row, a PostgreSQL row, a dict)

STATUSES = ("open", "in_progress", "addressed", "resolved")
INTENTS = ("comment", "delete", "replace", "insert")
# `removed`: the agent deleted the text as the note asked; re-anchoring leaves such a note be.
ANCHOR_STATES = ("anchored", "stale", "orphaned", "removed")
# `pending`, in answers only: an anchored note whose file changed, left to the background
# re-locator after a branch switch (annotate/relocator.py); neither a filter nor a count.
ANSWER_ANCHOR_STATES = (*ANCHOR_STATES, "pending")
ROLES = ("reviewer", "agent")
KINDS = ("text", "element")

# Types of a one-column field: its JSON type, and how the OpenAPI schema of an answer spells it.
TYPES = ("string", "integer", "number", "boolean", "timestamp", "enum", "object", "list")


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def _getter(get: Callable[[Any], Any], count: int) -> Callable[[Any], tuple[Any, ...]]:
    """`itemgetter`/`attrgetter` of `count` names as a function that always answers a tuple."""
    if count == 1:
        return lambda obj: (get(obj),)
    return get


def _dict_of(
    keys: tuple[str, ...], get: Callable[[Any], tuple[Any, ...]]
) -> Callable[[Any], dict[str, Any]]:
    """`{key: value}` of `get`'s values: a dict display for a composite's few keys (three times
    as fast as `dict(zip(…))`)."""
    if len(keys) == 2:
        k0, k1 = keys

        def two(obj: Any) -> dict[str, Any]:
            v0, v1 = get(obj)
            return {k0: v0, k1: v1}

        return two
    if len(keys) == 3:
        k0, k1, k2 = keys

        def three(obj: Any) -> dict[str, Any]:
            v0, v1, v2 = get(obj)
            return {k0: v0, k1: v1, k2: v2}

        return three
    if len(keys) == 4:
        k0, k1, k2, k3 = keys

        def four(obj: Any) -> dict[str, Any]:
            v0, v1, v2, v3 = get(obj)
            return {k0: v0, k1: v1, k2: v2, k3: v3}

        return four
    return lambda obj: dict(zip(keys, get(obj), strict=True))


def _quote_sql(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _object_sql(pairs: list[tuple[str, str]]) -> str:
    """`json_object('key', value, …)`."""
    return "json_object(" + ", ".join(f"'{key}', {value}" for key, value in pairs) + ")"


@dataclass(frozen=True)
class Part:
    """One key of a composite's JSON object, and the column (or, in a composite stored as one
    JSON text, the key of that JSON) it is kept in."""

    key: str
    column: str = ""
    # "string", "integer", "boolean", "enum" or "object" (a JSON object of strings).
    type: str = "string"
    # What a NULL reads as ("" for an excerpt that was never written).
    blank: Any = None
    nullable: bool = False
    enum: tuple[str, ...] = ()
    # In the JSON only when it says something (a truthy value), as `Source.kind`.
    optional: bool = False
    # Not a column of its own: read from `column` by `derive` (`lastKnown`, from the anchor
    # state), written in SQL as `sql` over the row `a`.
    derive: Callable[[Any], Any] | None = None
    sql: str = ""
    # The longest text it takes (annotate/validation.py, annotate/importing.py); an object
    # part's values.
    limit: int | None = None
    # What a client may send in it (annotate/validation.py): a text `required` (given, not
    # blank) or `filled` (not blank when given); matching `pattern`, which names it for the
    # message ("an element name"); when not given, the value of the input field `fallback`;
    # not less than the part `not_before`. An object part: at most `entries` names of at most
    # `name_limit` characters.
    required: bool = False
    filled: bool = False
    pattern: tuple[str, str] | None = None
    fallback: str = ""
    not_before: str = ""
    entries: int | None = None
    name_limit: int | None = None

    @property
    def attr(self) -> str:
        """The attribute of the object the composite reads as (snake_case)."""
        return _snake(self.key)

    @property
    def stored(self) -> bool:
        """Kept in a column of its own (not derived)."""
        return self.derive is None


@dataclass(frozen=True)
class Composite:
    """A field's value that is an object of several columns: its parts in the order of its JSON,
    and when a row has one (`when` over the row, `when_sql` over the row `a`)."""

    # Its OpenAPI schema's name.
    name: str
    parts: tuple[Part, ...]
    when: Callable[[Row], bool]
    when_sql: str = ""
    # Kept as one JSON text in this column (the element selector), its parts' columns (their
    # keys unless named) the keys of that JSON.
    json_column: str = ""
    # The name, in the decoder's namespace, of the class that makes the object from the parts'
    # values in their order.
    make: str = ""

    def __getitem__(self, key: str) -> Part:
        return next(p for p in self.parts if p.key == key)

    def reader(self, make: Callable[..., Any]) -> Callable[[Row], Any]:
        """The object of a row, or None (`make` takes the parts' values in their order)."""
        when = self.when
        if self.json_column:
            return self._json_reader(make)
        get = _getter(itemgetter(*(p.column for p in self.parts)), len(self.parts))
        # A NULL read as the part's blank, a derived part from its column: in place, no call.
        blanks = tuple((i, p.blank) for i, p in enumerate(self.parts) if p.blank is not None)
        derived = tuple((i, p.derive) for i, p in enumerate(self.parts) if p.derive is not None)
        if not blanks and not derived:
            return lambda r: make(*get(r)) if when(r) else None

        def read(r: Row) -> Any:
            if not when(r):
                return None
            values = list(get(r))
            for i, blank in blanks:
                if not values[i]:
                    values[i] = blank
            for i, derive in derived:
                values[i] = derive(values[i])
            return make(*values)

        return read

    def _json_reader(self, make: Callable[..., Any]) -> Callable[[Row], Any]:
        """The object of a row that keeps it as one JSON text (a key it lacks reads as the
        part's blank; a JSON object part as `{}`)."""
        when, column = self.when, self.json_column
        keys = tuple((p.column or p.key, p.blank) for p in self.parts)
        objects = tuple(i for i, p in enumerate(self.parts) if p.type == "object")

        def read(r: Row) -> Any:
            if not when(r) or not (stored := r[column]):
                return None
            found = json.loads(stored)
            values = [found.get(key, blank) for key, blank in keys]
            for i in objects:
                values[i] = values[i] or {}
            return make(*values)

        return read

    def to_dict(self) -> Callable[[Any], dict[str, Any]]:
        """`to_dict(self)` of the object it reads as: the parts in order, an optional one only
        when it says something."""
        always = [p for p in self.parts if not p.optional]
        keys = tuple(p.key for p in always)
        get = _getter(attrgetter(*(p.attr for p in always)), len(always))
        # A JSON object part is copied: the answer is not the object's own dict.
        copies = tuple(p.key for p in always if p.type == "object")
        extra = [p for p in self.parts if p.optional]
        optional = tuple(p.key for p in extra)
        more = _getter(attrgetter(*(p.attr for p in extra)), len(extra)) if extra else None
        plain = _dict_of(keys, get)
        if not copies and not optional:
            return plain

        def to_dict(obj: Any) -> dict[str, Any]:
            out = plain(obj)
            for key in copies:
                out[key] = dict(out[key])
            if more is not None:
                for key, value in zip(optional, more(obj), strict=True):
                    if value:
                        out[key] = value
            return out

        return to_dict

    def sql_expr(self, alias: str) -> str:
        """The JSON object in SQL over the row `a` (`alias`, "a."), NULL when there is none."""
        pairs = [(p.key, self._part_sql(p, alias)) for p in self.parts if not p.optional]
        value = _object_sql(pairs)
        optional = [(p.key, self._part_sql(p, alias)) for p in self.parts if p.optional]
        if optional:
            # json_patch drops a key whose patch value is null (RFC 7396): an optional part
            # only when set.
            value = f"json_patch({value}, {_object_sql(optional)})"
        return f"CASE WHEN {self.when_sql.replace('{a}', alias)} THEN {value} END"

    def _part_sql(self, p: Part, alias: str) -> str:
        if p.sql:
            return p.sql.replace("{a}", alias)
        if self.json_column:
            found = f"json_extract({alias}{self.json_column}, '$.{p.column or p.key}')"
            if p.type == "object":
                return f"json(coalesce({found}, '{{}}'))"
            return f"coalesce({found}, {_quote_sql(p.blank)})"
        column = f"{alias}{p.column}"
        if p.optional:
            return f"nullif({column}, '')"
        return f"coalesce({column}, {_quote_sql(p.blank)})" if p.blank is not None else column

    def column_sql(self, p: Part) -> str:
        """A part's column over the table, unaliased (the Markdown export's rows)."""
        if self.json_column:
            return f"json_extract({self.json_column}, '$.{p.column or p.key}')"
        return p.column

    def columns(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """The columns of its JSON object (`{}`: every column None)."""
        if self.json_column:
            return {self.json_column: json.dumps(value) if value else None}
        return {p.column: value.get(p.key) for p in self.parts if p.stored}


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
    column: str = ""
    # An object of several columns (see the module docstring).
    composite: Composite | None = None
    # Not read from the row: the decoder's argument of this name (replies, a page's file).
    argument: bool = False
    # The JSON value in SQL over the row `a` when it is not the column (`{a}`: the alias).
    sql: str = ""
    # The OpenAPI schema's name of a list's items (a composite's: its own name).
    ref: str = ""
    # Columns of the export rows read from composites: (row name, field key, part key).
    outline: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"Field {self.key!r}: type must be one of {', '.join(TYPES)}")
        if self.composite is not None and not self.ref:
            object.__setattr__(self, "ref", self.composite.name)

    @property
    def attr(self) -> str:
        """The Python attribute (snake_case)."""
        return _snake(self.key)

    @property
    def col(self) -> str:
        return self.column or self.attr

    @property
    def plain(self) -> bool:
        """One column, read as it is stored."""
        return self.composite is None and not self.argument

    def reader(self, namespace: Mapping[str, Any]) -> Callable[[Row], Any]:
        """Its value from a row (a field that is not `plain`)."""
        if self.composite is not None:
            return self.composite.reader(namespace[self.composite.make])
        col, blank = self.col, self.blank
        return lambda r: r[col] or blank

    def sql_expr(self, alias: str = "a.") -> str:
        """The JSON value in SQL, over the row `a` (`alias=""`: over the table, unaliased)."""
        if self.sql:
            return self.sql.replace("{a}", alias)
        if self.composite is not None:
            return self.composite.sql_expr(alias)
        value = f"{alias}{self.col}"
        return f"coalesce({value}, {_quote_sql(self.blank)})" if self.blank is not None else value


# A column of the export rows: its name, its SQL over the table, the object's attribute and, for
# a composite, the part's attribute ("" for a plain field).
_Outline = tuple[str, str, str, str]


class Table:
    """The fields of one kind of item, in the order of its JSON answer."""

    def __init__(
        self,
        name: str,
        sql_table: str,
        fields: tuple[Field, ...],
        *,
        decoder_args: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.sql_table = sql_table
        self.fields = fields
        self.by_key = {f.key: f for f in fields}
        # The keys of the fields the decoder takes as arguments after the row, in their order.
        self.decoder_args = decoder_args
        outline = [c for f in fields for c in self._outline_of(f)]
        # The rows of the Markdown export: `select` reads them straight from the table, in the
        # order of `row`'s names. mypy only models a namedtuple whose name and fields are literals
        # (error code misc); these come from the table.
        self.row: Any = namedtuple(  # type: ignore[misc]
            f"{name}Row", [name for name, _, _, _ in outline]
        )
        self.select = ", ".join(sql for _, sql, _, _ in outline)
        self._outline = [(name, attr, part) for name, _, attr, part in outline]

    def _outline_of(self, f: Field) -> list[_Outline]:
        """(name in the export row, SQL over the table, the value of an object)."""
        if f.outline:
            out: list[_Outline] = []
            for name, key, part in f.outline:
                composite = self.by_key[key].composite
                assert composite is not None, key
                sql = composite.column_sql(composite[part])
                out.append((name, sql, _snake(key), _snake(part)))
            return out
        return [(f.attr, f.sql_expr(""), f.attr, "")] if f.export else []

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
        """`to_dict(self)`: every field of the answer, in the order of the table."""
        answer = self.answer
        keys = tuple(f.key for f in answer)
        get = _getter(attrgetter(*(f.attr for f in answer)), len(answer))
        objects = tuple(f.key for f in answer if f.type == "object")
        lists = tuple(f.key for f in answer if f.type == "list")

        def to_dict(item: Any) -> dict[str, Any]:
            out = dict(zip(keys, get(item), strict=True))
            for key in objects:
                if (value := out[key]) is not None:
                    out[key] = value.to_dict()
            for key in lists:
                out[key] = [v.to_dict() for v in out[key]]
            return out

        return to_dict

    def decoder(self, cls: type[T], namespace: Mapping[str, Any]) -> Callable[..., T]:
        """`cls` from a row of the table and the `decoder_args` (one constructor call); the
        caller's annotation spells its parameters out. `namespace` names the composites'
        `make`."""
        # The constructor's parameters in order, each from the row, a reader or an argument:
        # one positional call (a keyword call matches every name).
        fields = {f.attr: f for f in self.answer}
        parameters = inspect.signature(cls).parameters
        order = [name for name in parameters if name in fields]
        if list(parameters)[: len(order)] != order:
            raise ValueError(
                f"{cls.__name__}: a parameter not in the field table before {order[-1]}"
            )
        plain = fields[order[0]].col
        # The one-column fields in one lookup (the others' places hold a placeholder), a NULL
        # read as the field's blank in place.
        pick = itemgetter(*(f.col if (f := fields[a]).plain else plain for a in order))
        blanks = tuple(
            (i, f.blank)
            for i, a in enumerate(order)
            if (f := fields[a]).plain and f.blank is not None
        )
        read = tuple(
            (i, fields[a].reader(namespace))
            for i, a in enumerate(order)
            if not fields[a].argument and not fields[a].plain
        )
        arguments = []
        for key in self.decoder_args:
            f = self.by_key[key]
            make = namespace[f.composite.make] if f.composite is not None else None
            default = parameters[f.attr].default
            arguments.append((order.index(f.attr), make, default))

        # A table of plain fields only (replies) has each name looked up once anyway.
        direct = not read

        def decode(r: Row, *args: Any) -> T:
            # A dict is read as it is (`annotate mcp --remote`'s answer a column it lacks reads
            # as None); a sqlite3.Row (or the PostgreSQL row that reads like one) is made one
            # dict of its names and values: looking 37 names up in it one by one costs ten
            # times as much (a Row compares a name with each column's).
            row = r if direct or isinstance(r, dict) else dict(zip(r.keys(), r, strict=True))
            values = list(pick(row))
            for i, blank in blanks:
                if not values[i]:
                    values[i] = blank
            for i, reader in read:
                values[i] = reader(row)
            for n, (i, make, default) in enumerate(arguments):
                value = args[n] if n < len(args) else default
                values[i] = make(value) if make is not None and value else value
            return cls(*values)

        return decode

    def row_of(self) -> Callable[[Any], tuple[Any, ...]]:
        """The export row of an object (what `select` reads from the table)."""
        row, outline = self.row, self._outline
        # The object's attribute for each column of the row (a composite's: the composite),
        # then the part of each composite that is there.
        get = _getter(attrgetter(*(attr for _, attr, _ in outline)), len(outline))
        parts = tuple((i, part) for i, (_, _, part) in enumerate(outline) if part)

        def row_of(a: Any) -> tuple[Any, ...]:
            values = list(get(a))
            for i, part in parts:
                if (value := values[i]) is not None:
                    values[i] = getattr(value, part)
            return row._make(values)  # type: ignore[no-any-return]

        return row_of

    def columns(
        self,
        data: Mapping[str, Any],
        *,
        fallback: Mapping[str, str] | None = None,
        leave: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """The store row of an item's JSON: the plain fields' columns and the composites' but
        those in `leave` (a composite missing from `data` reads as its `fallback` one's)."""
        row = {f.col: data.get(f.key) for f in self.answer if f.plain}
        instead = fallback or {}
        for f in self.answer:
            if f.composite is not None and not f.argument and f.key not in leave:
                value = data.get(f.key) or data.get(instead.get(f.key, "")) or {}
                row.update(f.composite.columns(value))
        return row


# The composites: each a small table of its parts, in the order of its JSON object.
QUOTE = Composite(
    "Quote",
    (
        Part("exact", "quote_exact", blank="", limit=10_000, filled=True, fallback="selectedText"),
        Part("prefix", "quote_prefix", blank="", limit=1_000),
        Part("suffix", "quote_suffix", blank="", limit=1_000),
    ),
    when=lambda r: r["type"] == "text",
    when_sql="{a}type = 'text'",
    make="TextQuote",
)
POSITION = Composite(
    "Position",
    (
        Part("start", "position_start", type="integer"),
        Part("end", "position_end", type="integer", not_before="start"),
    ),
    when=lambda r: r["type"] == "text" and r["position_start"] is not None,
    when_sql="{a}type = 'text' AND {a}position_start IS NOT NULL",
    make="TextPosition",
)
# Stored as validated JSON with every field (validation.element_selector).
ELEMENT_SELECTOR = Composite(
    "ElementSelector",
    (
        Part("cssSelector", blank="", limit=2_000, required=True),
        Part("xpath", blank="", limit=2_000),
        Part(
            "tagName", blank="", limit=64, pattern=(r"^[A-Za-z][A-Za-z0-9-]*$", "an element name")
        ),
        Part("description", blank="", limit=1_000),
        Part("attributes", type="object", limit=2_000, entries=50, name_limit=200),
        Part("outerHtmlPreview", blank="", limit=5_000),
    ),
    when=lambda r: r["type"] != "text",
    when_sql="{a}type != 'text' AND {a}element_selector != ''",
    json_column="element_selector",
    make="ElementSelector",
)


def _source(prefix: str, *more: Part) -> Composite:
    """A Markdown file and 1-based lines, in the columns `<prefix>_path`, …"""
    return Composite(
        "Source",
        (
            Part("path", f"{prefix}_path", limit=1_000),
            Part("lineStart", f"{prefix}_line_start", type="integer"),
            Part("lineEnd", f"{prefix}_line_end", type="integer"),
            Part("excerpt", f"{prefix}_excerpt", blank="", limit=10_000),
            *more,
        ),
        when=lambda r: bool(r[f"{prefix}_path"]),
        when_sql=f"{{a}}{prefix}_path != ''",
        make="Source",
    )


# kind, object and lastKnown only when they say something (Source.to_dict).
SOURCE = _source(
    "source",
    Part("kind", "source_kind", type="enum", enum=("generated",), optional=True),
    Part("object", "source_object", optional=True),
    Part(
        "lastKnown",
        "anchor_state",
        type="boolean",
        optional=True,
        derive=lambda state: state != "anchored",
        sql="CASE WHEN {a}anchor_state != 'anchored' THEN json('true') END",
    ),
)
# The lines a note was made on (the same shape as `source`, none of its extras).
ORIGINAL_SOURCE = _source("original")
# The page's Markdown file, from the plugin's page record or mkdocs.yml (a page note's `source`).
PAGE_SOURCE = Composite("PageSource", (Part("path"),), when=bool, make="PageSource")

# Issue #20: the build a note was made on (annotate/build.py), and for an annotation the commit
# of a newer build of the same branch its source was located in again (`anchoredOn`, only then:
# a key that says nothing costs tokens).
BUILD_SINCE = 7
LINES_SINCE = 8
_BUILT = (
    Part("branch", "build_branch", nullable=True),
    Part("commit", "build_commit", nullable=True),
)


def _build(*more: Part) -> Composite:
    return Composite(
        "Build",
        (*_BUILT, *more),
        when=lambda r: r["build_branch"] is not None or r["build_commit"] is not None,
        when_sql="{a}build_branch IS NOT NULL OR {a}build_commit IS NOT NULL",
        make="Build",
    )


BUILD = _build()
ANCHORED_BUILD = _build(Part("anchoredOn", "anchored_on", optional=True, sql="{a}anchored_on"))
# The schemas of the composites' answers (annotate/web/openapi.py), by name.
COMPOSITES = {
    c.name: c for c in (QUOTE, POSITION, ELEMENT_SELECTOR, SOURCE, PAGE_SOURCE, ANCHORED_BUILD)
}

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
    argument=True,
    # json(): a subquery's result loses the mark that makes json_object embed it as JSON.
    # `{reply}`: annotate/backends/sqlite_json.py puts a reply's JSON (from REPLY) there.
    sql="json((SELECT json_group_array({reply}) FROM "
    "(SELECT * FROM replies WHERE parent_id = {a}id ORDER BY rowid) AS r))",
)
BUILD_COLUMNS = (
    Field("buildBranch", nullable=True, answer=False, since=BUILD_SINCE),
    Field("buildCommit", nullable=True, answer=False, since=BUILD_SINCE),
)
# The Markdown export names a note's build where that tells something (annotate/build.py `named`).
_BUILD_OUTLINE = (("build_branch", "build", "branch"), ("build_commit", "build", "commit"))


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
        Field("quote", type="object", nullable=True, input=True, composite=QUOTE),
        Field("position", type="object", nullable=True, input=True, composite=POSITION),
        Field("replacedText", nullable=True, limit=10_000, export=True),
        Field(
            "elementSelector",
            type="object",
            nullable=True,
            input=True,
            composite=ELEMENT_SELECTOR,
            outline=(
                ("css_selector", "elementSelector", "cssSelector"),
                ("outer_html_preview", "elementSelector", "outerHtmlPreview"),
            ),
        ),
        Field(
            "source",
            type="object",
            nullable=True,
            composite=SOURCE,
            outline=(
                ("source_path", "source", "path"),
                ("line_start", "source", "lineStart"),
                ("line_end", "source", "lineEnd"),
            ),
        ),
        Field(
            "originalSource",
            type="object",
            nullable=True,
            composite=ORIGINAL_SOURCE,
            outline=(
                ("original_excerpt", "originalSource", "excerpt"),
                ("source_excerpt", "source", "excerpt"),
            ),
        ),
        Field("anchorState", type="enum", enum=ANSWER_ANCHOR_STATES, export=True),
        Field(
            "anchorScore",
            type="number",
            nullable=True,
            # 17 significant digits: json_object's 15 would not read back as the same float.
            sql="CASE WHEN {a}anchor_score IS NOT NULL THEN "
            "json(printf('%!.17g', {a}anchor_score)) END",
        ),
        Field(
            "build",
            type="object",
            nullable=True,
            composite=ANCHORED_BUILD,
            outline=_BUILD_OUTLINE,
        ),
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
    decoder_args=("replies",),
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
        Field("source", type="object", nullable=True, composite=PAGE_SOURCE, argument=True),
        Field("build", type="object", nullable=True, composite=BUILD, outline=_BUILD_OUTLINE),
        REPLIES,
        *LIFECYCLE,
        *BUILD_COLUMNS,
    ),
    decoder_args=("replies", "source"),
)
