"""Which notes a listing returns: one filter for the CLI, the MCP tools and the web API alike.

`Filter` checks its values once (each wrong value named with the rule, as `ValidationError`) and
turns into the SQL `WHERE` clause of a listing. The page URL is brought to the store's form by
the store (`Store.page_url`) before it gets here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .build import MAX_NAME
from .errors import ValidationError
from .models import ANCHOR_STATES, STATUSES

__all__ = ["TYPES", "Filter"]

TYPES = ("text", "element")
NO_LIMIT = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Filter:
    """A listing's filter.

    `status`: one status, several, or `all`; None means every status but `resolved`, unless
    `include_resolved`. `type` and `anchor_state` apply to annotations only. `branch`: only notes
    made on a build of that branch (annotate/build.py). `limit` and `offset` page through the
    listing in creation order (`limit` None: every match).
    """

    page_url: str | None = None
    status: tuple[str, ...] | None = None
    type: str | None = None
    anchor_state: tuple[str, ...] | None = None
    include_resolved: bool = False
    limit: int | None = None
    offset: int = 0
    branch: str | None = None

    @classmethod
    def of(
        cls,
        page_url: str | None = None,
        status: str | Iterable[str] | None = None,
        *,
        type: str | None = None,
        anchor_state: str | Iterable[str] | None = None,
        include_resolved: bool = False,
        limit: int | None = None,
        offset: int = 0,
        branch: str | None = None,
    ) -> Filter:
        """A filter from the values a caller wrote, each checked (`ValidationError` names it)."""
        statuses = None
        if status is not None and status != "all":
            statuses = _choices(status, STATUSES, "status")
        elif status == "all":
            include_resolved = True
        if type is not None and type not in TYPES:
            raise ValidationError(f"type must be 'text' or 'element', got {type!r}", "type")
        states = (
            None if anchor_state is None else _choices(anchor_state, ANCHOR_STATES, "anchorState")
        )
        for name, value in (("limit", limit), ("offset", offset)):
            if value is None and name == "limit":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValidationError(f"{name} must be a whole number >= 0, got {value!r}", name)
        if branch is not None:
            # Compared as written: the names builds record (annotate/build.py) are stripped.
            if not isinstance(branch, str) or not branch:
                raise ValidationError("branch must not be empty", "branch")
            if len(branch) > MAX_NAME:
                raise ValidationError(
                    f"branch must be at most {MAX_NAME} characters, got {len(branch)}", "branch"
                )
        return cls(page_url, statuses, type, states, include_resolved, limit, offset, branch)

    def where(self) -> tuple[str, list[Any]]:
        """The `WHERE` condition (never empty) and its parameters, without `limit`/`offset`."""
        where: list[str] = []
        params: list[Any] = []
        if self.page_url is not None:
            where.append("page_url = ?")
            params.append(self.page_url)
        if self.status is not None:
            where.append(f"status IN ({','.join('?' * len(self.status))})")
            params.extend(self.status)
        elif not self.include_resolved:
            where.append("status != 'resolved'")
        if self.type is not None:
            where.append("type = ?")
            params.append(self.type)
        if self.anchor_state is not None:
            where.append(f"anchor_state IN ({','.join('?' * len(self.anchor_state))})")
            params.extend(self.anchor_state)
        if self.branch is not None:
            where.append("build_branch = ?")
            params.append(self.branch)
        return " AND ".join(where) or "1 = 1", params

    def page(self) -> tuple[str, list[Any]]:
        """` LIMIT ? OFFSET ?` and its parameters, or nothing when every match is wanted."""
        if self.limit is None and not self.offset:
            return "", []
        # No limit: the largest BIGINT (PostgreSQL refuses SQLite's -1).
        return " LIMIT ? OFFSET ?", [NO_LIMIT if self.limit is None else self.limit, self.offset]


def _choices(value: str | Iterable[str], allowed: tuple[str, ...], field: str) -> tuple[str, ...]:
    values = (value,) if isinstance(value, str) else tuple(value)
    for v in values:
        if v not in allowed:
            raise ValidationError(f"{field} must be one of {', '.join(allowed)}, got {v!r}", field)
    return values
