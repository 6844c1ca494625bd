"""Two `annotate serve` processes on one PostgreSQL database (issue #20): a note made through one
and a reply through the other; the change feed and `wait_for_review` of one see the other's
writes within 2 s (LISTEN/NOTIFY wakes them; the `changes` table is what they read)."""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

import annotate
from annotate.errors import StoreUnreachableError

from . import serving
from .conftest import text_note
from .serving import ANNOTATE

INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"


class Server:
    """`annotate serve --db URL` in a subprocess."""

    def __init__(self, project: Path, site: Path, url: str) -> None:
        self.project = project
        # The URL through the environment, as a deployment would set it.
        self.proc, self.host, self.port = serving.start(project, site, env={"ANNOTATE_DB": url})

    def request(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        token = (self.project / ".annotate" / "token").read_text().strip()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        headers = {"X-Annotate-Token": token, "Content-Type": "application/json"}
        data = None if body is None else json.dumps(body)
        conn.request(method, f"/__annotate/api/{path}", body=data, headers=headers)
        r = conn.getresponse()
        out = r.status, json.loads(r.read() or b"null")
        conn.close()
        return out

    def stop(self) -> None:
        serving.stop(self.proc)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "docs" / "guide").mkdir(parents=True)
    (root / "mkdocs.yml").write_text("site_name: test\n")
    (root / "docs" / "guide" / "install.md").write_text(INSTALL_MD)
    return root


@pytest.fixture
def two(project: Path, tmp_path: Path, pg_url: str) -> Iterator[tuple[Server, Server]]:
    site = tmp_path / "site"
    (site / "guide").mkdir(parents=True)
    (site / "guide" / "index.html").write_text("<html><body><p>Run pip</p></body></html>")
    a = Server(project, site, pg_url)
    try:
        b = Server(project, site, pg_url)
    except BaseException:
        a.stop()
        raise
    yield a, b
    a.stop()
    b.stop()


def test_a_note_on_one_server_and_a_reply_on_the_other(two: tuple[Server, Server]) -> None:
    a, b = two
    status, note = a.request("POST", "annotations", text_note())
    assert status == 201, note
    status, seen = b.request("GET", f"annotations/{note['id']}")
    assert status == 200 and seen["note"] == note["note"]
    status, replied = b.request(
        "POST", f"annotations/{note['id']}/replies", {"message": "Done on B"}
    )
    assert status == 201, replied
    status, back = a.request("GET", f"annotations/{note['id']}")
    assert [r["message"] for r in back["replies"]] == ["Done on B"]


def test_the_feed_on_one_server_wakes_for_a_write_on_the_other(
    two: tuple[Server, Server],
) -> None:
    a, b = two
    _, start = b.request("GET", "changes")
    answer: dict[str, Any] = {}

    def long_poll() -> None:
        answer["body"] = b.request("GET", f"changes?since={start['cursor']}&timeout=20", None, 30)
        answer["at"] = time.monotonic()

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(1.0)  # the long-poll is waiting on B
    assert "body" not in answer
    written = time.monotonic()
    status, note = a.request("POST", "annotations", text_note())
    assert status == 201
    poller.join(25)
    status, body = answer["body"]
    assert status == 200
    assert [(e["id"], e["action"]) for e in body["events"]] == [(note["id"], "created")]
    assert answer["at"] - written < 2.0


@pytest.mark.anyio
async def test_wait_for_review_on_one_server_wakes_for_a_review_sent_on_the_other(
    two: tuple[Server, Server], project: Path, pg_url: str
) -> None:
    a, _ = two
    status, note = a.request("POST", "annotations", text_note())
    assert status == 201
    params = StdioServerParameters(
        command=ANNOTATE,
        args=["mcp", "--project", str(project), "--db", pg_url],
        cwd=str(project),
    )
    posted: dict[str, Any] = {}

    def send_to_agent() -> None:
        time.sleep(1.5)
        posted["at"] = time.monotonic()
        posted["status"], posted["body"] = a.request("POST", "reviews", {"mode": "edit"})

    async with Client(params, read_timeout_seconds=30) as client:
        await client.list_tools()
        sender = threading.Thread(target=send_to_agent)
        sender.start()
        result = await client.call_tool("wait_for_review", {"timeout_s": 20})
        woke = time.monotonic()
        await anyio.to_thread.run_sync(sender.join)
    assert posted["status"] == 201, posted["body"]
    assert not result.is_error
    got = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert got["review"]["id"] == posted["body"]["id"]
    assert [n["id"] for n in got["review"]["notes"]] == [note["id"]]
    assert woke - posted["at"] < 2.0


def test_a_notification_wakes_a_subscriber_of_another_store(pg_url: str, tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    first = annotate.open(tmp_path, db=pg_url)
    second = annotate.open(tmp_path, db=pg_url)
    woken = threading.Event()
    unsubscribe = second.subscribe(woken.set)
    time.sleep(0.5)  # listening
    woken.clear()
    first.add_page_note({"pageUrl": "/", "note": "hello"})
    assert woken.wait(2.0)
    unsubscribe()
    first.close()
    second.close()


def test_an_unreachable_server_is_one_named_error_without_the_password(tmp_path: Path) -> None:
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    url = "postgresql://ana:s3cret@127.0.0.1:1/notes"
    with pytest.raises(StoreUnreachableError) as e:
        annotate.open(tmp_path, db=url)
    assert "s3cret" not in str(e.value)
    assert "postgresql://ana:***@127.0.0.1:1/notes cannot be reached" in str(e.value)
    done = subprocess.run(
        [ANNOTATE, "list", "--project", str(tmp_path), "--db", url],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "s3cret" not in done.stderr
    assert done.stderr.startswith("Error: postgresql://ana:***@127.0.0.1:1/notes cannot be reached")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
