"""The MCP prompts and what the server tells an agent about intents (issue #14, items 4 and 14).

Through the SDK's own client: in memory, and once over stdio as an agent starts `annotate mcp`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

import annotate
from annotate import agent_setup, agents
from annotate.compose import build_server
from annotate.mcp_server import PROMPTS

from .conftest import element_note, text_note, write_project
from .serving import ANNOTATE

pytestmark = pytest.mark.anyio

INSTALL_MD = "# Install\n\nRun pip install mkdocs-annotate in a shell.\n"
INTENTS = (
    "`delete`: remove the quoted text, and nothing around it",
    "`replace`: put the suggestion in place of the quoted text",
    "`insert`: add the suggestion right after the quoted text",
    "A question (a note that asks something and requests no change) gets a reply and no edit, "
    "then is addressed.",
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path, INSTALL_MD)


@pytest.fixture
def store(project: Path) -> annotate.Store:
    s = annotate.open(project)
    yield s
    s.close()


async def prompt(client: Client, name: str, **args: str) -> str:
    result = await client.get_prompt(name, args)
    assert len(result.messages) == 1
    message = result.messages[0]
    assert message.role == "user" and message.content.type == "text"
    return message.content.text


async def test_prompts_are_listed(project: Path) -> None:
    async with Client(build_server(project)) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
    assert tuple(listed) == PROMPTS
    review, note = listed["address-review"], listed["address-note"]
    assert (review.title, note.title) == ("Address the review", "Address one note")
    assert [(a.name, a.required) for a in review.arguments] == [("reviewId", False)]
    assert [(a.name, a.required) for a in note.arguments] == [("id", True)]
    assert "Send to agent" in review.description


async def test_address_review_follows_the_review(project: Path, store: annotate.Store) -> None:
    replace = store.add_annotation(
        text_note(intent="replace", suggestion="pipx install mkdocs-annotate")
    )
    page = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add uv."})
    async with Client(build_server(project)) as client:
        nothing = await prompt(client, "address-review")
        assert "No review is waiting" in nothing
        assert agents.order_of_work() in nothing and agents.intents() in nothing

        review = store.create_review({"mode": "edit", "message": "Please fix"})
        waiting = await prompt(client, "address-review")
        assert waiting == (
            "Work through the review the docs author sent from the rendered site "
            "(mkdocs-annotate).\n\n"
            f"Review {review.id} (edit mode) is waiting with 2 notes. Take it with "
            "wait_for_review: it returns at once with this review.\n\n"
            'The author\'s message: "Please fix"\n\n'
            "1. Go through the notes in the review's order; get_context shows the Markdown lines "
            "of each.\n"
            f"2. {agents.mode_instructions('edit')}\n"
            "3. When every note is addressed, tell the user in a few lines what you changed, what "
            "you only answered, and what needs their decision."
        )
        # Rendering a prompt changes nothing: the review is still waiting.
        assert store.get_review(review.id).picked_up_at is None

        taken = await client.call_tool("wait_for_review", {"timeout_s": 0})
        assert json.loads(taken.content[0].text)["review"]["id"] == review.id
        store.address_annotation(replace.id)
        left = await prompt(client, "address-review")
        assert (
            f"Review {review.id} (edit mode) was taken by an agent and still has 1 note not "
            f"addressed: {page.id}. get_review {review.id} shows it again, with every note."
        ) in left
        assert await prompt(client, "address-review", reviewId=review.id) == left

        store.address_annotation(page.id)
        assert "No review is waiting" in await prompt(client, "address-review")

        with pytest.raises(MCPError) as error:
            await client.get_prompt("address-review", {"reviewId": "rv_0000000000"})
        assert error.value.message == 'Review with ID "rv_0000000000" not found'


async def test_address_review_in_review_mode(project: Path, store: annotate.Store) -> None:
    store.add_annotation(text_note(note="Why pip and not pipx?"))
    store.create_review({"mode": "review"})
    async with Client(build_server(project)) as client:
        text = await prompt(client, "address-review")
    assert f"2. {agents.mode_instructions('review')}\n" in text
    assert "Edit no file" in text and "The author's message" not in text


@pytest.mark.parametrize(
    ("data", "step"),
    [
        (
            text_note(intent="delete", note="Drop it."),
            "3. Remove the quoted text, and nothing around it, then address_annotation with "
            "`deleted: true` and a short `message`.",
        ),
        (
            text_note(intent="replace", suggestion="pipx install mkdocs-annotate"),
            "3. Put the suggestion in place of the quoted text, then address_annotation with "
            "`replacedText` (the new text as the page shows it, not Markdown) and `message`.",
        ),
        (
            text_note(intent="insert", suggestion=" (or pipx)"),
            "3. Add the suggestion right after the quoted text, then address_annotation with "
            "`replacedText` (the quote followed by what you added, as the page shows it) and "
            "`message`.",
        ),
        (
            text_note(),
            "3. Do what the note says, then address_annotation with `replacedText` (the text that "
            "now stands where the quote was, as the page shows it) and `message` (what you "
            "changed).",
        ),
        (
            element_note(),
            "3. The note is about an element of the page (see elementSelector): change the "
            "Markdown that produces it as the note asks, then address_annotation with `message`.",
        ),
    ],
)
async def test_address_note_by_intent(
    project: Path, store: annotate.Store, data: dict[str, object], step: str
) -> None:
    item = store.add_annotation(data)
    async with Client(build_server(project)) as client:
        text = await prompt(client, "address-note", id=item.id)
    kind = f"a {item.type} note, intent `{item.intent}`"
    assert text.startswith(
        f"Work on the review note {item.id}, {kind}, on the page /guide/install/ (Install) "
        f'(status `open`).\n\nNote: "{item.note}"\n'
    )
    assert f"1. get_context {item.id}: the Markdown around it, line-numbered.\n" in text
    assert f"2. set_in_progress {item.id}.\n{step}\n" in text
    if item.type == "text":
        assert 'Quoted text: "pip install mkdocs-annotate"' in text
        assert "Markdown: docs/guide/install.md:3 (anchorState `anchored`)" in text
    else:
        assert "Element: article img:nth-of-type(2) Screenshot of the review panel" in text
    if item.suggestion:
        assert f'Suggestion: "{item.suggestion}"' in text


async def test_address_note_page_note_and_states(project: Path, store: annotate.Store) -> None:
    page = store.add_page_note({"pageUrl": "/guide/install/", "note": "Add uv."})
    done = store.add_annotation(text_note())
    store.accept(done.id)
    async with Client(build_server(project)) as client:
        text = await prompt(client, "address-note", id=page.id)
        assert text.startswith(
            f"Work on the review note {page.id}, a page note, on the page /guide/install/ "
            '(status `open`).\n\nNote: "Add uv."\n'
        )
        assert "3. The note is about the whole page: change its Markdown file as it asks" in text
        resolved = await prompt(client, "address-note", id=done.id)
        assert resolved.endswith(
            "\n\nThe reviewer accepted it (resolved): leave it unless they reopen it."
        )
        assert "set_in_progress" not in resolved
        with pytest.raises(MCPError) as error:
            await client.get_prompt("address-note", {"id": "a_0000000000"})
        assert error.value.message == 'Annotation with ID "a_0000000000" not found'


async def test_intents_are_explained_everywhere(project: Path) -> None:
    async with Client(build_server(project)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions or ""
    for text in (
        instructions,
        tools["list_annotations"].description,
        agents.mode_instructions("edit"),
        agents.mode_instructions("edit", agents.CLI),
        agent_setup.skill_text(),
    ):
        for phrase in INTENTS:
            assert phrase in text, (phrase, text[:80])
    address = tools["address_annotation"].description
    for phrase in ("`message`, your reply", "`deleted: true` when the note asked for a deletion"):
        assert phrase in address
    assert "not Markdown" in address  # replacedText is compared with the rendered page's text
    assert "`--deleted`" in agents.mode_instructions("edit", agents.CLI)
    assert "Edit no file" in agents.mode_instructions("review")


async def test_prompt_over_stdio(project: Path, store: annotate.Store) -> None:
    item = store.add_annotation(text_note(intent="delete", note="Drop it."))
    params = StdioServerParameters(
        command=ANNOTATE, args=["mcp", "--project", str(project)], cwd=str(project)
    )
    async with Client(params, read_timeout_seconds=30) as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == list(PROMPTS)
        text = await prompt(client, "address-note", id=item.id)
    assert "address_annotation with `deleted: true`" in text
