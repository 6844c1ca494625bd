"""Screenshots on notes (issue #30 item 4, docs/overlay.md "Screenshots"): one WebP image per
annotation or page note, as the reviewer saw the passage or element, kept beside the notes (the
`screenshots` table, on both backends) and reached as `store.screenshots`.

An image is untrusted input: it must be a WebP file (its RIFF header and one of the VP8, VP8L or
VP8X chunks, read for its size), at most `MAX_BYTES` and `MAX_SIDE` pixels a side. It is deleted
with its note and by `purge` (annotate/store.py), and handed to agents only when they ask
(`get_screenshot`: images cost tokens).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .backends import now
from .backends.interface import Backend
from .errors import AnnotationNotFound, NotFoundError, PageNoteNotFound, ValidationError
from .identity import Person, check

__all__ = ["MAX_BYTES", "MAX_SIDE", "MEDIA_TYPE", "Screenshot", "ScreenshotNotFound", "Screenshots"]

MAX_BYTES = 1024 * 1024  # 1 MB, as the REST API's body limit (annotate/web/security.py)
MAX_SIDE = 16383  # WebP's own limit
MEDIA_TYPE = "image/webp"
_TABLES = {"annotation": "annotations", "page_note": "page_notes"}


class ScreenshotNotFound(NotFoundError):
    """The note exists but has no screenshot."""

    def __init__(self, id: str) -> None:
        super().__init__(f'Note "{id}" has no screenshot')
        self.id = id


@dataclass(frozen=True)
class Screenshot:
    """One note's screenshot: what it is (`to_dict`) and, when read whole, its bytes."""

    note_id: str
    width: int
    height: int
    size: int
    created_at: str
    author: str | None = None
    data: bytes = b""

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (docs/http-api.md): everything but the bytes."""
        return {
            "noteId": self.note_id,
            "mediaType": MEDIA_TYPE,
            "width": self.width,
            "height": self.height,
            "size": self.size,
            "createdAt": self.created_at,
            "author": self.author,
        }


def webp_size(data: bytes) -> tuple[int, int]:
    """The (width, height) of a WebP file; `ValidationError` when `data` is not one."""
    if len(data) > MAX_BYTES:
        raise ValidationError(
            f"Screenshot is {len(data):,} bytes; the limit is {MAX_BYTES:,} (1 MB)", field="image"
        )
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        raise ValidationError("Screenshot must be a WebP image (RIFF…WEBP)", field="image")
    if struct.unpack_from("<I", data, 4)[0] + 8 != len(data):
        raise ValidationError("Screenshot's WebP file is truncated or padded", field="image")
    chunk = data[12:16]
    if chunk == b"VP8X":
        width = 1 + int.from_bytes(data[24:27], "little")
        height = 1 + int.from_bytes(data[27:30], "little")
    elif chunk == b"VP8L" and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        width, height = 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    elif chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        width, height = (v & 0x3FFF for v in struct.unpack_from("<HH", data, 26))
    else:
        raise ValidationError("Screenshot must be a WebP image (no VP8 frame)", field="image")
    if not (0 < width <= MAX_SIDE and 0 < height <= MAX_SIDE):
        raise ValidationError(f"Screenshot is {width}×{height} pixels", field="image")
    return width, height


class Screenshots:
    """The notes' screenshots in one store's database."""

    def __init__(self, backend: Backend) -> None:
        self._db = backend

    def _note(self, conn: Any, id: str, kind: str | None) -> tuple[str, str | None]:
        """The table and author of the note `id` (of `kind`, "annotation" or "page_note")."""
        for k, table in _TABLES.items():
            if kind not in (None, k):
                continue
            row = conn.execute(f"SELECT author FROM {table} WHERE id = ?", (id,)).fetchone()
            if row is not None:
                return table, row[0]
        raise PageNoteNotFound(id) if kind == "page_note" else AnnotationNotFound(id)

    def attach(
        self, id: str, data: bytes, *, kind: str | None = None, by: Person | None = None
    ) -> Screenshot:
        """Store `data` (WebP) as the note `id`'s screenshot, replacing any it had. `by`: only
        the note's author or a maintainer (team mode)."""
        width, height = webp_size(data)
        stamp, who = now(), by.name if by else None
        with self._db.transaction(True) as conn:
            table, author = self._note(conn, id, kind)
            check(by, "edit", f'note "{id}"', author)
            conn.execute("DELETE FROM screenshots WHERE note_id = ?", (id,))
            conn.execute(
                "INSERT INTO screenshots (note_id, kind, media_type, width, height, size, "
                "created_at, author, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (id, table, MEDIA_TYPE, width, height, len(data), stamp, who, data),
            )
        return Screenshot(id, width, height, len(data), stamp, who)

    def get(self, id: str, *, kind: str | None = None, data: bool = True) -> Screenshot:
        """The note `id`'s screenshot (with its bytes unless `data=False`)."""
        columns = "width, height, size, created_at, author" + (", data" if data else "")
        with self._db.transaction(False) as conn:
            self._note(conn, id, kind)
            row = conn.execute(
                f"SELECT {columns} FROM screenshots WHERE note_id = ?", (id,)
            ).fetchone()
        if row is None:
            raise ScreenshotNotFound(id)
        w, h, size, created, author = row[:5]
        return Screenshot(id, w, h, size, created, author, bytes(row[5]) if data else b"")

    def delete(self, id: str, *, kind: str | None = None, by: Person | None = None) -> None:
        """Remove the note `id`'s screenshot (`ScreenshotNotFound` when it has none)."""
        with self._db.transaction(True) as conn:
            _, author = self._note(conn, id, kind)
            check(by, "edit", f'note "{id}"', author)
            if not conn.execute("DELETE FROM screenshots WHERE note_id = ?", (id,)).rowcount:
                raise ScreenshotNotFound(id)

    def list(self, ids: Iterable[str] | None = None) -> dict[str, Screenshot]:
        """Every screenshot's description (no bytes) by note id, or only those of `ids`."""
        with self._db.transaction(False) as conn:
            rows = conn.execute(
                "SELECT note_id, width, height, size, created_at, author FROM screenshots "
                "ORDER BY note_id"
            ).fetchall()
        wanted = None if ids is None else set(ids)
        return {r[0]: Screenshot(*r) for r in rows if wanted is None or r[0] in wanted}
