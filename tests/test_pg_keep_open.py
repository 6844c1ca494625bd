"""A server's store keeps its connections open (`Store.keep_open`, called by `annotate serve`):
on PostgreSQL the whole pool is connected before the first request, so a burst of requests at
the start does not wait while the pool connects one at a time."""

from __future__ import annotations

from pathlib import Path

import annotate
from annotate.backends import postgres

from .conftest import text_note


def test_keep_open_connects_the_whole_pool_before_any_request(pg_url: str, tmp_path: Path) -> None:
    store = annotate.open(tmp_path, db=pg_url)
    try:
        store.keep_open()
        file = store._file
        assert isinstance(file, postgres.PostgresBackend)
        stats = file._pool_now().get_stats()
        assert stats["pool_size"] == postgres.POOL_MAX
        assert stats["pool_min"] == postgres.POOL_MAX
        store.add_annotation(text_note())  # and it still works
        assert len(store.list_annotations()) == 1
    finally:
        store.close()


def test_keep_open_on_sqlite_changes_nothing(tmp_path: Path) -> None:
    store = annotate.open(tmp_path)
    try:
        store.keep_open()
        store.add_annotation(text_note())
        assert len(store.list_annotations()) == 1
    finally:
        store.close()
