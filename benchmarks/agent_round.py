"""What one review round costs an agent in tokens (issue #14): every tool answer it reads.

    .venv/bin/python benchmarks/agent_round.py [--hook-runs 10]

A temp MkDocs project gets three Markdown pages and a fixed review of 12 notes of every kind: two
comments, two questions, two deletions, two replacements, two insertions (text notes, located in
their Markdown like real ones), a page note and an element note, sent with "Send to agent" in edit
mode. An agent then works the round through the SDK's client, in memory, the way the tool
descriptions tell it to:

    summary → wait_for_review → for each note: get_context → set_in_progress → edit the Markdown
    file (as the intent asks; a question gets no edit) → record what was done

Recording what was done is one `address_annotation` call with `replacedText`, `message` and
`deleted` when the server offers those parameters (its tool list says so), else the reference's
three calls: `update_annotation_target` (text notes that now have new text), `address_annotation`
and `add_agent_reply`. The same script therefore measures the server before and after the lean
answers, unchanged.

What is counted is the text of every answer's content blocks (what the model reads), in characters
and in approximate tokens: characters / 4, the usual rule of thumb for English and JSON; no
tokenizer is loaded. The tool list (names, descriptions, input schemas) and the server's
instructions, paid once per session, are shown on their own line.

When the installed `annotate` has a `hook` command, the Stop hook that gates the end of the round
(`annotate hook stop`, a subprocess per call as the agent runs it) is timed too, against
`annotate --version` in the same run (the cost of starting Python and importing the package).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
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
from annotate.anchoring import build_selector  # noqa: E402
from annotate.compose import build_server  # noqa: E402

sys.path.append(str(HERE))

from _machine import describe  # noqa: E402

CHARS_PER_TOKEN = 4
ANNOTATE = Path(sys.executable).parent / "annotate"

PAGES = {
    "docs/index.md": """\
# mkdocs-annotate

Review notes on a rendered documentation site, handed to coding agents.

A docs author runs mkdocs serve, selects text on a page and types what should change. The note is
stored at once in a local SQLite database, never in the docs and never in git.

Their coding agent reads the notes through MCP tools or the annotate command, edits the source,
replies, and marks each one addressed.

![The review panel](img/panel.png)
""",
    "docs/guide/install.md": """\
# Install

mkdocs-annotate needs Python 3.10 or newer and a MkDocs site.

Run `pip install mkdocs-annotate` in a shell. It installs the plugin and the `annotate` command.

## Enable the plugin

Add the plugin to `mkdocs.yml`:

```yaml
plugins:
  - search
  - annotate
```

Keep `search` in the list: a plugins list replaces the default one.

This page was last reviewed in 2024 and may be out of date.

## Next steps

Run mkdocs serve and open the site in your browser.
""",
    "docs/guide/agents.md": """\
# Agents

The agent reads each note with its Markdown file and lines, edits the file, and replies.

Claude Code, Codex and OpenCode are connected by one command. Cursor reads the same server.

The agent marks a note addressed when it is done; the reviewer accepts or reopens it.

Older versions of this page described a polling loop that no longer exists.

## Waiting for a review

The agent can wait until the reviewer presses Send to agent, for up to an hour.
""",
}
TITLES = {"/": "mkdocs-annotate", "/guide/install/": "Install", "/guide/agents/": "Agents"}
SOURCES = {"/": "docs/index.md", "/guide/install/": "docs/guide/install.md"}
SOURCES["/guide/agents/"] = "docs/guide/agents.md"

# (page, quote, intent, suggestion, note); a question is a comment that asks and wants no edit.
TEXT_NOTES = [
    ("/guide/install/", "It installs the plugin and the annotate command.", "comment", None,
     "Say where the command ends up (the virtual environment's bin folder)."),
    ("/guide/install/", "Python 3.10 or newer", "comment", None,
     "Does it work on Python 3.13 too?"),
    ("/guide/install/", "This page was last reviewed in 2024 and may be out of date.", "delete",
     None, "Remove this line."),
    ("/guide/install/", "pip install mkdocs-annotate", "replace", "pipx install mkdocs-annotate",
     "Recommend pipx."),
    ("/guide/install/", "a plugins list replaces the default one.", "insert",
     " Other plugins go after it.", "Say where other plugins go."),
    ("/guide/agents/", "Cursor reads the same server.", "replace",
     "Cursor reads the same server from .cursor/mcp.json.", "Name the file."),
    ("/guide/agents/", "the reviewer accepts or reopens it.", "insert",
     " A reopened note comes back in the next review.", "Mention what Reopen does."),
    ("/guide/agents/", "Older versions of this page described a polling loop that no longer "
     "exists.", "delete", None, "Drop this history."),
    ("/", "stored at once in a local SQLite database", "comment", None,
     "Link the storage page here."),
    ("/", "Their coding agent reads the notes", "comment", None,
     "Which agents? Is Cursor one of them?"),
]  # fmt: skip
QUESTIONS = {"Does it work on Python 3.13 too?", "Which agents? Is Cursor one of them?"}
# What the agent writes for a comment that asks for a change: the quote becomes this.
COMMENT_EDITS = {
    "It installs the plugin and the annotate command.": "It installs the plugin and the annotate "
    "command into the virtual environment's bin folder.",
    "stored at once in a local SQLite database": "stored at once in a local SQLite database (see "
    "Storage)",
}
PAGE_NOTE = ("/guide/agents/", "This page needs a diagram of the loop.")
ELEMENT_NOTE = ("/", "This screenshot is out of date.")


def page_text(markdown: str) -> str:
    """Roughly what the overlay sees: the Markdown without its markup characters."""
    lines = [line for line in markdown.splitlines() if not line.startswith("```")]
    text = "\n".join(line.lstrip("#").strip() for line in lines)
    return text.replace("`", "").replace("![The review panel](img/panel.png)", "")


def make_project(root: Path) -> annotate.Store:
    (root / "mkdocs.yml").write_text("site_name: Round\ndocs_dir: docs\n")
    for path, text in PAGES.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    store = annotate.open(root)
    texts = {url: page_text(PAGES[path]) for url, path in SOURCES.items()}
    for url, quote, intent, suggestion, note in TEXT_NOTES:
        text = texts[url]
        start = text.index(quote)
        selector = build_selector(text, start, start + len(quote))
        data: dict[str, Any] = {
            "type": "text",
            "pageUrl": url,
            "pageTitle": TITLES[url],
            "note": note,
            "intent": intent,
            "selectedText": quote,
            "quote": {k: selector[k] for k in ("exact", "prefix", "suffix")},
            "position": {"start": start, "end": start + len(quote)},
        }
        if suggestion:
            data["suggestion"] = suggestion
        store.add_annotation(data)
    store.add_page_note(
        {"pageUrl": PAGE_NOTE[0], "pageTitle": TITLES[PAGE_NOTE[0]], "note": PAGE_NOTE[1]}
    )
    store.add_annotation(
        {
            "type": "element",
            "pageUrl": ELEMENT_NOTE[0],
            "pageTitle": TITLES[ELEMENT_NOTE[0]],
            "note": ELEMENT_NOTE[1],
            "elementSelector": {
                "cssSelector": "article img:nth-of-type(1)",
                "xpath": "/html/body/div/main/article/p[4]/img",
                "tagName": "img",
                "description": "Screenshot of the review panel",
                "attributes": {"src": "img/panel.png", "alt": "The review panel"},
                "outerHtmlPreview": '<img src="img/panel.png" alt="The review panel">',
            },
        }
    )
    store.create_review({"mode": "edit", "message": "Please work through these."})
    return store


def edit(root: Path, note: dict[str, Any]) -> tuple[str | None, str]:
    """Edit the Markdown as the note asks; return (the text now in the quote's place, reply)."""
    if note.get("type") != "text":
        if "elementSelector" in note:
            return None, "Replaced the screenshot with a current one."
        return None, "Added a diagram of the loop at the top of the page."
    quote, intent = note["selectedText"], note.get("intent") or "comment"
    if note["note"] in QUESTIONS:
        return None, "Yes: the answer, without changing the page."
    path = root / SOURCES[note["pageUrl"]]
    text = path.read_text()
    # The Markdown may hold the quote with markup (backticks) the page text does not show.
    marked = next(q for q in (quote, quote.replace("annotate", "`annotate`"),
                              quote.replace("pip install mkdocs-annotate",
                                            "`pip install mkdocs-annotate`")) if q in text)  # fmt: skip
    if intent == "delete":
        path.write_text(text.replace(marked + "\n\n", "", 1).replace(marked, "", 1))
        return None, "Deleted the sentence as asked."
    if intent == "replace":
        new = note["suggestion"]
    elif intent == "insert":
        new = quote + note["suggestion"]
    else:
        new = COMMENT_EDITS[quote]
    path.write_text(text.replace(marked, new, 1))
    return new, f"Changed it to: {new}"


class Round:
    """Calls tools and keeps, per tool, the characters of every answer."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.sizes: dict[str, list[int]] = defaultdict(list)

    async def call(self, name: str, **args: Any) -> str:
        result = await self.client.call_tool(name, args)
        text = "".join(block.text for block in result.content if block.type == "text")
        if result.is_error:
            raise SystemExit(f"{name}({args}) failed: {text}")
        self.sizes[name].append(len(text))
        return text


async def work(
    root: Path, fixture: dict[str, dict[str, Any]]
) -> tuple[Round, int, dict[str, bool]]:
    async with Client(build_server(root)) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        listing = sum(
            len(t.name) + len(t.description or "") + len(json.dumps(t.input_schema))
            for t in tools.values()
        )
        listing += len(client.instructions or "")
        # The tools/list result as a terminal agent's client receives it (issue #27's measure).
        dumped = [
            t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools.values()
        ]
        WIRE.append(len(json.dumps({"tools": dumped}, ensure_ascii=False)))
        params = set(tools["address_annotation"].input_schema.get("properties", {}))
        lean = {"message": "message" in params, "deleted": "deleted" in params}
        r = Round(client)
        await r.call("summary")
        answer = await r.call("wait_for_review", timeout_s=0)
        # Only the ids are taken from the answer (its shape may change); what each note asks
        # comes from the fixture, in the order the review lists them.
        order = sorted((i for i in fixture if i in answer), key=answer.index)
        if len(order) != len(fixture):
            raise SystemExit(f"the review listed {len(order)} of the {len(fixture)} notes")
        for id in order:
            note = fixture[id]
            await r.call("get_context", id=note["id"])
            await r.call("set_in_progress", id=note["id"])
            new, reply = edit(root, note)
            deleted = note.get("intent") == "delete"
            if lean["message"]:
                args: dict[str, Any] = {"id": note["id"], "message": reply}
                if new is not None:
                    args["replacedText"] = new
                if deleted and lean["deleted"]:
                    args["deleted"] = True
                await r.call("address_annotation", **args)
            else:
                if new is not None:
                    await r.call("update_annotation_target", id=note["id"], replacedText=new)
                await r.call("address_annotation", id=note["id"])
                await r.call("add_agent_reply", id=note["id"], message=reply)
    return r, listing, lean


WIRE: list[int] = []
# The same round as release 0.1 answered it, before the agent-loop work (issue #14): docs/mcp.md,
# "Tokens per review round" (81,023 when first measured, 81,493 after the merges).
BEFORE_ROUND = 81_493
TOOL_LIST_LIMIT = 10_000


def tokens(chars: float) -> int:
    return round(chars / CHARS_PER_TOKEN)


def hook_timing(runs: int) -> list[tuple[str, float]] | None:
    """Median ms of `annotate hook stop` (blocking, then nothing left) vs `annotate --version`.

    On a project of its own: a second `Store` on the round's file, in this process that still
    holds the MCP server's, would lose SQLite's locks (annotate/store.py, `_check_header`).
    """
    probe = subprocess.run([str(ANNOTATE), "hook", "--help"], capture_output=True, text=True)
    if probe.returncode != 0:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = annotate.open(root)
        # A review the agent took with 10 notes it has not started: unfinished work to gate.
        ids = [store.add_page_note({"pageUrl": "/", "note": f"Note {i}."}).id for i in range(10)]
        store.create_review({"mode": "edit"})
        store.claim_review()
        payload = json.dumps({"session_id": "bench", "cwd": str(root), "hook_event_name": "Stop",
                              "stop_hook_active": False})  # fmt: skip
        state = root / ".annotate" / "hook-stop.json"

        def median_ms(args: list[str], stdin: str = "", expect: str = "") -> float:
            times = []
            for _ in range(runs):
                state.unlink(missing_ok=True)  # each run a first block, never the bound
                t = time.perf_counter()
                out = subprocess.run([str(ANNOTATE), *args], input=stdin, capture_output=True,
                                     text=True)  # fmt: skip
                times.append((time.perf_counter() - t) * 1000)
                if expect not in out.stdout or out.returncode:
                    raise SystemExit(f"annotate {args}: {out.stdout!r} {out.stderr!r}")
            return statistics.median(times)

        rows = [("annotate --version (baseline)", median_ms(["--version"]))]
        blocking = median_ms(["hook", "stop"], payload, expect='"block"')
        rows.append(("annotate hook stop, blocking (10 notes left)", blocking))
        for id in ids:
            store.address_annotation(id)
        rows.append(("annotate hook stop, nothing left", median_ms(["hook", "stop"], payload)))
        store.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hook-runs", type=int, default=10, help="runs per hook timing")
    args = parser.parse_args()
    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = make_project(root)
        fixture = {a.id: a.to_dict() for a in store.list_annotations()}
        fixture.update({n.id: n.to_dict() for n in store.list_page_notes()})
        store.close()
        r, listing, lean = anyio.run(work, root, fixture)
        used = [k for k, v in lean.items() if v]
        print(
            f"\n12-note edit-mode review ({len(TEXT_NOTES)} text notes, 1 page note, 1 element "
            f"note); address_annotation takes {', '.join(used) or 'neither message nor deleted'}"
        )
        print("tokens ≈ characters / 4\n")
        head = f"{'tool':<26} {'calls':>5} {'chars':>8} {'≈tokens':>8} {'chars/call':>10}"
        print(head)
        print("-" * len(head))
        total_calls = total_chars = 0
        for name, sizes in sorted(r.sizes.items(), key=lambda kv: -sum(kv[1])):
            n, chars = len(sizes), sum(sizes)
            total_calls += n
            total_chars += chars
            print(f"{name:<26} {n:>5} {chars:>8} {tokens(chars):>8} {chars / n:>10.0f}")
        print("-" * len(head))
        print(f"{'round':<26} {total_calls:>5} {total_chars:>8} {tokens(total_chars):>8}")
        print(f"{'tool list + instructions':<26} {'once':>5} {listing:>8} {tokens(listing):>8}")
        wire = WIRE[0]
        print(
            f"\ntools/list as sent to a terminal agent: {wire:,} characters "
            f"(target ≤ {TOOL_LIST_LIMIT:,}: {'met' if wire <= TOOL_LIST_LIMIT else 'NOT met'})"
        )
        print(
            f"the round: {total_chars:,} characters, {total_chars / BEFORE_ROUND:.2f} of the "
            f"{BEFORE_ROUND:,} before the agent-loop work; with the tool list and instructions "
            f"{total_chars + listing:,}"
        )
        rows = hook_timing(args.hook_runs) if args.hook_runs > 0 else None
        if rows is None:
            print("\n`annotate hook` is not in this installation: no gate to time.")
        else:
            base = rows[0][1]
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"\nStop hook as a subprocess, median of {args.hook_runs} runs (load {load})")
            for label, ms in rows:
                print(f"{label:<46} {ms:>7.0f} ms  {ms / base:>5.2f}x")


if __name__ == "__main__":
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")
    main()
