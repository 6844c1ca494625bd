"""A project for the inline marker tests: this repository's docs and pages with every kind of block
(tests/fixtures/inline/), some with CRLF line ends, a byte order mark or no final newline, and
notes on many blocks of each page."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

import annotate
from annotate import sourcemap

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "inline"
EXTENSIONS: list[Any] = [
    "abbr",
    "admonition",
    "attr_list",
    "def_list",
    "footnotes",
    "md_in_html",
    "tables",
    {"toc": {"permalink": True}},
    "pymdownx.details",
    "pymdownx.superfences",
    {"pymdownx.tabbed": {"alternate_style": True}},
]
NOTES_PER_PAGE = 14
QUOTE = 30


def make_project(root: Path, *, own_docs: bool = True) -> Path:
    """`root/mkdocs.yml` (Material, the extensions these pages use) and `root/docs/`."""
    docs = root / "docs"
    if own_docs:
        shutil.copytree(ROOT / "docs", docs)
    fixtures = docs / "inline-fixtures"
    shutil.copytree(FIXTURES, fixtures)
    # The same pages with other line ends: CRLF with a byte order mark, CRLF without a final
    # newline, and a lone CR nowhere (MkDocs reads it as a line end too, but no editor writes it).
    crlf = (fixtures / "admonitions.md").read_text().replace("\n", "\r\n")
    (fixtures / "crlf-bom.md").write_bytes(("\ufeff" + crlf).encode())
    tabs = (fixtures / "tabs.md").read_text().replace("\n", "\r\n").rstrip("\r\n")
    (fixtures / "crlf-no-final-newline.md").write_bytes(tabs.encode())
    lists = (fixtures / "lists.md").read_text().rstrip("\n")
    (fixtures / "no-final-newline.md").write_text(lists)
    config = {
        "site_name": "inline",
        "theme": {"name": "material"},
        "markdown_extensions": EXTENSIONS,
    }
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config))
    return root


def page_url(docs: Path, file: Path) -> str:
    rel = file.relative_to(docs).as_posix()[: -len(".md")]
    if rel == "index":
        return "/"
    return "/" + rel.removesuffix("/index") + "/"


def add_notes(store: annotate.Store, docs: Path, per_page: int = NOTES_PER_PAGE) -> list[str]:
    """Notes on `per_page` passages spread over each page's text, and a page note per page; some
    in progress, addressed (with replies) or resolved. Returns the ids of the unresolved ones."""
    ids: list[str] = []
    for n, file in enumerate(sorted(docs.rglob("*.md"))):
        url = page_url(docs, file)
        text = sourcemap.project_markdown(file.read_bytes().decode("utf-8-sig")).text
        step = max(1, (len(text) - QUOTE) // per_page)
        for i, at in enumerate(range(0, max(1, len(text) - QUOTE), step)):
            quote = text[at : at + QUOTE]
            if not quote.strip():
                continue
            note = store.add_annotation(
                {
                    "type": "text",
                    "pageUrl": url,
                    "pageTitle": file.stem,
                    "note": f"Note {i} on {file.name}: -- no --> <b>end</b> here",
                    "intent": "replace" if i % 3 == 0 else "comment",
                    "suggestion": "A <new> -- wording" if i % 3 == 0 else None,
                    "selectedText": quote,
                    "quote": {
                        "exact": quote,
                        "prefix": text[max(0, at - 32) : at],
                        "suffix": text[at + QUOTE : at + QUOTE + 32],
                    },
                    "position": {"start": at, "end": at + QUOTE},
                }
            )
            if i % 4 == 1:
                store.set_in_progress(note.id)
            elif i % 4 == 2:
                store.add_reply(note.id, "Which one?\nSecond line -->")
                store.address_annotation(note.id, message="Done, see the new text.")
            elif i % 4 == 3 and i % 8 == 7:
                store.accept(note.id)
                continue
            ids.append(note.id)
        page = store.add_page_note({"pageUrl": url, "note": f"Page {n}: split it --> please"})
        ids.append(page.id)
    return ids


def snapshot(store: annotate.Store) -> dict[str, dict[str, Any]]:
    """Every unresolved note as `to_dict()`, by id."""
    annotations, notes = store.all_items(include_resolved=False)
    return {item.id: item.to_dict() for item in [*annotations, *notes]}


def file_bytes(docs: Path) -> dict[str, bytes]:
    return {p.relative_to(docs).as_posix(): p.read_bytes() for p in sorted(docs.rglob("*.md"))}
