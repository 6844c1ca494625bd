"""What one review round costs an agent in tool output (issue #14): characters and approximate
tokens per tool answer and per round, for a fixed review of 12 notes, before and after.

    .venv/bin/python benchmarks/agent_round.py

The review: on one page of a temp project, 3 comments, 1 question, 2 deletions, 2 replacements,
2 insertions (text notes made through `Store.add_annotation`, so each is located in its Markdown),
1 element note and 1 page note, sent with "Send to agent" in edit mode. The agent takes the review,
reads each note's context, edits the Markdown as asked, and finishes each note.

- **before**: the round as release 0.1 answered it. Its answers are rebuilt here from the same
  library objects, exactly as 0.1's tools wrote them (indented JSON of `to_dict()` with every key,
  the review with whole annotations, `get_context` as a JSON object): `wait_for_review`, then per
  note `get_context`, `set_in_progress`, `update_annotation_target` (text notes that keep text),
  `address_annotation`, `add_agent_reply`.
- **after**: today's MCP server through the SDK's client, in memory: `wait_for_review` (compact),
  then per note `get_context` (plain text), `set_in_progress`, and one `address_annotation` with
  `replacedText` (or `deleted`) and `message`.

Tokens are estimated as characters / 4. Issue #14's target: the round under half of before.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
# benchmarks/mcp.py, first on sys.path, would shadow the `mcp` package.
while str(HERE) in sys.path:
    sys.path.remove(str(HERE))

from mcp import Client  # noqa: E402

import annotate  # noqa: E402
from annotate.agents import mode_instructions  # noqa: E402
from annotate.mcp_server import build_server  # noqa: E402

sys.path.append(str(HERE))

from _machine import describe  # noqa: E402

TARGET_RATIO = 0.5
PAGE = """\
# Configuration

The plugin reads its options from the `plugins` section of mkdocs.yml.

Every option has a default, so an empty entry is enough to start.

The database lives in a folder beside mkdocs.yml and is never committed.

Old releases stored the notes in a JSON file, which is still read on import.

The token is created on the first start and kept in the same folder.

Reviews are sent with the button at the bottom of the panel.

Agents wait for a review with the wait_for_review tool.

The overlay follows the palette of Material for MkDocs.

The server binds to loopback unless told otherwise.
"""
# (intent, quote, note, suggestion); the edit the agent makes follows the intent.
NOTES = [
    ("comment", "an empty entry is enough to start", "Say which options matter first.", None),
    ("comment", "is never committed", "Mention that setup adds it to .gitignore.", None),
    ("comment", "kept in the same folder", "Say the file mode (0600).", None),
    ("comment", "with the button at the bottom", "Is it really at the bottom?", None),
    ("delete", "Old releases stored the notes in a JSON file, which is still read on import.",
     "", None),
    ("delete", "The overlay follows the palette of Material for MkDocs.", "", None),
    ("replace", "binds to loopback", "", "listens on 127.0.0.1 only"),
    ("replace", "reads its options", "", "takes its settings"),
    ("insert", "with the wait_for_review tool.", "", " Codex users set a longer timeout."),
    ("insert", "is created on the first start", "", " (with mode 0600)"),
]  # fmt: skip
QUESTION = 3  # the question gets a reply and no edit


def make_project(root: Path) -> list[str]:
    """The project and the 12 notes, sent as one review; their ids in review order."""
    (root / "mkdocs.yml").write_text("site_name: bench\n")
    (root / "docs").mkdir()
    (root / "docs" / "configuration.md").write_text(PAGE)
    ids = []
    with annotate.open(root) as store:
        for intent, quote, note, suggestion in NOTES:
            data: dict[str, Any] = {"pageUrl": "/configuration/", "pageTitle": "Configuration",
                                    "selectedText": quote, "quote": {"exact": quote},
                                    "note": note, "intent": intent}  # fmt: skip
            if suggestion:
                data["suggestion"] = suggestion.strip()
            ids.append(store.add_annotation(data).id)
        element = {"cssSelector": "article h1", "xpath": "/html/body/article/h1", "tagName": "h1",
                   "description": "The page title", "outerHtmlPreview": "<h1>Configuration</h1>"}  # fmt: skip
        ids.append(
            store.add_annotation(
                {"pageUrl": "/configuration/", "pageTitle": "Configuration",
                 "note": "Call it Settings, as the nav does.", "elementSelector": element}
            ).id
        )  # fmt: skip
        ids.append(
            store.add_page_note(
                {"pageUrl": "/configuration/", "note": "Add a table of every option at the end."}
            ).id
        )
        store.create_review({"mode": "edit", "message": "Please go through these."})
    return ids


def edit(root: Path, i: int) -> tuple[str | None, bool]:
    """Apply note `i`'s change to the Markdown; return (replacedText, deleted)."""
    if i >= len(NOTES) or i == QUESTION:
        return None, False
    md = root / "docs" / "configuration.md"
    text = md.read_text()
    intent, quote, _, suggestion = NOTES[i]
    if intent == "delete":
        md.write_text(text.replace(quote + "\n\n", ""))
        return None, True
    if intent == "replace":
        new = suggestion
    elif intent == "insert":
        new = quote + suggestion
    else:
        new = quote + " (see the configuration page)"
    assert new is not None
    md.write_text(text.replace(quote, new))
    return new, False


def reply(i: int) -> str:
    if i == QUESTION:
        return "Yes: the Send to agent section is the last one in the panel."
    return "Done as asked."


def indented(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


def before(root: Path, ids: list[str]) -> dict[str, list[int]]:
    """0.1's answers, rebuilt from the library's objects."""
    sizes: dict[str, list[int]] = defaultdict(list)
    with annotate.open(root) as s:
        review = s.claim_review()
        assert review is not None
        wait = {"review": review.to_dict(), "instructions": mode_instructions(review.mode)}
        sizes["wait_for_review"].append(len(indented(wait)))
        for i, id in enumerate(ids):
            sizes["get_context"].append(len(indented(s.get_context(id).to_dict())))
            sizes["set_in_progress"].append(len(indented(s.set_in_progress(id).to_dict())))
            new, _ = edit(root, i)
            if new is not None:
                item = s.update_annotation_target(id, new)
                sizes["update_annotation_target"].append(len(indented(item.to_dict())))
            sizes["address_annotation"].append(len(indented(s.address_annotation(id).to_dict())))
            item = s.add_agent_reply(id, reply(i))
            sizes["add_agent_reply"].append(len(indented(item.to_dict())))
    return sizes


async def after(root: Path, ids: list[str]) -> dict[str, list[int]]:
    """Today's server, through the SDK's client."""
    sizes: dict[str, list[int]] = defaultdict(list)
    async with Client(build_server(root)) as client:

        async def call(name: str, **args: Any) -> str:
            result = await client.call_tool(name, args)
            assert not result.is_error, result.content
            text = "".join(block.text for block in result.content)  # type: ignore[union-attr]
            sizes[name].append(len(text))
            return text

        waited = json.loads(await call("wait_for_review", timeout_s=0))
        assert [n["id"] for n in waited["review"]["notes"]] == ids
        for i, id in enumerate(ids):
            await call("get_context", id=id)
            await call("set_in_progress", id=id)
            new, deleted = edit(root, i)
            args: dict[str, Any] = {"message": reply(i)}
            if new is not None:
                args["replacedText"] = new
            if deleted:
                args["deleted"] = True
            await call("address_annotation", id=id, **args)
    return sizes


TOOLS = (
    "wait_for_review",
    "get_context",
    "set_in_progress",
    "update_annotation_target",
    "address_annotation",
    "add_agent_reply",
)


def main() -> None:
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        old_ids = make_project(Path(one))
        new_ids = make_project(Path(two))
        old = before(Path(one), old_ids)
        new = anyio.run(after, Path(two), new_ids)
        print(f"benchmarks/agent_round.py — {describe()}")
        print(f"One edit-mode review of {len(new_ids)} notes (characters; tokens ≈ characters / 4)")
        print()
        print("| tool | calls before | chars before | calls after | chars after | ratio |")
        print("| --- | ---: | ---: | ---: | ---: | ---: |")
        for tool in TOOLS:
            a, b = old.get(tool, []), new.get(tool, [])
            ratio = f"{sum(b) / sum(a):.2f}" if a and b else "–"
            print(f"| `{tool}` | {len(a)} | {sum(a):,} | {len(b)} | {sum(b):,} | {ratio} |")
        total_a = sum(sum(v) for v in old.values())
        total_b = sum(sum(v) for v in new.values())
        calls_a = sum(len(v) for v in old.values())
        calls_b = sum(len(v) for v in new.values())
        ratio = total_b / total_a
        print(
            f"| **round** | {calls_a} | {total_a:,} (~{total_a // 4:,} tokens) | {calls_b} | "
            f"{total_b:,} (~{total_b // 4:,} tokens) | {ratio:.2f} |"
        )
        print()
        per_note = sum(new["wait_for_review"]) / len(new_ids) / 4
        print(f"wait_for_review per note after: ~{per_note:.0f} tokens (target: under 150)")
        verdict = "meets" if ratio < TARGET_RATIO else "misses"
        print(f"Round after / before: {ratio:.2f}, {verdict} the target (< {TARGET_RATIO})")


if __name__ == "__main__":
    main()
