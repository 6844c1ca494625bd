"""What is known about an annotated passage (`Selector`), where it is now (`Match`), and the
selector of a span (`build_selector`): the W3C TextQuoteSelector and TextPositionSelector of
docs/data-model.md (`quote`, `position`), as hypothesis/client
`src/annotator/anchoring/types.ts` names them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from .text import collapse, fold

__all__ = ["CONTEXT_LENGTH", "Match", "Method", "Query", "Selector", "build_selector"]

# Characters of context kept on each side of a quote (docs/data-model.md, `quote`).
CONTEXT_LENGTH = 32

Method = Literal["position", "exact", "replaced", "fuzzy"]


class Match(NamedTuple):
    """Where a quote is now: `text[start:end]`, how sure (0–100), and which step found it.

    `score` is 100 for the quote letter for letter (whitespace ignored) in agreeing context;
    otherwise the weighted similarity of quote and context (`tuning.QUOTE_WEIGHT` …), so an
    edited quote or a unique one out of its context scores less.
    """

    start: int
    end: int
    score: float
    method: Method


class Selector(NamedTuple):
    """What is known about an annotated passage: quote, context, old position, replacement.

    A named tuple, not a dataclass: a page load builds one per note, and a tuple is built in one
    call where a dataclass's `__init__` sets each attribute in turn.
    """

    exact: str
    prefix: str = ""
    suffix: str = ""
    start: int | None = None
    end: int | None = None
    replaced_text: str | None = None

    @classmethod
    def coerce(cls, value: Any) -> Selector:
        """A selector from a mapping or object, snake_case or the JSON shape `{quote, position,
        replacedText}` (an `Annotation` works too)."""
        if isinstance(value, Selector):
            return value
        quote = _field(value, "quote")
        position = _field(value, "position")
        source = value if quote is None else quote
        where = value if position is None else position
        replaced = _field(value, "replaced_text")
        if replaced is None:
            replaced = _field(value, "replacedText")
        return cls(
            exact=_field(source, "exact") or "",
            prefix=_field(source, "prefix") or "",
            suffix=_field(source, "suffix") or "",
            start=_field(where, "start"),
            end=_field(where, "end"),
            replaced_text=replaced or None,
        )


def _field(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


class Query(NamedTuple):
    """A selector folded for search (`text.fold`)."""

    quote: str
    prefix: str
    suffix: str
    replaced: str | None
    start: int | None
    end: int | None
    collapsed: str  # the quote with whitespace runs collapsed, for similarity

    @classmethod
    def of(cls, selector: Selector) -> Query:
        quote = fold(selector.exact)
        return cls(
            quote=quote,
            prefix=fold(selector.prefix),
            suffix=fold(selector.suffix),
            replaced=fold(selector.replaced_text) if selector.replaced_text else None,
            start=selector.start,
            end=selector.end,
            collapsed=collapse(quote),
        )


def build_selector(
    text: str, start: int, end: int, context: int = CONTEXT_LENGTH
) -> dict[str, Any]:
    """The selector of `text[start:end]`: exact, `context` characters of prefix and suffix,
    position."""
    if not 0 <= start <= end <= len(text):
        raise ValueError(
            f"Span {start}:{end} is not inside a text of {len(text)} characters; "
            "it needs 0 <= start <= end <= length."
        )
    return {
        "exact": text[start:end],
        "prefix": text[max(0, start - context) : start],
        "suffix": text[end : end + context],
        "start": start,
        "end": end,
    }
