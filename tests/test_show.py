"""show_annotation (issue #19): the agent points every open view of a note's page at it. The
library call, the acknowledgement route, the MCP tool and `annotate show`; the views themselves
are tested in Chromium (tests/browser/test_show.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

import annotate
from annotate.cli import cli
from annotate.compose import build_server
from annotate.errors import AnnotationNotFound, ShowNotFound, ValidationError
from annotate.shows import SHOWN_KEPT_S
from annotate.store import Store
from annotate.tables import ago
from annotate.web import create_app

from .conftest import text_note, write_project

TOKEN = "test-token-0123456789abcdef"
API = "/__annotate/api"
PAGE = "/guide/install/"
INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"


def last_show(store: Store) -> dict[str, Any] | None:
    shows = [e for e in store.changes(0)[0] if e["action"] == "show"]
    return shows[-1] if shows else None


class Views:
    """Views that acknowledge the next show from another thread, as open pages do through the
    change feed: each `(viewer, page)` once, then `again` repeats the first."""

    def __init__(self, path: Path, views: list[tuple[str, str]], *, again: bool = False) -> None:
        self.path = path
        self.views = views
        self.again = again
        self.counted: list[bool] = []
        self.seen = last_show_seq(path)
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        with Store(self.path) as store:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                show = last_show(store)
                if show is not None and show["seq"] != self.seen:
                    break
                time.sleep(0.01)
            else:
                return
            todo = self.views + (self.views[:1] if self.again else [])
            for viewer, page in todo:
                self.counted.append(store.acknowledge_show(show["seq"], viewer, page))

    def __enter__(self) -> Views:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.thread.join(10)


def last_show_seq(path: Path) -> int | None:
    with Store(path) as store:
        show = last_show(store)
        return None if show is None else show["seq"]


# -- the library ------------------------------------------------------------------------------


def test_counts_each_view_of_the_page_once(store: Store) -> None:
    a = store.add_annotation(text_note())
    before = store.get_annotation(a.id)
    views = [("v1", PAGE), ("v2", PAGE), ("v3", "/other/")]
    with Views(store.path, views, again=True) as found:
        started = time.monotonic()
        shown = store.show_annotation(a.id, wait=10)
        waited = time.monotonic() - started
    # Two views of the page; the other page's view and v1's second answer are not counted.
    assert shown == 2 and isinstance(shown, int)
    assert found.counted == [True, True, False, False]
    # It stops once the answers stop, well before the 10 s it could wait.
    assert waited < 5
    assert (shown.id, shown.page_url, shown.why_not) == (a.id, PAGE, None)
    assert shown.to_dict() == {"id": a.id, "pageUrl": PAGE, "views": 2}
    # A change row of action `show`, and no change to the note.
    event = last_show(store)
    assert event is not None
    assert (event["kind"], event["id"], event["pageUrl"]) == ("annotation", a.id, PAGE)
    assert store.get_annotation(a.id) == before


def test_no_view_open_answers_zero_after_the_wait(store: Store) -> None:
    a = store.add_annotation(text_note())
    assert store.show_annotation(a.id, wait=0.2) == 0


def test_page_notes_are_shown_too(store: Store) -> None:
    n = store.add_page_note({"pageUrl": PAGE, "note": "Split this page."})
    with Views(store.path, [("v1", PAGE)]):
        shown = store.show_annotation(n.id, wait=5)
    assert shown == 1 and shown.why_not is None
    event = last_show(store)
    assert event is not None and event["kind"] == "page_note"


def test_unknown_id_writes_nothing(store: Store) -> None:
    _, cursor = store.changes(0)
    with pytest.raises(AnnotationNotFound, match='Annotation with ID "a_nothing" not found'):
        store.show_annotation("a_nothing", wait=0)
    assert store.changes(0)[1] == cursor


@pytest.mark.parametrize("wait", [-1, 31, float("nan"), True, "1"])
def test_wait_out_of_range_is_refused(store: Store, wait: Any) -> None:
    a = store.add_annotation(text_note())
    with pytest.raises(ValidationError, match="wait must be 0 to 30 seconds"):
        store.show_annotation(a.id, wait=wait)


def test_a_note_without_its_passage_says_so(store: Store) -> None:
    resolved = store.add_annotation(text_note())
    store.accept(resolved.id)
    deleted = store.add_annotation(text_note(intent="delete", note=""))
    store.address_annotation(deleted.id, deleted=True)
    assert "resolved" in (store.show_annotation(resolved.id, wait=0).why_not or "")
    why = store.show_annotation(deleted.id, wait=0).why_not
    assert why is not None and "deleted as the note asked" in why
    assert "noPassage" in store.show_annotation(deleted.id, wait=0).to_dict()


def test_acknowledging_what_is_no_show_is_refused(store: Store) -> None:
    a = store.add_annotation(text_note())
    created = store.changes(0)[0][-1]["seq"]  # a change, but not a show
    with pytest.raises(ShowNotFound, match=f"change number {created}"):
        store.acknowledge_show(created, "v1")
    with pytest.raises(ShowNotFound):
        store.acknowledge_show(10**9, "v1")
    store.show_annotation(a.id, wait=0)
    seq = store.changes(0)[1]
    for bad in (0, -1, True, "1", 1.5, 10**18):
        with pytest.raises(ValidationError, match="seq must be a whole number"):
            store.acknowledge_show(bad, "v1")  # type: ignore[arg-type]
    for viewer in ("", "a b", "x" * 65, "v1\n", None):
        with pytest.raises(ValidationError, match="viewer must be"):
            store.acknowledge_show(seq, viewer)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        store.acknowledge_show(seq, "v1", "not a page")
    # The page is compared in the store's form: a full URL of the same page counts.
    assert store.acknowledge_show(seq, "v1", "http://127.0.0.1:8000" + PAGE) is True


def test_old_acknowledgements_are_pruned(store: Store) -> None:
    a = store.add_annotation(text_note())
    store.show_annotation(a.id, wait=0)
    seq = store.changes(0)[1]
    store.acknowledge_show(seq, "recent")
    store.acknowledge_show(seq, "old")
    with store._tx(write=True) as conn:
        conn.execute("UPDATE shown SET at = ? WHERE viewer = 'old'", (ago(SHOWN_KEPT_S + 60),))
    store.show_annotation(a.id, wait=0)  # each show prunes
    with store._tx(write=False) as conn:
        left = [r[0] for r in conn.execute("SELECT viewer FROM shown")]
    assert left == ["recent"]


# -- REST -------------------------------------------------------------------------------------


@pytest.fixture
def shown_seq(store: Store) -> int:
    a = store.add_annotation(text_note())
    store.show_annotation(a.id, wait=0)
    return store.changes(0)[1]


def _client(store: Store, **options: Any) -> TestClient:
    return TestClient(
        create_app(store, token=TOKEN, **options),
        base_url="http://127.0.0.1:8000",
        headers={"X-Annotate-Token": TOKEN},
    )


def test_rest_acknowledges_once_per_viewer(store: Store, shown_seq: int) -> None:
    with _client(store) as client:
        body = {"seq": shown_seq, "viewer": "v1", "pageUrl": PAGE}
        first = client.post(f"{API}/shown", json=body)
        again = client.post(f"{API}/shown", json=body)
        elsewhere = client.post(f"{API}/shown", json={**body, "viewer": "v2", "pageUrl": "/x/"})
        anonymous = client.post(f"{API}/shown", json={"seq": shown_seq})
    assert first.status_code == 200 and first.json() == {"seq": shown_seq, "counted": True}
    assert again.json()["counted"] is False
    assert elsewhere.json()["counted"] is False
    assert anonymous.json()["counted"] is True  # no viewer: a view of its own


def test_rest_checks_token_and_origin(store: Store, shown_seq: int) -> None:
    with _client(store) as client:
        body = {"seq": shown_seq, "viewer": "v1"}
        no_token = client.post(f"{API}/shown", json=body, headers={"X-Annotate-Token": ""})
        foreign = client.post(f"{API}/shown", json=body, headers={"Origin": "https://evil.example"})
    assert no_token.status_code == 401 and no_token.json()["code"] == "unauthorized"
    assert foreign.status_code == 403 and foreign.json()["code"] == "forbidden_origin"
    with store._tx(write=False) as conn:
        assert conn.execute("SELECT count(*) FROM shown").fetchone()[0] == 0


@pytest.mark.parametrize(
    ("body", "status", "code", "says"),
    [
        ({"seq": "1"}, 400, "invalid", "seq must be a whole number"),
        ({}, 400, "invalid", "seq must be a whole number"),
        ({"seq": "{seq}", "viewer": "a b"}, 400, "invalid", "viewer must be"),
        ({"seq": "{seq}", "extra": 1}, 400, "invalid", "extra"),
        ({"seq": "{seq}", "pageUrl": 5}, 400, "invalid", "pageUrl"),
        ({"seq": 987654}, 404, "not_found", "change number 987654"),
    ],
)
def test_rest_refuses_bad_acknowledgements(
    store: Store, shown_seq: int, body: dict[str, Any], status: int, code: str, says: str
) -> None:
    body = {k: shown_seq if v == "{seq}" else v for k, v in body.items()}
    with _client(store) as client:
        r = client.post(f"{API}/shown", json=body)
        not_json = client.post(
            f"{API}/shown", content=b"{", headers={"Content-Type": "application/json"}
        )
    assert r.status_code == status, r.text
    assert r.json()["code"] == code and says in r.json()["error"]
    assert not_json.status_code == 400 and not_json.json()["code"] == "invalid_json"


def test_a_read_only_server_still_takes_acknowledgements(store: Store, shown_seq: int) -> None:
    # Being pointed at a note changes no note: a read-only review can follow the agent too.
    with _client(store, read_only=True) as client:
        r = client.post(f"{API}/shown", json={"seq": shown_seq, "viewer": "v1"})
        write = client.post(f"{API}/page-notes", json={"pageUrl": PAGE, "note": "No."})
    assert r.status_code == 200 and r.json()["counted"] is True
    assert write.status_code == 405


# -- MCP (the SDK's client, in memory) and the CLI ------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    write_project(tmp_path, INSTALL_MD)
    yield tmp_path


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _db(project: Path) -> Path:
    return project / ".annotate" / "annotations.db"


def _note(project: Path, make: Callable[[Store], Any] | None = None) -> str:
    with annotate.open(project) as store:
        a = store.add_annotation(text_note())
        if make:
            make(store)
        return a.id


@pytest.mark.anyio
async def test_mcp_tool_answers_how_many_views(project: Path) -> None:
    id = _note(project)
    async with Client(build_server(project)) as client:
        # The views answer while the tool waits: the server must not block meanwhile.
        with Views(_db(project), [("v1", PAGE)]):
            result = await client.call_tool("show_annotation", {"id": id})
        nobody = await client.call_tool("show_annotation", {"id": id})
        missing = await client.call_tool("show_annotation", {"id": "a_nothing"})
    assert not result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert json.loads(text) == {"id": id, "pageUrl": PAGE, "views": 1}
    assert len(text.encode()) < 100  # a small answer (benchmarks/mcp.py measures it)
    assert json.loads(nobody.content[0].text)["views"] == 0  # type: ignore[union-attr]
    assert missing.is_error
    assert missing.content[0].text == 'Annotation with ID "a_nothing" not found'  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_mcp_tool_says_when_there_is_no_passage(project: Path) -> None:
    id = _note(project)
    with annotate.open(project) as store:
        store.accept(id)
    async with Client(build_server(project)) as client:
        result = await client.call_tool("show_annotation", {"id": id})
    answer = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert answer["views"] == 0 and "resolved" in answer["noPassage"]


def test_cli_show(project: Path) -> None:
    id = _note(project)
    with Views(_db(project), [("v1", PAGE)]):
        one = CliRunner().invoke(cli, ["show", id, "--wait", "5", "--project", str(project)])
    assert one.exit_code == 0, one.output
    assert one.output == f"Shown {id} in 1 view of {PAGE}\n"
    none = CliRunner().invoke(cli, ["show", id, "--wait", "0", "--json", "--project", str(project)])
    assert json.loads(none.output) == {"id": id, "pageUrl": PAGE, "views": 0}
    text = CliRunner().invoke(cli, ["show", id, "--wait", "0", "--project", str(project)])
    assert text.output == f"No view of {PAGE} answered within 0 s (is the page open?)\n"


def test_cli_show_errors_in_one_line(project: Path) -> None:
    missing = CliRunner().invoke(cli, ["show", "a_nothing", "--project", str(project)])
    assert missing.exit_code == 1
    assert missing.output == 'Error: Annotation with ID "a_nothing" not found\n'
    bad = CliRunner().invoke(cli, ["show", "a_x", "--wait", "99", "--project", str(project)])
    assert bad.exit_code == 2 and "--wait" in bad.output
