"""Which comment each note became on a pull or merge request (issue #30): the store's noun
`store.pull_requests`, over the store's backend (NOUNS.md: one noun, one class).

A link is written as soon as the host accepted the comment, one transaction per request, so a
push cut short (network down, rate limit) keeps what was posted and the next push carries on
without posting anything twice. `pr_replies` remembers the host's replies already brought
into a note's thread or posted there from it, so neither command repeats itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..backends import now
from ..backends.interface import Backend

__all__ = ["Link", "PullRequestLinks", "Target"]


@dataclass(frozen=True, slots=True)
class Target:
    """A pull request (GitHub) or merge request (GitLab): the API's host, `owner/name` (a
    GitLab project's path) and the number (GitLab's iid)."""

    host: str
    repo: str
    number: int

    def __str__(self) -> str:
        return f"{self.repo}#{self.number}"


@dataclass(frozen=True, slots=True)
class Link:
    """One note's comment on one pull request.

    `placement`: "line" (a comment on lines of the diff), "file" (a file-level comment) or
    "body" (a paragraph of the review's body: page notes, notes on files the request does not
    touch); `comment_id` is the host's id of the comment (of the review, for "body"). `path`,
    `line_start`, `line_end`, `excerpt`: the lines commented on, as posted; `suggestion`: the
    lines a suggestion block proposed, None without one (an empty string deletes the lines)."""

    note_id: str
    placement: str
    comment_id: str | None
    path: str | None = None
    line_start: int | None = None
    line_end: int | None = None
    excerpt: str | None = None
    suggestion: str | None = None
    posted_at: str = ""


_COLUMNS = (
    "note_id, placement, comment_id, path, line_start, line_end, excerpt, suggestion, posted_at"
)


class PullRequestLinks:
    """The links between notes and pull-request comments, and the replies already pulled."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend

    def links(self, target: Target) -> dict[str, Link]:
        """Every note linked to `target`, by note id."""
        with self._backend.transaction(write=False) as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM pr_links WHERE host = ? AND repo = ? AND number = ?",
                (target.host, target.repo, target.number),
            ).fetchall()
        return {row[0]: Link(*row) for row in rows}

    def add(self, target: Target, links: Iterable[Link]) -> None:
        """Record comments the host accepted (a note already linked keeps its first link)."""
        stamp = now()
        with self._backend.transaction(write=True) as conn:
            for link in links:
                known = conn.execute(
                    "SELECT 1 FROM pr_links WHERE note_id = ? AND host = ? AND repo = ? "
                    "AND number = ?",
                    (link.note_id, target.host, target.repo, target.number),
                ).fetchone()
                if known is not None:
                    continue
                conn.execute(
                    f"INSERT INTO pr_links (host, repo, number, {_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        target.host,
                        target.repo,
                        target.number,
                        link.note_id,
                        link.placement,
                        link.comment_id,
                        link.path,
                        link.line_start,
                        link.line_end,
                        link.excerpt,
                        link.suggestion,
                        link.posted_at or stamp,
                    ),
                )

    def remote_ids(self, target: Target) -> set[str]:
        """The host's ids of the replies on both sides already (brought back, or posted)."""
        return {row[0] for row in self._replies(target)}

    def reply_ids(self, target: Target) -> set[str]:
        """The store's ids of the replies on both sides already."""
        return {row[1] for row in self._replies(target) if row[1] is not None}

    def _replies(self, target: Target) -> list[tuple[str, str | None]]:
        with self._backend.transaction(write=False) as conn:
            rows = conn.execute(
                "SELECT remote_id, reply_id FROM pr_replies WHERE host = ? AND repo = ? "
                "AND number = ?",
                (target.host, target.repo, target.number),
            ).fetchall()
        return [(str(row[0]), None if row[1] is None else str(row[1])) for row in rows]

    def remember(
        self, target: Target, remote_id: str, note_id: str, reply_id: str | None = None
    ) -> bool:
        """Remember that the host's reply `remote_id` is `note_id`'s reply `reply_id` (None: a
        reply that had nowhere to go); False when it was remembered already."""
        with self._backend.transaction(write=True) as conn:
            known: Any = conn.execute(
                "SELECT 1 FROM pr_replies WHERE host = ? AND repo = ? AND number = ? "
                "AND remote_id = ?",
                (target.host, target.repo, target.number, remote_id),
            ).fetchone()
            if known is not None:
                return False
            conn.execute(
                "INSERT INTO pr_replies (host, repo, number, remote_id, note_id, reply_id, at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (target.host, target.repo, target.number, remote_id, note_id, reply_id, now()),
            )
        return True
