"""What a verb holds the write lock for when it locates a note (issue #28, item 6).

    .venv/bin/python benchmarks/verb_markdown.py DOCS_DIR [--pages 6] [--repeat 7]

For the largest Markdown pages of DOCS_DIR (a docs folder of a site no one here wrote, e.g. MkDocs'
own `docs/`), a sentence from the middle of each page is the note's `replacedText`, located as
`address_annotation` locates it (`reconcile.locate_source`) in the page just edited (a line added:
a text never parsed, as after an agent's edit) and again in the same text (parsed: what the verb
finds once `reconcile.prepare_file` ran before its write lock). The first is what a verb held the
lock for when it parsed inside it; the second is what it holds it for now. Medians in ms, and their
ratio; on PostgreSQL that lock is the one advisory lock every server's writes share.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import describe

from annotate import reconcile

SKIP = ("#", "`", "|", " ", "\t", "-", "*", "!", "<", ":", ">", "=", "[")


def middle_sentence(text: str) -> str | None:
    """Eight words opening a prose paragraph from the second half of the page."""
    for para in text[len(text) // 2 :].split("\n\n")[1:]:
        words = para.split()
        if len(para) > 80 and not para.startswith(SKIP) and len(words) >= 8:
            return " ".join(words[:8])
    return None


def row_for(quote: str) -> dict[str, Any]:
    """The columns `locate_source` reads of a note whose replacedText is `quote`."""
    return {
        "type": "text",
        "quote_exact": quote,
        "quote_prefix": "",
        "quote_suffix": "",
        "replaced_text": quote,
        "selected_text": quote,
        "position_start": None,
        "position_end": None,
        "source_line_start": None,
        "source_path": None,
        "in_code": None,
        "occurrence": None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("docs", type=Path, help="a docs folder of Markdown pages")
    parser.add_argument("--pages", type=int, default=6, help="the largest pages measured")
    parser.add_argument("--repeat", type=int, default=7, help="edits per page")
    args = parser.parse_args()
    print(describe())
    print()
    print("| page | kB | edited, parsed in the lock (ms) | prepared before it (ms) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    pages = sorted(args.docs.rglob("*.md"), key=lambda p: p.stat().st_size, reverse=True)
    shown = 0
    for path in pages:
        if shown == args.pages:
            break
        text = path.read_text(encoding="utf-8")
        quote = middle_sentence(text)
        if quote is None:
            continue
        row = row_for(quote)
        cold: list[float] = []
        warm: list[float] = []
        for n in range(args.repeat):
            edited = text + f"\nA line an agent added, edit {n}.\n"
            start = time.perf_counter()
            found, _ = reconcile.locate_source(edited, row)
            cold.append(time.perf_counter() - start)
            start = time.perf_counter()
            reconcile.locate_source(edited, row)
            warm.append(time.perf_counter() - start)
            if found is None:
                break  # not a sentence the source map finds (markup inside): another page
        if len(cold) < args.repeat:
            continue
        shown += 1
        c, w = statistics.median(cold) * 1000, statistics.median(warm) * 1000
        name = path.relative_to(args.docs).as_posix()
        print(f"| {name} | {len(text) / 1024:.1f} | {c:.1f} | {w:.2f} | {c / w:.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
