"""JSON read strictly, as the REST API reads a request body (issue #17, issue #32 item 11).

`json.loads` takes what RFC 8259 leaves open or forbids: the last of two equal keys wins (other
parsers keep the first), `NaN` and `Infinity` are numbers, an integer may have any number of
digits, and deep nesting ends in a `RecursionError`. `loads` refuses each with a `ValueError`
that says why, so every reader of untrusted JSON (the web app, `annotate import --inline`)
answers the same bad input the same way.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

__all__ = ["MAX_DIGITS", "TooDeep", "loads"]

# Python refuses longer integers with a message about its own settings. Fields the server sets are
# accepted whatever they hold (openapi.json), so a shorter bound would refuse valid bodies.
MAX_DIGITS = 4300


class TooDeep(ValueError):
    """The JSON nests deeper than the parser can follow."""


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _whole(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise ValueError(f"a number has more than {MAX_DIGITS} digits")
    return int(text)


def _number(text: str) -> float | int:
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"the number {text[:40]} is out of range")
    # JSON has one kind of number, and to JSON Schema (openapi.json) 12.0 is an integer: every
    # number field a body has is one.
    return int(number) if number.is_integer() else number


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Which of two equal keys counts differs between parsers: refuse rather than pick one.
    data = dict(pairs)
    if len(data) != len(pairs):
        twice = next(k for k, n in Counter(k for k, _ in pairs).items() if n > 1)
        raise ValueError(f"the key {twice!r} appears twice in one object")
    return data


def loads(text: str) -> Any:
    """`text` as JSON; `ValueError` (a `json.JSONDecodeError` for syntax) says why it is not.

    Refused: duplicate keys in one object, `NaN`/`Infinity`, integers of more than
    `MAX_DIGITS` digits, numbers out of range, nesting too deep for the parser.
    """
    try:
        return json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_int=_whole,
            parse_float=_number,
            object_pairs_hook=_no_duplicates,
        )
    except RecursionError:
        raise TooDeep("it is nested too deeply") from None
