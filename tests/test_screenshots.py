"""Screenshots on notes (issue #30 item 4): stored beside the notes on both backends, checked as
WebP, deleted with the note and by purge."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

import annotate
from annotate.cli import cli
from annotate.compose import build_server
from annotate.errors import AnnotationNotFound, Forbidden, ValidationError
from annotate.export import render
from annotate.identity import Person
from annotate.screenshots import MAX_BYTES, ScreenshotNotFound, webp_size
from annotate.web import create_app

from .conftest import text_note, write_project

BACKENDS = ("sqlite", "postgresql")
TOKEN = "test-token-0123456789abcdef"
HEADERS = {"X-Annotate-Token": TOKEN}
SHOTS = Path(__file__).parent / "fixtures" / "screenshots"
# Made by Chromium's canvas.toBlob (image/webp): VP8X with alpha, and the simple lossy (VP8) and
# lossless (VP8L) forms of its frames.
ALPHA, LOSSY, LOSSLESS = (
    (SHOTS / f"{n}.webp").read_bytes() for n in ("alpha", "simple-lossy", "simple-lossless")
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, "# Install\n\nRun pip install mkdocs-annotate in a shell.\n")


def test_webp_size_reads_each_form() -> None:
    assert webp_size(ALPHA) == (40, 24)
    assert webp_size(LOSSY) == (40, 24)
    assert webp_size(LOSSLESS) == (33, 17)


@pytest.mark.parametrize(
    "data, says",
    [
        (b"\x89PNG\r\n\x1a\n" + b"\0" * 40, "must be a WebP image"),
        (b"<svg xmlns='http://www.w3.org/2000/svg'/>" + b" " * 20, "must be a WebP image"),
        (LOSSY[:-10], "truncated"),
        (LOSSY[:12] + b"VP9 " + LOSSY[16:], "no VP8 frame"),
        (b"RIFF" + struct.pack("<I", MAX_BYTES + 4) + b"WEBP" + b"\0" * MAX_BYTES, "limit"),
    ],
)
def test_anything_but_a_webp_is_refused(data: bytes, says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        webp_size(data)


def test_attach_read_replace_delete(project: Path, db_url: str | None) -> None:
    with annotate.open(project, db=db_url) as store:
        note = store.add_annotation(text_note())
        with pytest.raises(ScreenshotNotFound):
            store.screenshots.get(note.id)
        shot = store.screenshots.attach(note.id, LOSSY)
        assert (shot.width, shot.height, shot.size) == (40, 24, len(LOSSY))
        assert store.screenshots.get(note.id).data == LOSSY
        store.screenshots.attach(note.id, LOSSLESS)  # a second one replaces the first
        got = store.screenshots.get(note.id)
        assert (got.data, got.width) == (LOSSLESS, 33)
        assert got.to_dict()["mediaType"] == "image/webp"
        assert list(store.screenshots.list()) == [note.id]
        store.screenshots.delete(note.id)
        with pytest.raises(ScreenshotNotFound):
            store.screenshots.delete(note.id)
        with pytest.raises(AnnotationNotFound):
            store.screenshots.attach("nope", LOSSY)


def test_deleted_with_the_note_and_by_purge(project: Path, db_url: str | None) -> None:
    with annotate.open(project, db=db_url) as store:
        gone, resolved, kept = (store.add_annotation(text_note(note=f"n{i}")) for i in range(3))
        page_note = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
        for item in (gone, resolved, kept, page_note):
            store.screenshots.attach(item.id, ALPHA)
        store.delete(gone.id)
        store.accept(resolved.id)
        assert store.purge_resolved() == 1
        assert sorted(store.screenshots.list()) == sorted([kept.id, page_note.id])
        store.delete(page_note.id)
        assert list(store.screenshots.list()) == [kept.id]
    # Nothing left in the table for the deleted notes (not only hidden by the listing).
    with annotate.open(project, db=db_url) as store, store._tx(write=False) as conn:
        assert conn.execute("SELECT count(*) FROM screenshots").fetchone()[0] == 1


def test_team_mode_only_the_author_or_a_maintainer(project: Path, db_url: str | None) -> None:
    ann, bob = Person("ann", "reviewer"), Person("bob", "reviewer")
    with annotate.open(project, db=db_url) as store:
        note = store.add_annotation(text_note(), by=ann)
        with pytest.raises(Forbidden):
            store.screenshots.attach(note.id, LOSSY, by=bob)
        assert store.screenshots.attach(note.id, LOSSY, by=ann).author == "ann"
        store.screenshots.attach(note.id, LOSSY, by=Person("max", "maintainer"))


def test_rest_routes_send_and_answer_the_image(project: Path, db_url: str | None) -> None:
    """PUT the WebP itself, GET it back under the token, 415 for another type, 413 past 1 MB."""
    with annotate.open(project, db=db_url) as store:
        note = store.add_annotation(text_note())
        page_note = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
        client = TestClient(create_app(store, token=TOKEN, allowed_hosts=["testserver"]))
        url = f"/__annotate/api/annotations/{note.id}/screenshot"
        webp = {**HEADERS, "Content-Type": "image/webp"}
        assert client.put(url, content=LOSSY).status_code == 401  # the token, as every route
        answer = client.put(url, content=LOSSY, headers=webp)
        assert answer.status_code == 200
        assert answer.json() | {"createdAt": None} == {
            "noteId": note.id,
            "mediaType": "image/webp",
            "width": 40,
            "height": 24,
            "size": len(LOSSY),
            "createdAt": None,
            "author": None,
        }
        got = client.get(url, headers=HEADERS)
        assert got.content == LOSSY and got.headers["content-type"] == "image/webp"
        assert got.headers["x-content-type-options"] == "nosniff"
        assert client.get(url).status_code == 401
        png = {**HEADERS, "Content-Type": "image/png"}
        assert client.put(url, content=LOSSY, headers=png).status_code == 415
        bad = client.put(url, content=b"GIF89a" + b"\0" * 40, headers=webp)
        assert bad.status_code == 400 and "WebP" in bad.json()["error"]
        big = b"RIFF" + struct.pack("<I", MAX_BYTES + 4) + b"WEBP" + b"\0" * MAX_BYTES
        assert client.put(url, content=big, headers=webp).status_code == 413
        # A page note's route takes page notes only.
        other = f"/__annotate/api/page-notes/{page_note.id}/screenshot"
        assert client.put(other, content=ALPHA, headers=webp).status_code == 200
        wrong = f"/__annotate/api/page-notes/{note.id}/screenshot"
        assert client.get(wrong, headers=HEADERS).status_code == 404
        listed = client.get("/__annotate/api/screenshots", headers=HEADERS).json()
        assert sorted(s["noteId"] for s in listed["screenshots"]) == sorted([note.id, page_note.id])
        assert client.delete(url, headers=HEADERS).status_code == 204
        assert client.get(url, headers=HEADERS).status_code == 404


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.sqlite_only
async def test_mcp_get_screenshot_as_image_or_path(project: Path) -> None:
    """With the SDK's client: the image only when asked, as MCP image content or a file."""
    with annotate.open(project) as store:
        note = store.add_annotation(text_note())
        bare = store.add_annotation(text_note(note="No picture"))
        store.screenshots.attach(note.id, LOSSLESS)
    async with Client(build_server(project)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools["get_screenshot"].input_schema["properties"]) == {"id", "format"}
        # Listing notes never carries an image.
        listed = await client.call_tool("list_annotations", {})
        assert all(c.type == "text" for c in listed.content)
        result = await client.call_tool("get_screenshot", {"id": note.id})
        assert not result.is_error
        info, image = result.content
        assert info.type == "text" and json.loads(info.text)["width"] == 33
        assert image.type == "image" and image.mime_type == "image/webp"
        assert base64.b64decode(image.data) == LOSSLESS
        result = await client.call_tool("get_screenshot", {"id": note.id, "format": "path"})
        [info] = result.content
        path = Path(json.loads(info.text)["path"])
        assert path.read_bytes() == LOSSLESS and ".annotate" in path.parts
        missing = await client.call_tool("get_screenshot", {"id": bare.id})
        assert missing.is_error and missing.content[0].text == f'Note "{bare.id}" has no screenshot'
        unknown = await client.call_tool("get_screenshot", {"id": "a_0000000000"})
        assert unknown.is_error and "not found" in unknown.content[0].text


@pytest.mark.sqlite_only
def test_cli_saves_it_and_the_export_links_it(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with annotate.open(project) as store:
        note = store.add_annotation(text_note())
        page_note = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
        bare = store.add_annotation(text_note(note="No picture"))
        store.screenshots.attach(note.id, LOSSY)
        store.screenshots.attach(page_note.id, ALPHA)
        text = render(store, "markdown")
    assert f"Screenshot: [{note.id}.webp](/__annotate/api/annotations/{note.id}/screenshot)" in text
    assert f"(/__annotate/api/page-notes/{page_note.id}/screenshot)" in text
    assert f"{bare.id}.webp" not in text
    monkeypatch.chdir(project)
    out = tmp_path / "shot.webp"
    r = CliRunner().invoke(cli, ["screenshot", note.id, "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == LOSSY and "40×24" in r.output
    r = CliRunner().invoke(cli, ["screenshot", bare.id])
    assert r.exit_code == 1
    assert r.output.strip().splitlines() == [f'Error: Note "{bare.id}" has no screenshot']
