"""Reviews: "Send to agent" batches of notes and the agent's side of them (issue #7), as
`store.reviews`. A review is done when none of its notes waits for the agent any more (`settle`,
called by every verb that changes a note's status)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from . import validation as validate
from .backends import Backend, Connection, now
from .documents import word_diff_counted
from .errors import ReviewNotFound, ValidationError
from .identity import Person
from .items import Items
from .models import Review
from .people import People
from .sources import ALL_ANNOTATIONS, Sources
from .tables import Tables, new_id, refuse_resolved, who

__all__ = ["WAITING", "Reviews"]

# A review is being worked on while one of its notes is.
WAITING = "status IN ('open', 'in_progress')"


class Reviews:
    """The `reviews` table: created, claimed by an agent, done."""

    def __init__(self, backend: Backend, sources: Sources, items: Items, people: People) -> None:
        self._file = backend
        self._tables = Tables(backend)
        self._sources = sources
        self._items = items
        self._people = people

    def settle(self, conn: Connection, review_id: str | None) -> None:
        """Mark a review `done` when none of its notes waits for the agent any more (and undone
        when one does again, e.g. set back in progress for rework); `done` goes to the feed."""
        if review_id is None:
            return
        row = conn.execute(
            "SELECT done_at, "
            f"EXISTS (SELECT 1 FROM annotations WHERE review_id = ? AND {WAITING}) OR "
            f"EXISTS (SELECT 1 FROM page_notes WHERE review_id = ? AND {WAITING}) "
            "FROM reviews WHERE id = ?",
            (review_id, review_id, review_id),
        ).fetchone()
        if row is None:
            return
        done_at, waiting = row
        if waiting and done_at is not None:
            conn.execute("UPDATE reviews SET done_at = NULL WHERE id = ?", (review_id,))
        elif not waiting and done_at is None:
            conn.execute("UPDATE reviews SET done_at = ? WHERE id = ?", (now(), review_id))
            self._tables.record(conn, "review", review_id, "done", None)

    def create(self, data: Mapping[str, Any] | None = None, *, by: Person | None = None) -> Review:
        """ "Send to agent": `{mode, message, ids}`.

        Without `ids`, every open note not yet sent joins this review (notes in progress, addressed
        or resolved are not work to send). With `ids`, just those notes, wherever they were (the
        overlay's "Ask agent now"); the batch is left as it is.
        """
        fields = validate.review_input(data)
        ids = fields.pop("ids")
        page = fields.pop("page_url")  # the batch of one page only (a plan's page, issue #29)
        if by is not None:
            fields["author"] = by.name
        stamp = now()
        with self._file.transaction(write=True) as conn:
            id = self.insert(conn, fields, stamp, who(by))
            if ids is None:
                taken = 0
                for table in ("annotations", "page_notes"):
                    taken += conn.execute(
                        f"UPDATE {table} SET review_id = ? WHERE review_id IS NULL "
                        "AND status = 'open'" + (" AND page_url = ?" if page else ""),
                        (id, page) if page else (id,),
                    ).rowcount
                if not taken and not fields["message"].strip() and not fields["decision"]:
                    raise ValidationError(
                        "Nothing to send: no open notes since the last review and no message",
                        "message",
                    )
            else:
                for note_id in ids:
                    table, row = self._tables.find(conn, note_id)
                    refuse_resolved(table, row, "send it to the agent")
                    conn.execute(f"UPDATE {table} SET review_id = ? WHERE id = ?", (id, note_id))
                    self.settle(conn, row["review_id"])  # the review it left
            review = self._review(conn, id)
            paths = self._paths(conn, id)
        self._remember_sources(id, paths)
        return review

    def _paths(self, conn: Connection, id: str) -> set[str]:
        """The Markdown files review `id`'s notes point into (a page note: its page's file)."""
        paths = {
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT source_file FROM annotations WHERE review_id = ? "
                "AND source_file IS NOT NULL",
                (id,),
            )
        }
        urls = {
            r[0] for r in conn.execute("SELECT page_url FROM page_notes WHERE review_id = ?", (id,))
        }
        return paths | {p for p in self._sources.page_files(conn, urls).values() if p}

    def remember(self, id: str | None) -> None:
        """Keep the Markdown of review `id`'s files as they are now (a follow-up review made by
        `Store.reopen`, None when it made none; `create` does it for the reviews it makes)."""
        if id is None:
            return
        with self._file.transaction(write=False) as conn:
            paths = self._paths(conn, id)
        self._remember_sources(id, paths)

    def _remember_sources(self, id: str, paths: set[str]) -> None:
        """Keep the Markdown of each file review `id`'s notes point into, as it is now (issue #29
        item 3): read after the review's transaction, never inside the write lock."""
        locator = self._sources.locator()
        texts = {p: t for p in sorted(paths) if (t := locator.read(p)) is not None}
        if not texts:
            return
        with self._file.transaction(write=True) as conn:
            for path, text in texts.items():
                conn.execute(
                    "INSERT INTO review_sources (review_id, path, markdown) VALUES (?, ?, ?)",
                    (id, path, text),
                )

    def changes(self, id: str) -> dict[str, Any]:
        """What changed, per file, since review `id` was sent: a word diff
        (`[-removed-]{+added+}`, long unchanged runs cut) of each file its notes point into, with
        the words added and removed; unchanged files are named only. Small on purpose: it is
        read by agents and by the panel."""
        with self._file.transaction(write=False) as conn:
            row = self._tables.row(conn, "reviews", id) if validate.is_valid_id(id) else None
            if row is None:
                raise ReviewNotFound(id)
            sent = conn.execute(
                "SELECT path, markdown FROM review_sources WHERE review_id = ? ORDER BY path",
                (id,),
            ).fetchall()
        locator = self._sources.locator()
        files: list[dict[str, Any]] = []
        for path, then in sent:
            now_text = locator.read(path)
            if now_text is None:
                files.append({"path": path, "changed": True, "missing": True})
                continue
            counted = word_diff_counted(then, now_text)
            if counted is None:
                files.append({"path": path, "changed": False})
                continue
            diff, added, removed = counted
            files.append(
                {"path": path, "changed": True, "added": added, "removed": removed, "diff": diff}
            )
        return {"review": id, "done": row["done_at"] is not None, "files": files}

    def insert(
        self,
        conn: Connection,
        fields: Mapping[str, Any],
        stamp: str,
        author: str | None = None,
    ) -> str:
        """A new review of `fields`, in `conn`'s transaction (`Store.reopen` makes one for a
        follow-up); its id."""
        id = new_id("rv")
        self._tables.insert(conn, "reviews", {"id": id, **fields, "created_at": stamp})
        self._tables.record(conn, "review", id, "created", None, author)
        return id

    def get(self, id: str) -> Review:
        """A review with its notes, their sources reconciled with the Markdown files."""
        scope = ALL_ANNOTATIONS + " WHERE review_id = ?" if validate.is_valid_id(id) else None
        with self._sources.reading(scope, [id]) as conn:
            return self._review(conn, id)

    def all(self, *, pending_only: bool = False) -> list[Review]:
        """Every review in creation order (`pending_only`: those no agent has picked up)."""
        sql = "SELECT id FROM reviews"
        if pending_only:
            sql += " WHERE picked_up_at IS NULL AND done_at IS NULL"
        with self._file.transaction(write=False) as conn:
            ids = [r[0] for r in conn.execute(sql + " ORDER BY rowid")]
            return [self._review(conn, i) for i in ids]

    def latest_decision(self) -> str | None:
        """The decision of the review sent last (`annotate pr push`'s event), None without one."""
        with self._file.transaction(write=False) as conn:
            row = conn.execute(
                "SELECT decision FROM reviews ORDER BY rowid DESC LIMIT 1"
            ).fetchone()
        return row[0] if row else None

    def claim(self, *, token: str | None = None) -> Review | None:
        """The oldest review no agent has picked up yet, now marked as picked up; else None.
        `token`: the caller's personal token, checked in the same transaction (`Unauthorized`
        once revoked: a revoked agent takes no review, issue #32)."""
        with self._file.transaction(write=True) as conn:
            self._people.check_live(conn, token)
            row = conn.execute(
                "SELECT id FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL "
                "ORDER BY rowid LIMIT 1"
            ).fetchone()
            if row is None:
                return None
            self._tables.update(conn, "reviews", row["id"], {"picked_up_at": now()})
            self._tables.record(conn, "review", row["id"], "picked_up", None)
        return self.get(row["id"])

    def _review(self, conn: Connection, id: str) -> Review:
        row = self._tables.row(conn, "reviews", id)
        if row is None:
            raise ReviewNotFound(id)
        annotations = self._tables.query(
            conn, "SELECT * FROM annotations WHERE review_id = ? ORDER BY rowid", (id,)
        )
        notes = self._tables.query(
            conn, "SELECT * FROM page_notes WHERE review_id = ? ORDER BY rowid", (id,)
        )
        return Review(
            id=row["id"],
            mode=row["mode"],
            message=row["message"] or "",
            author=row["author"],
            created_at=row["created_at"],
            picked_up_at=row["picked_up_at"],
            done_at=row["done_at"],
            decision=row["decision"],
            annotations=tuple(self._items.objects(conn, "annotations", annotations)),
            page_notes=tuple(self._items.objects(conn, "page_notes", notes)),
        )

    def wait(
        self,
        timeout_s: float = 50.0,
        *,
        poll_s: float = 0.25,
        stop: threading.Event | None = None,
        token: str | None = None,
    ) -> Review | None:
        """Claim the oldest review no agent has picked up, waiting up to `timeout_s` seconds for
        one ("Send to agent", from any process); None when none came or `stop` was set.
        `token`: the caller's personal token, checked at each poll and in the claim
        (`Unauthorized` as soon as it is revoked).

        Polls a one-row read every `poll_s`, at once when another server on the same PostgreSQL
        database notifies a change (`subscribe`); only a review found takes the write lock.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        stop = stop or threading.Event()
        woken = threading.Event()
        unsubscribe = self._file.subscribe(woken.set)
        try:
            return self._wait(deadline, poll_s, stop, woken, token)
        finally:
            unsubscribe()

    def _wait(
        self,
        deadline: float,
        poll_s: float,
        stop: threading.Event,
        woken: threading.Event,
        token: str | None,
    ) -> Review | None:
        while not stop.is_set():
            woken.clear()
            with self._file.transaction(write=False) as conn:
                self._people.check_live(conn, token)
                pending = conn.execute(
                    "SELECT 1 FROM reviews WHERE picked_up_at IS NULL AND done_at IS NULL LIMIT 1"
                ).fetchone()
            review = self.claim(token=token) if pending else None
            left = deadline - time.monotonic()
            if review is not None or left <= 0:
                return review
            woken.wait(min(poll_s, left))
        return None
