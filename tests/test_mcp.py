"""The MCP server in memory, through the SDK's own client (issue #7, docs/mcp.md).

Every tool, every error text of the reference (astro-inline-review's MCP server), `isError` on
failures, the reference's "Address all annotations" workflow, calls out of order, a corrupt store.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import annotate
from annotate import mcp_tools
from annotate.compose import build_server
from annotate.export import render
from annotate.mcp_server import TOOLS

from .conftest import element_note, text_note, write_project

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).parent.parent / "docs"
INSTALL_MD = """\
# Install

Some words first.

Run pip install mkdocs-annotate in a shell.

## Next

Then add the plugin to mkdocs.yml and run mkdocs serve.
"""
# The eight tools of the reference, then ours.
REFERENCE = (
    "list_annotations",
    "list_page_notes",
    "get_annotation",
    "get_export",
    "address_annotation",
    "set_in_progress",
    "add_agent_reply",
    "update_annotation_target",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_project(tmp_path, INSTALL_MD)
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nWelcome to the docs.\n")
    return tmp_path


@pytest.fixture
def store(project: Path) -> annotate.Store:
    s = annotate.open(project)
    yield s
    s.close()


class Tools:
    """Calls tools and splits each result into (is_error, text)."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def blocks(self, name: str, **args: Any) -> tuple[bool, list[str]]:
        result = await self.client.call_tool(name, args)
        assert all(c.type == "text" for c in result.content)
        return bool(result.is_error), [c.text for c in result.content]

    async def raw(self, name: str, **args: Any) -> tuple[bool, str]:
        is_error, texts = await self.blocks(name, **args)
        assert len(texts) == 1, texts
        return is_error, texts[0]

    async def ok(self, name: str, **args: Any) -> Any:
        is_error, text = await self.raw(name, **args)
        assert not is_error, text
        return text if name in ("get_export", "get_context") else json.loads(text)

    async def error(self, name: str, **args: Any) -> str:
        is_error, text = await self.raw(name, **args)
        assert is_error, text
        return text


def tools(project: Path) -> Any:
    """`async with tools(project) as t:` — a client connected in memory."""

    class Session:
        async def __aenter__(self) -> Tools:
            self.client = Client(build_server(project))
            return Tools(await self.client.__aenter__())

        async def __aexit__(self, *exc: Any) -> None:
            await self.client.__aexit__(*exc)

    return Session()


# -- the tool list ------------------------------------------------------------------------------


async def test_tool_list(project: Path) -> None:
    async with Client(build_server(project)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        # A client that does not render MCP Apps: the view's app-only tools are not listed.
        assert set(listed) == set(TOOLS) - {"chat_page", "chat_api"}
        assert set(REFERENCE) <= set(listed)
        steps = ("set_in_progress", "edit the Markdown", "update_annotation_target")
        steps += ("address_annotation", "add_agent_reply")
        # The order of work is said once in the tool list, and in the instructions.
        for text in (listed["list_annotations"].description, client.instructions or ""):
            where = [text.find(step) for step in steps]
            assert -1 not in where and where == sorted(where), (text[:40], where)
        assert "Mode `edit`" in listed["wait_for_review"].description
        assert "Mode `review`" in listed["wait_for_review"].description
        assert "edit" in client.instructions and "review" in client.instructions
        # The reference's parameter names, and issue #20's optional branch on the listing.
        props = {n: set(t.input_schema.get("properties", {})) for n, t in listed.items()}
        assert props["list_annotations"] == {"pageUrl", "status", "limit", "offset", "branch"}
        assert props["list_page_notes"] >= {"pageUrl"}
        assert props["get_annotation"] == {"id"}
        assert props["get_export"] == set()
        # What the reference has, and issue #14's optional message and deleted.
        assert props["address_annotation"] == {"id", "replacedText", "message", "deleted"}
        assert listed["address_annotation"].input_schema["required"] == ["id"]
        assert props["set_in_progress"] == {"id"}
        assert props["add_agent_reply"] == {"id", "message"}
        assert props["update_annotation_target"] == {"id", "replacedText"}
        assert props["get_context"] == {"id", "lines"}
        assert props["wait_for_review"] == {"timeout_s"}
        assert props["summary"] == {"branch"}
        assert listed["update_annotation_target"].input_schema["required"] == [
            "id",
            "replacedText",
        ]
        assert listed["list_annotations"].annotations.read_only_hint is True
        assert listed["address_annotation"].annotations.read_only_hint is False


def test_every_tool_documented() -> None:
    doc = (DOCS / "mcp.md").read_text()
    for name in TOOLS:
        assert f"\n## `{name}`\n" in doc or f"\n### `{name}`\n" in doc, f"{name} not in mcp.md"


# -- reading ------------------------------------------------------------------------------------


async def test_list_annotations(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    e = store.add_annotation(element_note())
    h = store.add_annotation(
        text_note(pageUrl="/", selectedText="Welcome", quote={"exact": "Welcome"}, note="Hi")
    )
    store.address_annotation(e.id)
    store.accept(h.id)
    async with tools(project) as t:
        listed = await t.ok("list_annotations")
        assert [x["id"] for x in listed] == [a.id, e.id]
        first = listed[0]
        assert first["source"] == {
            "path": "docs/guide/install.md",
            "lineStart": 5,
            "lineEnd": 5,
            "excerpt": "Run pip install mkdocs-annotate in a shell.",
        }
        assert first["anchorState"] == "anchored"
        for key in ("type", "pageUrl", "pageTitle", "note", "status", "createdAt", "updatedAt"):
            assert key in first
        assert listed[1]["elementSelector"]["cssSelector"] == "article img:nth-of-type(2)"
        # Absent optional fields are left out, as the reference does (issue #14).
        assert "source" not in listed[1] and "replies" not in listed[1]
        assert "addressedAt" not in first and "suggestion" not in first
        assert [x["id"] for x in await t.ok("list_annotations", pageUrl="/")] == []
        assert [x["id"] for x in await t.ok("list_annotations", status="addressed")] == [e.id]
        assert [x["id"] for x in await t.ok("list_annotations", status="resolved")] == [h.id]
        every = await t.ok("list_annotations", status="all")
        assert [x["id"] for x in every] == [a.id, e.id, h.id]
        assert every[2]["source"]["path"] == "docs/index.md"
        # A page with no notes at all says so, naming the closest pages with notes.
        is_error, texts = await t.blocks("list_annotations", pageUrl="/guide/instal/")
        assert not is_error and json.loads(texts[0]) == []
        assert texts[1] == (
            "No notes on page /guide/instal/. Pages with notes closest to it: /guide/install/, /."
        )
        message = await t.error("list_annotations", status="done")
        assert "status" in message


async def test_list_annotations_a_page_at_a_time(project: Path, store: annotate.Store) -> None:
    made = [store.add_annotation(text_note(note=f"Note {i}")).id for i in range(7)]
    async with tools(project) as t:
        # Up to the limit: the reference's answer exactly, one JSON array.
        assert [a["id"] for a in await t.ok("list_annotations", limit=7)] == made
        result = await t.client.call_tool("list_annotations", {"limit": 3, "offset": 2})
        assert not result.is_error
        first, more = (c.text for c in result.content)
        assert [a["id"] for a in json.loads(first)] == made[2:5]
        assert more == (
            "Showing annotations 3–5; more match. Call list_annotations again with offset=5, "
            "or narrow the list with pageUrl or status."
        )
        assert [a["id"] for a in await t.ok("list_annotations", limit=3, offset=5)] == made[5:]
        assert await t.ok("list_annotations", offset=10) == []
        assert "limit" in await t.error("list_annotations", limit=0)
    with pytest.raises(annotate.ValidationError, match="offset must be a whole number"):
        store.list_annotations(limit=1, offset=-1)


async def test_list_page_notes(project: Path, store: annotate.Store) -> None:
    n1 = store.add_page_note({"pageUrl": "/", "pageTitle": "Home", "note": "Too short"})
    n2 = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add a screenshot"})
    async with tools(project) as t:
        listed = await t.ok("list_page_notes")
        assert [n["id"] for n in listed] == [n1.id, n2.id]
        assert {"id", "pageUrl", "pageTitle", "note", "createdAt", "updatedAt"} <= set(listed[0])
        assert [n["id"] for n in await t.ok("list_page_notes", pageUrl="/")] == [n1.id]
        assert await t.ok("list_page_notes", status="addressed") == []


async def test_get_annotation(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    n = store.add_page_note({"pageUrl": "/", "note": "Whole page"})
    async with tools(project) as t:
        got = await t.ok("get_annotation", id=a.id)
        assert got["id"] == a.id and got["note"] == "Mention pipx as well."
        assert got["source"]["lineStart"] == 5
        assert (await t.ok("get_annotation", id=n.id))["note"] == "Whole page"
        assert await t.error("get_annotation", id="a_0000000000") == (
            'Annotation with ID "a_0000000000" not found'
        )
        assert await t.error("get_annotation", id="") == 'Annotation with ID "" not found'
        assert "id" in await t.error("get_annotation")  # missing argument: validation message


async def test_get_export(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    b = store.add_annotation(text_note(pageUrl="/", selectedText="Welcome", note="Warmer"))
    store.set_in_progress(a.id)
    store.address_annotation(b.id)
    store.add_agent_reply(b.id, "Made it warmer")
    async with tools(project) as t:
        text = await t.ok("get_export")
        assert "⏳ [In Progress]" in text
        assert "🔧 [Addressed]" in text
        assert "Made it warmer" in text
        assert "/guide/install/" in text and "docs/guide/install.md:5" in text
        assert text == render(store, "markdown")


async def test_summary(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    store.add_annotation(element_note())
    store.add_page_note({"pageUrl": "/", "note": "Whole page"})
    store.address_annotation(a.id)
    store.create_review({"mode": "edit"})
    async with tools(project) as t:
        s = await t.ok("summary")
        assert s["annotations"] == {"open": 1, "in_progress": 0, "addressed": 1, "resolved": 0}
        assert s["pageNotes"]["open"] == 1
        assert s["anchorStates"] == {"anchored": 1, "stale": 0, "orphaned": 0, "removed": 0}
        assert s["pages"] == 2
        assert s["pendingReviews"] == 1
        assert s["openItems"] == 2


# -- the lifecycle tools ------------------------------------------------------------------------


async def test_set_in_progress(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    async with tools(project) as t:
        got = await t.ok("set_in_progress", id=a.id)
        assert got["status"] == "in_progress"
        assert got["inProgressAt"]
        again = await t.ok("set_in_progress", id=a.id)  # a no-op
        assert again["inProgressAt"] == got["inProgressAt"]
        assert await t.error("set_in_progress", id="a_nope") == (
            'Annotation with ID "a_nope" not found'
        )


async def test_address_annotation(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    e = store.add_annotation(element_note())
    async with tools(project) as t:
        got = await t.ok("address_annotation", id=e.id)
        assert got["status"] == "addressed" and got["addressedAt"]
        assert await t.error("address_annotation", id="a_nope") == (
            'Annotation with ID "a_nope" not found'
        )
        for blank in ("", "   \n"):
            assert await t.error("address_annotation", id=a.id, replacedText=blank) == (
                "replacedText must not be empty"
            )
        assert await t.error("address_annotation", id=e.id, replacedText="New") == (
            "not a text annotation"
        )
        assert store.get_annotation(a.id).status == "open"  # refused calls change nothing
        got = await t.ok("address_annotation", id=a.id, replacedText="pipx install it")
        assert got["status"] == "addressed"
        assert got["replacedText"] == "pipx install it"


async def test_add_agent_reply(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    async with tools(project) as t:
        got = await t.ok("add_agent_reply", id=a.id, message="Added pipx")
        assert [(r["role"], r["message"]) for r in got["replies"]] == [("agent", "Added pipx")]
        assert got["replies"][0]["createdAt"]
        for blank in ("", "  \t "):
            assert await t.error("add_agent_reply", id=a.id, message=blank) == (
                "Reply message must not be empty"
            )
        assert await t.error("add_agent_reply", id="a_nope", message="Hi") == (
            'Annotation with ID "a_nope" not found'
        )
        assert len(store.get_annotation(a.id).replies) == 1


async def test_update_annotation_target(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    e = store.add_annotation(element_note())
    md = project / "docs" / "guide" / "install.md"
    md.write_text(md.read_text().replace("Some words first.", "Some words first.\n\nAnd more."))
    md.write_text(md.read_text().replace("pip install mkdocs-annotate", "pipx install it"))
    async with tools(project) as t:
        got = await t.ok("update_annotation_target", id=a.id, replacedText="pipx install it")
        assert got["replacedText"] == "pipx install it"
        assert got["source"]["lineStart"] == 7  # re-located at the new text, two lines down
        assert got["anchorState"] == "anchored"
        assert got["status"] == "open"
        assert await t.error("update_annotation_target", id="a_nope", replacedText="x") == (
            'Annotation with ID "a_nope" not found'
        )
        assert await t.error("update_annotation_target", id=e.id, replacedText="x") == (
            "not a text annotation"
        )
        assert await t.error("update_annotation_target", id=a.id, replacedText=" ") == (
            "replacedText must not be empty"
        )
        assert "replacedText" in await t.error("update_annotation_target", id=a.id)


# -- the reference's workflows -----------------------------------------------------------------


async def test_address_all_annotations_workflow(project: Path, store: annotate.Store) -> None:
    """The reference's "Address all annotations" workflow, with a real edit of the Markdown in
    between."""
    store.add_annotation(text_note(note="Say pipx"))
    store.add_annotation(
        text_note(
            selectedText="run mkdocs serve",
            quote={"exact": "run mkdocs serve", "prefix": "mkdocs.yml and ", "suffix": "."},
            note="Mention the port",
        )
    )
    edits = {
        "Say pipx": ("pip install mkdocs-annotate", "pipx install mkdocs-annotate"),
        "Mention the port": ("run mkdocs serve", "run mkdocs serve (port 8000)"),
    }
    async with tools(project) as t:
        listed = await t.ok("list_annotations")  # 1. get all annotations
        assert len(listed) == 2
        for item in listed:  # 2. for each
            started = await t.ok("set_in_progress", id=item["id"])  # a. signal work starting
            assert started["status"] == "in_progress"
            old, new = edits[item["note"]]  # b. read the note and selectedText
            assert item["selectedText"] == old
            path = project / item["source"]["path"]  # c. make the change
            lines = path.read_text().splitlines(keepends=True)
            n = item["source"]["lineStart"] - 1
            assert old in lines[n]
            lines[n] = lines[n].replace(old, new)
            path.write_text("".join(lines))
            target = await t.ok("update_annotation_target", id=item["id"], replacedText=new)
            assert target["replacedText"] == new  # d. record replacement text
            assert target["anchorState"] == "anchored"
            done = await t.ok("address_annotation", id=item["id"])  # e. mark as addressed
            assert done["status"] == "addressed"
            replied = await t.ok("add_agent_reply", id=item["id"], message=f"Now: {new}")
            assert replied["replies"][-1]["role"] == "agent"  # f. explain what changed
        final = await t.ok("list_annotations")
        assert [a["status"] for a in final] == ["addressed", "addressed"]
        assert [a["source"]["lineStart"] for a in final] == [5, 9]
        assert [a["source"]["excerpt"] for a in final] == [
            "Run pipx install mkdocs-annotate in a shell.",
            "Then add the plugin to mkdocs.yml and run mkdocs serve (port 8000).",
        ]
        export = await t.ok("get_export")
        assert export.count("🔧 [Addressed]") == 2
        assert "Now: pipx install mkdocs-annotate" in export


async def test_process_a_single_page(project: Path, store: annotate.Store) -> None:
    note = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add a screenshot"})
    a = store.add_annotation(text_note())
    store.add_annotation(text_note(pageUrl="/", selectedText="Welcome", note="Warmer"))
    async with tools(project) as t:
        notes = await t.ok("list_page_notes", pageUrl="/guide/install/")
        assert [n["id"] for n in notes] == [note.id]
        listed = await t.ok("list_annotations", pageUrl="/guide/install/")
        assert [x["id"] for x in listed] == [a.id]
        # Page notes take the same lifecycle tools.
        assert (await t.ok("set_in_progress", id=note.id))["status"] == "in_progress"
        assert (await t.ok("address_annotation", id=note.id))["status"] == "addressed"
        assert (await t.ok("add_agent_reply", id=note.id, message="Added"))["replies"]
        assert await t.error("address_annotation", id=note.id, replacedText="x") == (
            "not a text annotation"
        )


async def test_out_of_order_calls(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    b = store.add_annotation(text_note(note="Second"))
    async with tools(project) as t:
        # The reference allows addressing without starting; a drop-in must too (docs/workflow.md).
        assert (await t.ok("address_annotation", id=a.id))["status"] == "addressed"
        # Starting again after addressing is rework.
        rework = await t.ok("set_in_progress", id=a.id)
        assert rework["status"] == "in_progress" and "addressedAt" not in rework
        # Anything but a reply on a resolved note is refused, naming the state and the way out.
        store.accept(b.id)
        refused = {
            "set_in_progress": {},
            "address_annotation": {},
            "update_annotation_target": {"replacedText": "x"},
        }
        for name, args in refused.items():
            message = await t.error(name, id=b.id, **args)
            assert message.endswith(f'annotation "{b.id}" is resolved; reopen it first'), message
            assert message.startswith("Cannot ")
        assert store.get_annotation(b.id).status == "resolved"
        replied = await t.ok("add_agent_reply", id=b.id, message="Noted")
        assert replied["status"] == "resolved"
        # After the reviewer reopens it, work can start again.
        store.reopen(b.id, "One more thing")
        assert (await t.ok("set_in_progress", id=b.id))["status"] == "in_progress"


# -- get_context --------------------------------------------------------------------------------


async def test_get_context(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(
        text_note(intent="replace", suggestion="pipx install mkdocs-annotate", note="")
    )
    store.add_reply(a.id, "Or both?")
    async with tools(project) as t:
        # Plain text, not JSON-escaped Markdown; intent and suggestion beside the lines (#14).
        got = await t.ok("get_context", id=a.id, lines=2)
        assert got == (
            f"[{a.id}] text note on /guide/install/ — docs/guide/install.md:5 "
            "(status: open, anchor: anchored)\n"
            "intent: replace: put the suggestion in place of the quoted text\n"
            "note: (none)\n"
            "suggestion: pipx install mkdocs-annotate\n"
            "quote: pip install mkdocs-annotate\n"
            "reply (reviewer): Or both?\n"
            "\n"
            "docs/guide/install.md, lines 3-7 (> marks the note's lines):\n"
            "  3 | Some words first.\n"
            "  4 |\n"
            "> 5 | Run pip install mkdocs-annotate in a shell.\n"
            "  6 |\n"
            "  7 | ## Next"
        )
        default = await t.ok("get_context", id=a.id)  # 10 lines: the whole small file
        assert "lines 1-9 (" in default and "  1 | # Install\n" in default
        assert (await t.ok("get_context", id=a.id, lines=0)).endswith(
            ":\n> 5 | Run pip install mkdocs-annotate in a shell."
        )
        assert await t.error("get_context", id="a_nope") == 'Annotation with ID "a_nope" not found'
        assert "lines" in await t.error("get_context", id=a.id, lines=-1)


async def test_get_context_cautions(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    e = store.add_annotation(element_note())
    n = store.add_page_note({"pageUrl": "/guide/install/", "note": "Whole page"})
    md = project / "docs" / "guide" / "install.md"
    async with tools(project) as t:
        element = await t.ok("get_context", id=e.id, lines=1)
        assert element.startswith(
            f"[{e.id}] element note on /guide/install/ — docs/guide/install.md ("
        )
        assert element.endswith("lines 1-3:\n  1 | # Install\n  2 |\n  3 | Some words first.")
        assert "warning: An element annotation points at the rendered page" in element
        assert "article img:nth-of-type(2)" in element
        page = await t.ok("get_context", id=n.id, lines=0)
        assert page.endswith("  1 | # Install") and "whole page" in page
        assert "intent:" not in page
        # Rewritten beyond recognition: stale, shown where it was last seen, and nothing marked:
        # "Zz." is other text (issue #13).
        md.write_text(md.read_text().replace("Run pip install mkdocs-annotate in a shell.", "Zz."))
        stale = await t.ok("get_context", id=a.id, lines=0)
        assert "anchor: stale" in stale and stale.endswith("\n  5 | Zz.")
        assert "(> marks" not in stale
        assert "warning: The annotated text was rewritten" in stale
        md.unlink()
        orphaned = await t.ok("get_context", id=a.id)
        assert "anchor: orphaned" in orphaned and " | " not in orphaned
        assert "docs/guide/install.md is gone (orphaned)" in orphaned


# -- reviews ------------------------------------------------------------------------------------


async def test_wait_for_review_returns_a_pending_review_at_once(
    project: Path, store: annotate.Store
) -> None:
    a = store.add_annotation(text_note())
    sent = store.create_review({"mode": "review", "message": "What do you think?"})
    async with tools(project) as t:
        started = time.monotonic()
        got = await t.ok("wait_for_review", timeout_s=30)
        assert time.monotonic() - started < 2
        review = got["review"]
        assert (review["id"], review["mode"], review["message"]) == (
            sent.id,
            "review",
            "What do you think?",
        )
        assert review["status"] == "picked_up"
        # Compact: per note what it asks and where (issue #14).
        assert review["notes"] == [
            {
                "id": a.id,
                "kind": "text",
                "intent": "comment",
                "note": "Mention pipx as well.",
                "at": "docs/guide/install.md:5",
                "quote": "pip install mkdocs-annotate",
            }
        ]
        assert review["total"] == 1 and "next" not in review
        assert got["instructions"].startswith("Review mode:")
        assert "Edit no file" in got["instructions"]
        # Claimed: nobody gets it twice.
        again = await t.ok("wait_for_review", timeout_s=0)
        assert again["review"] is None
        assert again["instructions"].startswith("No review yet")
        assert (await t.ok("list_reviews", pendingOnly=True)) == []
        assert await t.ok("list_reviews") == [
            {
                "id": sent.id,
                "mode": "review",
                "message": "What do you think?",
                "status": "picked_up",
                "createdAt": sent.created_at,
                "pickedUpAt": store.get_review(sent.id).picked_up_at,
                "notes": 1,
                "waiting": 1,
            }
        ]
        assert (await t.ok("get_review", id=sent.id))["mode"] == "review"
        assert await t.error("get_review", id="rv_nope") == 'Review with ID "rv_nope" not found'


async def test_wait_for_review_blocks_until_sent(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    sent_at: list[float] = []

    def send() -> None:
        time.sleep(0.6)
        with annotate.open(project) as other:  # another connection, as another process has
            other.create_review({"mode": "edit", "message": "Go"})
        sent_at.append(time.monotonic())

    async with tools(project) as t:
        sender = threading.Thread(target=send)
        started = time.monotonic()
        sender.start()
        got = await t.ok("wait_for_review", timeout_s=20)
        woke = time.monotonic()
        sender.join()
        assert woke - started >= 0.6
        assert woke - sent_at[0] < 1.0
        assert got["review"]["mode"] == "edit"
        assert [x["id"] for x in got["review"]["notes"]] == [a.id]
        assert got["instructions"].startswith("Edit mode:")
        assert "set_in_progress → edit the Markdown" in got["instructions"]


async def test_wait_for_review_times_out(project: Path) -> None:
    async with tools(project) as t:
        started = time.monotonic()
        got = await t.ok("wait_for_review", timeout_s=0.5)
        assert 0.5 <= time.monotonic() - started < 2
        assert got == {
            "review": None,
            "instructions": "No review yet: the reviewer has not pressed Send to agent within "
            "0.5 s. Run wait_for_review again to keep waiting, or look at the open notes with "
            "list_annotations.",
        }
        assert "timeout_s" in await t.error("wait_for_review", timeout_s=-1)


async def test_wait_for_review_reports_progress(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_tools, "PROGRESS_EVERY_S", 0.2)
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async with Client(build_server(project)) as client:
        result = await client.call_tool(
            "wait_for_review", {"timeout_s": 1}, progress_callback=progress
        )
    assert not result.is_error
    assert len(seen) >= 3
    assert seen[0] == (pytest.approx(0.2), 1.0, "Waiting for Send to agent")


async def test_cancelled_wait_claims_nothing(project: Path, store: annotate.Store) -> None:
    async with tools(project) as t:
        with anyio.move_on_after(0.5):
            await t.raw("wait_for_review", timeout_s=30)
        await anyio.sleep(0.5)  # the waiting thread sees its stop flag at its next poll
        store.add_annotation(text_note())
        sent = store.create_review({"mode": "edit"})
        await anyio.sleep(0.6)
        assert [r.id for r in store.list_reviews(pending_only=True)] == [sent.id]
        assert (await t.ok("wait_for_review", timeout_s=0))["review"]["id"] == sent.id


# -- failures of the store itself ---------------------------------------------------------------


async def test_corrupt_store_is_an_error_not_a_crash(project: Path) -> None:
    db = project / ".annotate" / "annotations.db"
    db.parent.mkdir()
    db.write_bytes(b"this is not a database" * 100)
    async with tools(project) as t:
        for name, args in (
            ("list_annotations", {}),
            ("get_annotation", {"id": "a_1"}),
            ("summary", {}),
            ("wait_for_review", {"timeout_s": 0}),
        ):
            message = await t.error(name, **args)
            assert message == f"{db} is not a readable annotation database (not an SQLite database)"
        # The server is still there, and recovers once the file is fixed.
        db.unlink()
        assert await t.ok("list_annotations") == []


async def test_missing_project_is_an_error(tmp_path: Path) -> None:
    async with tools(tmp_path / "nowhere") as t:
        message = await t.error("list_annotations")
        assert re.fullmatch(r"Project folder '.*nowhere' does not exist", message), message


# -- issue #27 item 2: the tool list and answers an agent pays for ------------------------------

# Characters of the tools/list result for a terminal agent: 10,000 for issue #27's 15 tools; issue
# #29's request_review (484) and issue #30's get_screenshot (488) brought it to 10,483.
TOOL_LIST_LIMIT = 10_500


def listing_chars(tools: list[Any]) -> int:
    """The tools/list result as JSON on the wire (json.dumps' separators, the larger count)."""
    dumped = [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]
    return len(json.dumps({"tools": dumped}, ensure_ascii=False))


async def test_a_terminal_agents_tool_list_is_short_and_has_no_app_only_tools(
    project: Path,
) -> None:
    async with Client(build_server(project)) as client:
        listed = (await client.list_tools()).tools
    names = {t.name for t in listed}
    assert "chat_page" not in names and "chat_api" not in names
    assert "open_review" in names  # for the model: it says where the page is without a view
    assert listing_chars(listed) <= TOOL_LIST_LIMIT, listing_chars(listed)
    for tool in listed:
        schema = json.dumps(tool.input_schema)
        assert '"title"' not in schema and '{"type": "null"}' not in schema, tool.name


async def test_a_client_that_renders_apps_gets_the_views_tools(project: Path) -> None:
    from mcp.client import advertise
    from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID

    apps = [advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})]
    async with Client(build_server(project), extensions=apps) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(listed) == set(TOOLS)
    assert listed["chat_api"].meta["ui"]["visibility"] == ["app"]


async def test_answers_are_compact_json_unless_pretty(project: Path, store: annotate.Store) -> None:
    store.add_annotation(text_note())
    async with Client(build_server(project)) as client:
        compact = (await client.call_tool("list_annotations", {})).content[0].text
    async with Client(build_server(project, pretty=True)) as client:
        pretty = (await client.call_tool("list_annotations", {})).content[0].text
    assert json.loads(compact) == json.loads(pretty)
    assert "\n" not in compact and '": ' not in compact and '", "' not in compact
    assert pretty.startswith('[\n  {\n    "id": ')
    assert len(compact) < len(pretty) * 0.8


# -- issue #32 item 11: arguments as sent, text as shown ----------------------------------------


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("address_annotation", {"deleted": "yes"}, "deleted"),
        ("address_annotation", {"deleted": 1}, "deleted"),
        ("list_annotations", {"limit": True}, "limit"),
        ("list_annotations", {"limit": "5"}, "limit"),
        ("get_context", {"lines": 2.5}, "lines"),
        ("add_agent_reply", {"message": 7}, "message"),
    ],
)
async def test_arguments_are_not_coerced(
    project: Path, store: annotate.Store, tool: str, args: dict[str, Any], field: str
) -> None:
    a = store.add_annotation(text_note())
    if tool != "list_annotations":
        args = {"id": a.id, **args}
    async with tools(project) as t:
        text = await t.error(tool, **args)
    assert text.startswith(f"Invalid arguments for {tool}: {field}: "), text
    after = store.get_annotation(a.id)
    assert after.status == "open" and not after.replies and after.anchor_state != "removed"


async def test_valid_arguments_still_pass_strictly(project: Path, store: annotate.Store) -> None:
    a = store.add_annotation(text_note())
    async with tools(project) as t:
        # An integer where a float is asked is a number, not a coercion.
        taken = await t.ok("wait_for_review", timeout_s=0)
        assert taken["review"] is None
        done = await t.ok("address_annotation", id=a.id, deleted=False, message="Done.")
    assert done["status"] == "addressed"


HOSTILE = "Fix\x1b[8m hidden\x1b]0;owned\x07 \x9b31m \u202eevil\u2066"


async def test_hidden_characters_reach_the_agent_as_escapes(
    project: Path, store: annotate.Store
) -> None:
    a = store.add_annotation(text_note(note=HOSTILE))
    store.add_agent_reply(a.id, "Reply \x1b[2J")
    async with tools(project) as t:
        answers = {
            "get_annotation": (await t.raw("get_annotation", id=a.id))[1],
            "list_annotations": (await t.raw("list_annotations"))[1],
            "get_context": (await t.raw("get_context", id=a.id))[1],
            "get_export": (await t.raw("get_export"))[1],
        }
    for name, text in answers.items():
        for raw in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066"):
            assert raw not in text, (name, raw)
    # JSON keeps its meaning: the note reads back exactly.
    assert json.loads(answers["get_annotation"])["note"] == HOSTILE
    assert "\\u001b[8m" in answers["get_annotation"]
    # Plain text shows each one as the CLI does (annotate/visible.py).
    assert (
        "Fix\\x1b[8m hidden" in answers["get_context"] and "\\u202eevil" in answers["get_context"]
    )
    assert "\\x1b[2J" in answers["get_context"]


async def test_prompts_show_hidden_characters_as_escapes(
    project: Path, store: annotate.Store
) -> None:
    a = store.add_annotation(text_note(note=HOSTILE))
    async with Client(build_server(project)) as client:
        prompt = await client.get_prompt("address-note", {"id": a.id})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert "\x1b" not in text and "\u202e" not in text
    assert "Fix\\x1b[8m hidden" in text
