"""A personal token's per-request check (annotate/tokencheck.py, issue #31): a token verified
once is taken at once on its next requests, and its check rides on the request's own first round
trip (PostgreSQL) or in the route's one thread-pool call (SQLite). A token revoked through
another store handle (as another worker or server would) is refused by the very next request,
whatever the route does first, and a refused write stores nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from starlette.testclient import TestClient

import annotate
from annotate.store import Store
from annotate.web import create_app
from annotate.web.team import Settings

from .conftest import text_note, write_project
from .test_pg_batch import round_trips

__all__ = ["round_trips"]  # the fixture, for the round-trip test

BACKENDS = ["sqlite", "postgresql"]
API = "/__annotate/api"
BASE = "http://127.0.0.1:8000"
REVOKED = {"error": "Unknown or revoked token", "code": "unauthorized"}


class Team:
    def __init__(self, root: Path, db: str | None) -> None:
        self.project = write_project(
            root, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
        )
        site = root / "site"
        site.mkdir()
        self.db = db
        self.store = annotate.open(self.project, db=db)
        self.app = create_app(self.store, site_dir=site, team=Settings())

    def client(self, token: str) -> TestClient:
        return TestClient(self.app, base_url=BASE, headers={"Authorization": f"Bearer {token}"})

    def counts(self) -> tuple[int, ...]:
        conn = self.store.conn
        return tuple(
            conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("annotations", "replies", "changes")
        )


@pytest.fixture
def team(tmp_path: Path, db_url: str | None) -> Iterator[Team]:
    made = Team(tmp_path, db_url)
    yield made
    made.store.close()


def test_a_remembered_token_revoked_elsewhere_is_refused_by_its_next_request(team: Team) -> None:
    note = team.store.add_annotation(text_note())
    requests: list[tuple[str, str, Any]] = [
        ("GET", f"{API}/annotations", None),
        ("POST", f"{API}/annotations", text_note(note="Should not be stored.")),
        ("POST", f"{API}/annotations/{note.id}/replies", {"message": "Nor this."}),
        ("POST", f"{API}/annotations/{note.id}/status", {"action": "address"}),
        ("GET", f"{API}/changes?since=0&timeout=0", None),
        # Refused before the route reads anything: the check is made before the answer.
        ("GET", f"{API}/annotations?no-such-parameter=1", None),
        ("POST", f"{API}/annotations", {"not": "a note"}),
    ]
    elsewhere = annotate.open(team.project, db=team.db)  # another worker's store handle
    try:
        for method, path, body in requests:
            token = team.store.add_token("ada", "reviewer")
            with team.client(token) as c:
                assert c.get(f"{API}/annotations").status_code == 200  # now remembered
                elsewhere.revoke_token("ada")
                before = team.counts()
                r = c.request(method, path, json=body)
                assert (r.status_code, r.json()) == (401, REVOKED), (method, path)
                assert team.counts() == before, (method, path)
                # Forgotten since: refused again, by the Guard's own lookup.
                assert c.request(method, path, json=body).status_code == 401
    finally:
        elsewhere.close()
    # The store goes on serving others (a refused pipeline's connection is replaced).
    with team.client(team.store.add_token("max", "maintainer")) as c:
        assert c.get(f"{API}/annotations").status_code == 200
        assert c.post(f"{API}/annotations", json=text_note(note="Kept.")).status_code == 201
        assert (
            c.post(f"{API}/annotations/{note.id}/replies", json={"message": "Ok."}).json()[
                "replies"
            ][-1]["author"]
            == "max"
        )
    assert [a.note for a in team.store.list_annotations()] == [note.note, "Kept."]


def test_a_request_makes_one_thread_pool_call(team: Team, monkeypatch: pytest.MonkeyPatch) -> None:
    """The token's check runs in the route's thread-pool call, not in a hop of its own."""
    calls: list[Callable[..., Any]] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls.append(func)
        return await run_sync(func, *args, **kwargs)

    note = team.store.add_annotation(text_note())
    with team.client(team.store.add_token("ada", "reviewer")) as c:
        assert c.get(f"{API}/annotations").status_code == 200  # the first: looked up
        monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
        for method, path, body in (
            ("GET", f"{API}/annotations?page=/guide/install/", None),
            ("POST", f"{API}/annotations/{note.id}/replies", {"message": "Yes."}),
            ("GET", f"{API}/changes?since=0&timeout=0", None),
        ):
            calls.clear()
            assert c.request(method, path, json=body).status_code in (200, 201)
            assert len(calls) == 1, (path, calls)


def test_the_check_costs_no_round_trip_of_its_own(
    tmp_path: Path, pg_url: str, round_trips: list[str]
) -> None:
    """On PostgreSQL a request with a remembered token waits for the server as often as the
    verb it calls: the token's check travels in the verb's first pipeline (it was one more)."""
    team = Team(tmp_path, pg_url)
    store: Store = team.store
    note = store.add_annotation(text_note())

    def trips(call: Callable[[], object]) -> int:
        round_trips.clear()
        call()
        return len(round_trips)

    with team.client(store.add_token("ada", "reviewer")) as c:
        assert c.get(f"{API}/annotations").status_code == 200
        cursor = c.get(f"{API}/changes").json()["cursor"]
        feed = f"{API}/changes?since={cursor}&timeout=0"
        assert trips(lambda: c.get(feed)) == trips(lambda: store.changes(cursor)) == 1
        reply = f"{API}/annotations/{note.id}/replies"
        assert trips(lambda: c.post(reply, json={"message": "a"})) == 2
        assert trips(lambda: store.add_reply(note.id, "b")) == 2
        listing = f"{API}/annotations?page=/guide/install/"
        assert trips(lambda: c.get(listing)) == 3
        assert trips(lambda: store.list_annotations("/guide/install/", as_json=True)) == 3
    store.close()
