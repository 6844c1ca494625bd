"""Plans: documents put up for review before the agent acts on them (issue #29, docs/plans.md).

A plan is one reviewed document: an agent session's plan (Claude Code's `ExitPlanMode`), or a
Markdown file given to `request_review` / `annotate open`. Each time it is put up again it gets
the next numbered revision, with its Markdown as it was then; the person's answer is the
revision's `decision` (`approve`, `approve_with_notes`, `request_changes`) and `message`, and the
review ("Send to agent") that carried it. Reached as `store.plans`; it talks only to the store's
backend (annotate/backends/), so both SQLite and PostgreSQL hold it the same way.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .backends import Backend, now
from .errors import NotFoundError, ValidationError
from .models import DECISIONS

__all__ = [
    "DECISIONS",
    "MAX_PLAN_BYTES",
    "Plan",
    "PlanNotFound",
    "Plans",
    "Revision",
    "check_decision",
]

# A plan's Markdown, as UTF-8: Claude Code's plans are a few kB; a reviewed file is refused above.
MAX_PLAN_BYTES = 1_000_000
MAX_KEY = 500
MAX_TITLE = 500
MAX_MESSAGE = 10_000


class PlanNotFound(NotFoundError):
    """No plan (or no such revision of it) has this id."""

    def __init__(self, id: str, number: int | None = None) -> None:
        what = f'Plan with ID "{id}"' if number is None else f'Revision {number} of plan "{id}"'
        super().__init__(f"{what} not found")
        self.id = id
        self.number = number


def check_decision(value: Any, field: str = "decision") -> str:
    """`value` if it is one of `DECISIONS`, else `ValidationError`."""
    if value not in DECISIONS:
        raise ValidationError(
            f"{field} must be one of {', '.join(DECISIONS)}; got {value!r}", field
        )
    return str(value)


@dataclass(frozen=True)
class Revision:
    """One version of a plan's Markdown and the person's answer to it (None until given)."""

    plan_id: str
    number: int
    markdown: str
    created_at: str
    decision: str | None = None
    message: str | None = None
    review_id: str | None = None
    decided_at: str | None = None

    def to_dict(self, *, markdown: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "planId": self.plan_id,
            "number": self.number,
            "createdAt": self.created_at,
            "decision": self.decision,
            "message": self.message,
            "reviewId": self.review_id,
            "decidedAt": self.decided_at,
        }
        if markdown:
            data["markdown"] = self.markdown
        return data


@dataclass(frozen=True)
class Plan:
    """A reviewed document and its revisions, oldest first."""

    id: str
    key: str
    title: str | None
    source_path: str | None
    created_at: str
    updated_at: str
    revisions: tuple[Revision, ...] = ()

    @property
    def latest(self) -> Revision:
        return self.revisions[-1]

    def revision(self, number: int | None = None) -> Revision:
        """Revision `number` (the latest when None); `PlanNotFound` when it has none such."""
        if number is None and self.revisions:
            return self.revisions[-1]
        for r in self.revisions:
            if r.number == number:
                return r
        raise PlanNotFound(self.id, number)

    def last_reviewed(self, before: int) -> Revision | None:
        """The newest revision before `before` that got a decision: what a new one is diffed
        against."""
        done = [r for r in self.revisions if r.number < before and r.decision]
        return done[-1] if done else None

    def to_dict(self, *, markdown: bool = False) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "title": self.title,
            "sourcePath": self.source_path,
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "revisions": [r.to_dict(markdown=markdown) for r in self.revisions],
        }


def _markdown(value: Any) -> str:
    if not isinstance(value, str):
        raise ValidationError("markdown must be a string", "markdown")
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_PLAN_BYTES:
        raise ValidationError(
            f"The document is {size:,} bytes; the limit is {MAX_PLAN_BYTES:,}", "markdown"
        )
    if not value.strip():
        raise ValidationError("The document is empty: nothing to review", "markdown")
    return value


def _text(value: Any, field: str, limit: int) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise ValidationError(f"{field} must be a string of at most {limit:,} characters", field)
    return value


class Plans:
    """The plans of one store (`store.plans`)."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def submit(
        self,
        key: str,
        markdown: str,
        *,
        title: str | None = None,
        source_path: str | None = None,
    ) -> Revision:
        """Store `markdown` as the next revision of the plan named `key` (created on first use:
        `session:<id>` for an agent's plan, `file:<path>` for a file) and return it."""
        key = _text(key, "key", MAX_KEY) or ""
        if not key.strip():
            raise ValidationError("A plan needs a key (its session or file)", "key")
        markdown = _markdown(markdown)
        title = _text(title, "title", MAX_TITLE)
        stamp = now()
        with self._backend.transaction(True) as conn:
            row = conn.execute("SELECT id FROM plans WHERE key = ?", (key,)).fetchone()
            if row is None:
                plan_id = f"pl_{secrets.token_hex(5)}"
                conn.execute(
                    "INSERT INTO plans (id, key, title, source_path, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (plan_id, key, title, source_path, stamp, stamp),
                )
                number = 1
            else:
                plan_id = row[0]
                last = conn.execute(
                    "SELECT max(number) FROM plan_revisions WHERE plan_id = ?", (plan_id,)
                ).fetchone()[0]
                number = int(last or 0) + 1
                conn.execute(
                    "UPDATE plans SET updated_at = ?, title = coalesce(?, title) WHERE id = ?",
                    (stamp, title, plan_id),
                )
            conn.execute(
                "INSERT INTO plan_revisions (plan_id, number, markdown, created_at) "
                "VALUES (?, ?, ?, ?)",
                (plan_id, number, markdown, stamp),
            )
            self._backend.notify(conn)
        return Revision(plan_id, number, markdown, stamp)

    def get(self, id: str) -> Plan:
        """The plan `id` with every revision; `PlanNotFound` when there is none."""
        with self._backend.transaction(False) as conn:
            row = conn.execute(
                "SELECT id, key, title, source_path, created_at, updated_at FROM plans "
                "WHERE id = ?",
                (id,),
            ).fetchone()
            if row is None:
                raise PlanNotFound(id)
            revisions = conn.execute(
                "SELECT plan_id, number, markdown, created_at, decision, message, review_id, "
                "decided_at FROM plan_revisions WHERE plan_id = ? ORDER BY number",
                (id,),
            ).fetchall()
        return Plan(
            id=row[0],
            key=row[1],
            title=row[2],
            source_path=row[3],
            created_at=row[4],
            updated_at=row[5],
            revisions=tuple(Revision(*tuple(r)) for r in revisions),
        )

    def find(self, key: str) -> Plan | None:
        """The plan named `key`, or None."""
        with self._backend.transaction(False) as conn:
            row = conn.execute("SELECT id FROM plans WHERE key = ?", (key,)).fetchone()
        return None if row is None else self.get(row[0])

    def list(self) -> list[Plan]:
        """Every plan, the most recently revised first."""
        with self._backend.transaction(False) as conn:
            ids = [r[0] for r in conn.execute("SELECT id FROM plans ORDER BY updated_at DESC, id")]
        return [self.get(i) for i in ids]

    def decide(
        self,
        plan_id: str,
        number: int,
        decision: str,
        message: str | None = None,
        *,
        review_id: str | None = None,
    ) -> Revision:
        """Record the person's answer to revision `number`; the first answer stands (a second
        one is refused), so a hook and a page never disagree on what was decided."""
        decision = check_decision(decision)
        message = _text(message, "message", MAX_MESSAGE)
        with self._backend.transaction(True) as conn:
            row = conn.execute(
                "SELECT decision FROM plan_revisions WHERE plan_id = ? AND number = ?",
                (plan_id, number),
            ).fetchone()
            if row is None:
                raise PlanNotFound(plan_id, number)
            if row[0] is not None:
                raise ValidationError(
                    f"Revision {number} of plan {plan_id} was already decided ({row[0]})",
                    "decision",
                )
            conn.execute(
                "UPDATE plan_revisions SET decision = ?, message = ?, review_id = ?, "
                "decided_at = ? WHERE plan_id = ? AND number = ?",
                (decision, message or None, review_id, now(), plan_id, number),
            )
            self._backend.notify(conn)
        return self.get(plan_id).revision(number)

    def wait_for_decision(
        self,
        plan_id: str,
        number: int,
        timeout_s: float,
        *,
        poll_s: float = 0.25,
        stop: threading.Event | None = None,
        check: Callable[[], None] | None = None,
    ) -> Revision | None:
        """Revision `number` once it has a decision; None when `timeout_s` passed first or `stop`
        was set. `check`: called at each poll (the hook's server raising what it met)."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        stop = stop or threading.Event()
        woken = threading.Event()
        unsubscribe = self._backend.subscribe(woken.set)
        try:
            while not stop.is_set():
                woken.clear()
                if check is not None:
                    check()
                revision = self.get(plan_id).revision(number)
                if revision.decision is not None:
                    return revision
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                woken.wait(min(poll_s, left))
            return None
        finally:
            unsubscribe()
